import { create } from "@bufbuild/protobuf";
import { and, asc, eq, inArray } from "drizzle-orm";
import { RepoSchema, ReposService, type Repo } from "../../../gen/platform/registry/v2beta1/repos_pb.js";
import { schema, type Executor } from "../../db/index.js";
import { failedPrecondition, invalidArgument } from "../../errors/index.js";
import { defineResource, resourceService } from "../resource.js";
import { toTimestamp } from "../timestamps.js";
import { checkDescription } from "../validation.js";
import { checkRepoName } from "./oci-names.js";

const MAX_ALIASES = 50;
const { repos, tags } = schema;

/** Fills active_tags (the non-deprecated tag names) for a whole page in one query. */
async function withActiveTags(db: Executor, page: Repo[]): Promise<Repo[]> {
  if (!page.length) return page;
  const rows = await db
    .select({ repo: tags.parentUid, name: tags.name })
    .from(tags)
    .where(
      and(
        inArray(
          tags.parentUid,
          page.map((r) => r.uid),
        ),
        eq(tags.deprecated, false),
      ),
    )
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

function repoNotEmpty(uid: string) {
  return failedPrecondition("RESOURCE_NOT_EMPTY", `repo ${uid} still holds tags; delete them first`, uid);
}

export const repoResource = defineResource({
  kind: "repo",
  table: repos,
  schema: RepoSchema,
  groupContent: "repos",
  // active_tags comes from the tags table.
  decorate: withActiveTags,
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
    checkDescription(r.description);
    if (r.aliases.length > MAX_ALIASES) throw invalidArgument("aliases", `at most ${MAX_ALIASES} aliases`);
    r.aliases.forEach((alias, i) => {
      checkRepoName(`aliases[${i}]`, alias);
      if (r.aliases.indexOf(alias) !== i) throw invalidArgument(`aliases[${i}]`, `repeats "${alias}"`);
    });
  },
  toColumns: (r) => ({ name: r.name, description: r.description, aliases: r.aliases }),
  duplicate: (r) => `a repo named "${r.name}" already exists in this group`,
  missingReference: "group",
  // The row lock orders this delete after any tag create that already
  // references the repo; the tags' foreign key refuses anything later.
  beforeDelete: async (tx, row) => {
    const [tag] = await tx.select({ uid: tags.uid }).from(tags).where(eq(tags.parentUid, row.uid)).limit(1);
    if (tag) throw repoNotEmpty(row.uid);
  },
  stillReferenced: repoNotEmpty,
  example: ({ unique }) => ({ name: `repo-${unique}` }),
});

/** Every method of the service is the shared machinery's. */
export const reposService = resourceService(ReposService, repoResource);
