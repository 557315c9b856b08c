import { create } from "@bufbuild/protobuf";
import { eq, gte, type SQL } from "drizzle-orm";
import { TagSchema, TagsService, type ListTagsRequest, type Tag } from "../../../gen/platform/registry/v2beta1/tags_pb.js";
import { parentOf, schema } from "../../db/index.js";
import type { ExtraFilters } from "../../list/index.js";
import { defineResource, resourceService } from "../resource.js";
import { millisAtOrAfter, toTimestamp } from "../timestamps.js";
import { checkDigest, checkTagName } from "./oci-names.js";

const { tags } = schema;

export const tagResource = defineResource({
  kind: "tag",
  table: tags,
  schema: TagSchema,
  listFilters: tagFilters,
  // A tag's parent is its repo: its events belong to the repo's group.
  eventGroup: (row) => parentOf(row.parentUid),
  toMessage: (row) =>
    create(TagSchema, {
      uid: row.uid,
      name: row.name,
      digest: row.digest,
      deprecated: row.deprecated,
      createTime: toTimestamp(row.createTime),
      updateTime: toTimestamp(row.updateTime),
    }),
  validate: (t: Tag) => {
    checkTagName("name", t.name);
    checkDigest("digest", t.digest);
  },
  toColumns: (t) => ({ name: t.name, digest: t.digest, deprecated: t.deprecated }),
  duplicate: (t) => `a tag named "${t.name}" already exists in this repo`,
  missingReference: "repo",
  example: ({ unique }) => ({ name: `t${unique}`, digest: `sha256:${"c".repeat(64)}` }),
});

/** The digest and updated_since filters. */
function tagFilters(req: ListTagsRequest): ExtraFilters {
  const where: SQL[] = [];
  if (req.digest) {
    checkDigest("digest", req.digest);
    where.push(eq(tags.digest, req.digest));
  }
  const since = req.updatedSince ? millisAtOrAfter(req.updatedSince) : undefined;
  if (since) where.push(gte(tags.updateTime, since));
  return { where, key: { digest: req.digest, updatedSince: since?.toISOString() ?? null } };
}

/** Every method of the service is the shared machinery's. */
export const tagsService = resourceService(TagsService, tagResource);
