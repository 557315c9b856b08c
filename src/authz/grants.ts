import { eq, sql } from "drizzle-orm";
import { groupAndAncestors, schema, type Database, type Executor } from "../db/index.js";
import type { ListVisibility } from "../list/index.js";

/** One role binding of the caller: its group (null at the root) and what it grants. */
export interface Grant {
  groupUid: string | null;
  capabilities: ReadonlySet<string>;
}

function covers(group: string | null, path: string): boolean {
  return group === null || path === group || path.startsWith(`${group}/`);
}

/**
 * What a caller holds: the union of its role bindings' capabilities, each
 * at its group and everything below. Loaded with one indexed query per
 * request, so a new or deleted binding counts on the very next request on
 * every replica.
 */
export class Grants {
  constructor(
    readonly grants: readonly Grant[],
    /**
     * Who holds them: a deleted identity's tokens stop working (docs/security.md, "Revocation");
     * `issuer` is its claim issuer (for a person, the provider that signed them in).
     */
    readonly identity: { exists: boolean; rootLevel: boolean; issuer: string } = { exists: true, rootLevel: false, issuer: "" },
  ) {}

  /** Loads `identityUid`'s grants (inside a transaction, or anywhere): one query for the bindings, one for the identity. */
  static async load(db: Executor, identityUid: string): Promise<Grants> {
    const q = grantQueries(db);
    const [rows, identity] = await Promise.all([q.bindings.execute({ uid: identityUid }), q.identity.execute({ uid: identityUid })]);
    return Grants.from(rows, identity[0]);
  }

  /**
   * A loader for the grants cache: the same queries, prepared once (they
   * run after every write, when the cache has just been cleared).
   */
  static loader(db: Database): (identityUid: string) => Promise<Grants> {
    const bindings = grantQueries(db).bindings.prepare("grants_bindings");
    const identity = grantQueries(db).identity.prepare("grants_identity");
    return async (uid) => {
      const [rows, found] = await Promise.all([bindings.execute({ uid }), identity.execute({ uid })]);
      return Grants.from(rows, found[0]);
    };
  }

  private static from(
    rows: { groupUid: string | null; capabilities: string[] }[],
    identity: { parentUid: string | null; claimIssuer: string } | undefined,
  ): Grants {
    return new Grants(
      rows.map((row) => ({ groupUid: row.groupUid, capabilities: new Set(row.capabilities) })),
      // Root-level identities are the bootstrap identity and people who signed in with a browser.
      { exists: identity !== undefined, rootLevel: identity?.parentUid === null, issuer: identity?.claimIssuer ?? "" },
    );
  }

  /** The capabilities of `capabilities` not held at `path`. */
  missingAt(capabilities: Iterable<string>, path: string): string[] {
    return [...capabilities].filter((c) => !this.holdsAt(c, path));
  }

  /** Held at `path` through a binding at it or at a group above it. */
  holdsAt(capability: string, path: string): boolean {
    return this.grants.some((g) => g.capabilities.has(capability) && covers(g.groupUid, path));
  }

  holdsAnywhere(capability: string): boolean {
    return this.grants.some((g) => g.capabilities.has(capability));
  }

  holdsAtRoot(capability: string): boolean {
    return this.grants.some((g) => g.groupUid === null && g.capabilities.has(capability));
  }

  // Grants are immutable and cached per caller (grants-cache.ts): each capability's visibility
  // is worked out once, and the List engine keys its prepared filter on the very object.
  private readonly visibilities = new Map<string, ListVisibility>();

  /** The subtrees a List of resources needing `capability` may return (the same object on every call). */
  visibility(capability: string): ListVisibility {
    let v = this.visibilities.get(capability);
    if (v === undefined) {
      v = this.workOutVisibility(capability);
      this.visibilities.set(capability, v);
    }
    return v;
  }

  private workOutVisibility(capability: string): ListVisibility {
    const roots: string[] = [];
    for (const g of this.grants) {
      if (!g.capabilities.has(capability)) continue;
      if (g.groupUid === null) return { all: true };
      roots.push(g.groupUid);
    }
    // A root already covered by another is redundant: one set lookup per group above each
    // root (at most MAX_GROUP_DEPTH), so thousands of bindings cost linear work.
    const unique = new Set(roots);
    const kept = [...unique].filter((r) => !groupAndAncestors(r).some((above) => above !== r && unique.has(above)));
    return { all: false, roots: kept.sort() };
  }
}

/** The caller's bindings (group ones and root ones) with their roles' capabilities, and the caller itself. */
function grantQueries(db: Executor) {
  const { roleBindings: b, rootRoleBindings: root, roles: r, identities: i } = schema;
  const uid = sql.placeholder("uid");
  return {
    bindings: db
      .select({ groupUid: sql<string | null>`${b.parentUid}`, capabilities: r.capabilities })
      .from(b)
      .innerJoin(r, eq(r.uid, b.roleUid))
      .where(eq(b.identityUid, uid))
      .unionAll(
        db
          .select({ groupUid: sql<string | null>`null`, capabilities: r.capabilities })
          .from(root)
          .innerJoin(r, eq(r.uid, root.roleUid))
          .where(eq(root.identityUid, uid)),
      ),
    identity: db.select({ parentUid: i.parentUid, claimIssuer: i.claimIssuer }).from(i).where(eq(i.uid, uid)),
  };
}

/** Where a role lives: custom roles have single-segment uids, so their group path is stored; built-ins are global. */
export async function roleScope(db: Executor, roleUid: string): Promise<{ path: string; global: boolean } | undefined> {
  const [row] = await db
    .select({ path: schema.roles.path, parentUid: schema.roles.parentUid })
    .from(schema.roles)
    .where(eq(schema.roles.uid, roleUid));
  return row ? { path: row.path, global: row.parentUid === null } : undefined;
}
