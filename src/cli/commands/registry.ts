import { ReposService } from "../../../gen/platform/registry/v2beta1/repos_pb.js";
import { TagsService } from "../../../gen/platform/registry/v2beta1/tags_pb.js";
import { col } from "../output.js";
import type { ResourceOverride } from "./derived-spec.js";

// `platformctl registry repos|tags …`: the commands come from the protos
// (derived-spec.ts); here only what the protos cannot say.

const UID = col("UID", "uid", "text", true);
const NAME = col("NAME", "name");

export const REGISTRY_DESCRIPTION = "the registry catalog: repos and tags";

export const REGISTRY_OVERRIDES: Record<string, ResourceOverride> = {
  [ReposService.typeName]: {
    columns: [UID, NAME, col("ALIASES", "aliases"), col("ACTIVE TAGS", "activeTags"), col("CREATED", "createTime", "time")],
    parent: { flag: "group", description: "the group that holds it" },
    fields: {
      description: { description: "free text", arg: "<text>" },
      aliases: { description: "another name of the repo", arg: "<name>" },
    },
  },
  [TagsService.typeName]: {
    columns: [UID, NAME, col("DIGEST", "digest", "text", true), col("DEPRECATED", "deprecated"), col("UPDATED", "updateTime", "time")],
    filters: {
      digest: { description: "exact digest", arg: "<digest>" },
      updated_since: { description: "changed at or after this time (RFC 3339)" },
    },
    parent: { flag: "repo", description: "the repo that holds it" },
    fields: {
      digest: { description: "sha256:<64 hex>", arg: "<digest>" },
      deprecated: { description: "take it out of the repo's active tags" },
    },
  },
};
