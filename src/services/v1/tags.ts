import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { TagSchema, TagsService, type Tag } from "../../../gen/platform/registry/v1/tags_pb.js";
import { TagsService as V2TagsService, type Tag as V2Tag } from "../../../gen/platform/registry/v2beta1/tags_pb.js";
import type { ServiceContext } from "../context.js";
import { tagsService } from "../registry/tags.js";
import { inProcess } from "./in-process.js";
import { listAll } from "./list-all.js";
import { REPLACE_ALL, v1Record } from "./shape.js";

const toV1 = (t: V2Tag): Tag => create(TagSchema, { ...v1Record(t), name: t.name, digest: t.digest, deprecated: t.deprecated });

const toV2 = (t = create(TagSchema)) => ({ uid: t.id, name: t.name, digest: t.digest, deprecated: t.deprecated });

export function v1TagsService(ctx: ServiceContext): ServiceImpl<typeof TagsService> {
  const v2 = inProcess(V2TagsService, tagsService(ctx));
  return {
    listTags: (req, context) => listAll(req, (page) => v2.listTags({ ...page, name: req.name }, context), (res) => res.tags.map(toV1)),
    createTag: async (req, context) => toV1(await v2.createTag({ parent: req.parent, tag: toV2(req.tag) }, context)),
    updateTag: async (req, context) => toV1(await v2.updateTag({ tag: toV2(req.tag), updateMask: REPLACE_ALL }, context)),
    deleteTag: (req, context) => v2.deleteTag({ uid: req.id }, context),
  };
}
