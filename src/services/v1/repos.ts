import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { RepoSchema, ReposService, type Repo } from "../../../gen/platform/registry/v1/repos_pb.js";
import { ReposService as V2ReposService, type Repo as V2Repo } from "../../../gen/platform/registry/v2beta1/repos_pb.js";
import type { ServiceContext } from "../context.js";
import { reposService } from "../registry/repos.js";
import { inProcess } from "./in-process.js";
import { listAll } from "./list-all.js";
import { REPLACE_ALL, v1Record } from "./shape.js";

const toV1 = (r: V2Repo): Repo =>
  create(RepoSchema, { ...v1Record(r), name: r.name, description: r.description, aliases: r.aliases, activeTags: r.activeTags });

const toV2 = (r = create(RepoSchema)) => ({ uid: r.id, name: r.name, description: r.description, aliases: r.aliases });

export function v1ReposService(ctx: ServiceContext): ServiceImpl<typeof ReposService> {
  const v2 = inProcess(V2ReposService, reposService(ctx));
  return {
    listRepos: (req, context) => listAll(req, (page) => v2.listRepos({ ...page, name: req.name }, context), (res) => res.repos.map(toV1)),
    createRepo: async (req, context) => toV1(await v2.createRepo({ parent: req.parent, repo: toV2(req.repo) }, context)),
    updateRepo: async (req, context) => toV1(await v2.updateRepo({ repo: toV2(req.repo), updateMask: REPLACE_ALL }, context)),
    deleteRepo: (req, context) => v2.deleteRepo({ uid: req.id }, context),
  };
}
