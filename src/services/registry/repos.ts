import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { and, asc, eq, inArray } from "drizzle-orm";
import { ListReposResponseSchema, RepoSchema, ReposService, type Repo } from "../../../gen/platform/registry/v2beta1/repos_pb.js";
import { isForeignKeyViolation, newChildUid, schema, type Executor } from "../../db/index.js";
import { failedPrecondition, invalidArgument } from "../../errors/index.js";
import type { ListSource } from "../../list/index.js";
import type { ServiceContext } from "../context.js";
import { ResourceStore, requireField, type ResourceMapping } from "../resource-store.js";
import { toTimestamp } from "../timestamps.js";
import { checkRepoName } from "./oci-names.js";

const MAX_DESCRIPTION_LENGTH = 4096;
const MAX_ALIASES = 50;
const { repos, tags } = schema;

export const reposSource: ListSource<typeof repos> = {
  table: repos,
  uid: repos.uid,
  parentUid: repos.parentUid,
  isGroup: false,
  name: repos.name,
  sortable: { name: repos.name, create_time: repos.createTime, update_time: repos.updateTime },
};

export const repoMapping: ResourceMapping<typeof repos, typeof RepoSchema> = {
  kind: "repo",
  table: repos,
  uid: repos.uid,
  schema: RepoSchema,
  // active_tags comes from the tags table: see withActiveTags.
  toMessage: (row) =>
    create(RepoSchema, {
      uid: row.uid,
      name: row.name,
      description: row.description,
      aliases: row.aliases,
      createTime: toTimestamp(row.createTime),
      updateTime: toTimestamp(row.updateTime),
    }),
  validate: (r: Repo) => {
    checkRepoName("name", r.name);
    if (r.description.length > MAX_DESCRIPTION_LENGTH) {
      throw invalidArgument("description", `must be at most ${MAX_DESCRIPTION_LENGTH} characters`);
    }
    if (r.aliases.length > MAX_ALIASES) throw invalidArgument("aliases", `at most ${MAX_ALIASES} aliases`);
    r.aliases.forEach((alias, i) => {
      checkRepoName(`aliases[${i}]`, alias);
      if (r.aliases.indexOf(alias) !== i) throw invalidArgument(`aliases[${i}]`, `repeats "${alias}"`);
    });
  },
  toColumns: (r) => ({ name: r.name, description: r.description, aliases: r.aliases }),
  duplicate: (r) => `a repo named "${r.name}" already exists in this group`,
  missingReference: "group",
};

/** Fills active_tags (the non-deprecated tag names) for a whole page in one query. */
async function withActiveTags(db: Executor, page: Repo[]): Promise<Repo[]> {
  if (!page.length) return page;
  const rows = await db
    .select({ repo: tags.parentUid, name: tags.name })
    .from(tags)
    .where(and(inArray(tags.parentUid, page.map((r) => r.uid)), eq(tags.deprecated, false)))
    .orderBy(asc(tags.parentUid), asc(tags.name));
  const byRepo = new Map<string, string[]>();
  for (const r of rows) {
    const names = byRepo.get(r.repo);
    if (names) names.push(r.name);
    else byRepo.set(r.repo, [r.name]);
  }
  for (const repo of page) repo.activeTags = byRepo.get(repo.uid) ?? [];
  return page;
}

export function reposService(ctx: ServiceContext): ServiceImpl<typeof ReposService> {
  const store = new ResourceStore(ctx.db, ctx.clock, repoMapping);
  const one = async (repo: Repo) => (await withActiveTags(ctx.db, [repo]))[0]!;
  return {
    async listRepos(req, context) {
      const page = await ctx.list.list(ctx.db, reposSource, req, context);
      return create(ListReposResponseSchema, { ...page, repos: await withActiveTags(ctx.db, page.rows.map(repoMapping.toMessage)) });
    },

    getRepo: async (req) => one(await store.get(req.uid)),

    createRepo: (req) => {
      const parent = requireField(req.parent, "parent");
      return store.create(req.repo ?? create(RepoSchema), { uid: newChildUid(parent), parentUid: parent });
    },

    updateRepo: async (req) =>
      one(await store.update(requireField(req.repo?.uid ?? "", "repo.uid"), req.repo ?? create(RepoSchema), req.updateMask)),

    async deleteRepo(req) {
      const notEmpty = () => failedPrecondition("RESOURCE_NOT_EMPTY", `repo ${req.uid} still holds tags; delete them first`, req.uid);
      try {
        // The row lock orders this delete after any tag create that already
        // references the repo; the tags' foreign key refuses anything later.
        await store.delete(req.uid, async (tx) => {
          const [tag] = await tx.select({ uid: tags.uid }).from(tags).where(eq(tags.parentUid, req.uid)).limit(1);
          if (tag) throw notEmpty();
        });
      } catch (e) {
        throw isForeignKeyViolation(e) ? notEmpty() : e;
      }
      return {};
    },
  };
}
