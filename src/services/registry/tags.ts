import { create } from "@bufbuild/protobuf";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { eq, gte, type SQL } from "drizzle-orm";
import { ListTagsResponseSchema, TagSchema, TagsService, type ListTagsRequest, type Tag } from "../../../gen/platform/registry/v2beta1/tags_pb.js";
import { newChildUid, schema } from "../../db/index.js";
import type { ExtraFilters, ListSource } from "../../list/index.js";
import type { ServiceContext } from "../context.js";
import { ResourceStore, requireField, type ResourceMapping } from "../resource-store.js";
import { toTimestamp } from "../timestamps.js";
import { checkDigest, checkTagName } from "./oci-names.js";

const { tags } = schema;

export const tagsSource: ListSource<typeof tags> = {
  table: tags,
  uid: tags.uid,
  parentUid: tags.parentUid,
  isGroup: false,
  name: tags.name,
  sortable: { name: tags.name, create_time: tags.createTime, update_time: tags.updateTime },
};

export const tagMapping: ResourceMapping<typeof tags, typeof TagSchema> = {
  kind: "tag",
  table: tags,
  uid: tags.uid,
  schema: TagSchema,
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
};

// Rows keep milliseconds: round a finer bound up so that `>=` stays exact.
function millisAtOrAfter(t: Timestamp): Date {
  return new Date(Number(t.seconds) * 1000 + Math.ceil(t.nanos / 1e6));
}

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

export function tagsService(ctx: ServiceContext): ServiceImpl<typeof TagsService> {
  const store = new ResourceStore(ctx.db, ctx.clock, tagMapping);
  return {
    async listTags(req, context) {
      const page = await ctx.list.list(ctx.db, tagsSource, req, context, tagFilters(req));
      return create(ListTagsResponseSchema, { ...page, tags: page.rows.map(tagMapping.toMessage) });
    },

    getTag: (req) => store.get(req.uid),

    createTag: (req) => {
      const parent = requireField(req.parent, "parent");
      return store.create(req.tag ?? create(TagSchema), { uid: newChildUid(parent), parentUid: parent });
    },

    updateTag: (req) => store.update(requireField(req.tag?.uid ?? "", "tag.uid"), req.tag ?? create(TagSchema), req.updateMask),

    async deleteTag(req) {
      await store.delete(req.uid);
      return {};
    },
  };
}
