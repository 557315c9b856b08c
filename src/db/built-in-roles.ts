import { and, eq, isNull, notExists, notInArray, sql } from "drizzle-orm";
import type { PgColumn, PgDatabase, PgQueryResultHKT, PgTable } from "drizzle-orm/pg-core";
import { BUILT_IN_ROLES, type BuiltInRole } from "../capabilities/index.js";
import { groupInvites, identityProviders, roleBindings, rootRoleBindings, roles } from "./schema.js";

export interface BuiltInRolesSync {
  /** Built-in roles inserted or corrected (their rows differed from the catalogue). */
  written: string[];
  /** Built-in rows the catalogue no longer has, deleted because nothing referenced them. */
  removed: string[];
  /** Built-in rows the catalogue no longer has, kept because something still references them. */
  kept: string[];
}

/**
 * Makes the built-in rows of `roles` (parent_uid IS NULL) equal the catalogue, in one transaction
 * (docs/design.md, "Built-in roles"). A row already equal is not written, so a restart with an
 * unchanged catalogue changes nothing. A built-in row the catalogue dropped is deleted only when
 * no binding, invite or IdP refers to it; otherwise it is kept and reported in `kept`.
 */
export async function syncBuiltInRoles<S extends Record<string, unknown>>(
  db: PgDatabase<PgQueryResultHKT, S>,
  catalogue: readonly BuiltInRole[] = BUILT_IN_ROLES,
): Promise<BuiltInRolesSync> {
  const uids = catalogue.map((r) => r.uid);
  return db.transaction(async (tx) => {
    const written = catalogue.length
      ? await tx
          .insert(roles)
          .values(
            catalogue.map((r) => ({
              uid: r.uid,
              parentUid: null,
              path: r.uid,
              name: r.name,
              description: r.description,
              capabilities: r.capabilities,
              createTime: sql`now()`,
              updateTime: sql`now()`,
            })),
          )
          .onConflictDoUpdate({
            target: roles.uid,
            set: {
              parentUid: sql`excluded.parent_uid`,
              path: sql`excluded.path`,
              name: sql`excluded.name`,
              description: sql`excluded.description`,
              capabilities: sql`excluded.capabilities`,
              updateTime: sql`now()`,
            },
            // Only rows that differ: an unchanged row keeps its update_time (and is not rewritten).
            setWhere: sql`(${roles.parentUid}, ${roles.path}, ${roles.name}, ${roles.description}, ${roles.capabilities})
              IS DISTINCT FROM (excluded.parent_uid, excluded.path, excluded.name, excluded.description, excluded.capabilities)`,
          })
          .returning({ uid: roles.uid })
      : [];

    // Built-in rows the catalogue no longer has. The foreign keys to roles are NO ACTION, so a row
    // still referenced is left alone (deleting it would fail the start) and reported instead.
    const dropped = and(isNull(roles.parentUid), uids.length ? notInArray(roles.uid, uids) : undefined);
    const unreferencedBy = (table: PgTable, column: PgColumn) =>
      notExists(tx.select({ one: sql`1` }).from(table).where(eq(column, roles.uid)));
    const removed = await tx
      .delete(roles)
      .where(
        and(
          dropped,
          unreferencedBy(roleBindings, roleBindings.roleUid),
          unreferencedBy(rootRoleBindings, rootRoleBindings.roleUid),
          unreferencedBy(groupInvites, groupInvites.roleUid),
          unreferencedBy(identityProviders, identityProviders.defaultRoleUid),
        ),
      )
      .returning({ uid: roles.uid });
    const kept = await tx.select({ uid: roles.uid }).from(roles).where(dropped);
    return { written: written.map((r) => r.uid), removed: removed.map((r) => r.uid), kept: kept.map((r) => r.uid) };
  });
}
