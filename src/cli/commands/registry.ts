import type { Command } from "commander";
import type { CliIo } from "../io.js";
import { col } from "../output.js";
import { registerResource, type FieldFlag, type ResourceSpec } from "./resource.js";

const UID = col("UID", "uid", "text", true);
const NAME = col("NAME", "name");

const repoFields: FieldFlag[] = [
  { flag: "description", path: "description", description: "free text", arg: "<text>" },
  { flag: "alias", path: "aliases", kind: "list", description: "another name of the repo", arg: "<name>" },
];

const repos: ResourceSpec = {
  command: "repos",
  kind: "repo",
  path: "/registry/v2beta1/repos",
  listKey: "repos",
  columns: [UID, NAME, col("ALIASES", "aliases"), col("ACTIVE TAGS", "activeTags"), col("CREATED", "createTime", "time")],
  list: { scopes: "all", name: true },
  create: { parent: { flag: "group", description: "the group that holds it", required: true }, name: "required" },
  fields: repoFields,
  update: true,
  delete: true,
};


const tags: ResourceSpec = {
  command: "tags",
  kind: "tag",
  path: "/registry/v2beta1/tags",
  listKey: "tags",
  columns: [UID, NAME, col("DIGEST", "digest", "text", true), col("DEPRECATED", "deprecated"), col("UPDATED", "updateTime", "time")],
  list: {
    scopes: "all",
    name: true,
    filters: [
      { flag: "digest", param: "digest", description: "exact digest", arg: "<digest>" },
      { flag: "updated-since", param: "updated_since", description: "changed at or after this time (RFC 3339)", arg: "<time>" },
    ],
  },
  create: { parent: { flag: "repo", description: "the repo that holds it", required: true }, name: "required" },
  fields: [
    { flag: "digest", path: "digest", description: "sha256:<64 hex>", arg: "<digest>", required: true },
    { flag: "deprecated", path: "deprecated", kind: "bool", description: "take it out of the repo's active tags" },
  ],
  update: true,
  delete: true,
};

/** `platformctl registry repos|tags …` */
export function registerRegistry(program: Command, io: CliIo): void {
  const registry = program.command("registry").description("the registry catalog: repos and tags");
  registerResource(registry, repos, io);
  registerResource(registry, tags, io);
}
