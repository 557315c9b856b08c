import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GRANTS_CHANGED_CHANNEL } from "../../src/authz/index.js";
import { restClient, type RestResponse, type RestClient } from "../support/clients.js";
import { bind, createGroup, createIdentity, createRole, ok, uidOf } from "../support/rest-iam.js";
import { startTestServer, type TestServer } from "../support/server.js";

// The per-replica cache of callers' grants (docs/design.md, "Tokens and access"): cleared by the
// database's NOTIFY when bindings, root bindings or roles change, and on PostgreSQL also by the
// replica after each write it serves, since its NOTIFY may reach the replica after the response.
// A server of its own, not the worker's shared one: the tests count all of the server's lookups, and
// on a shared server other files' activity counts too (their subscriptions' deliveries, for one,
// look up their creators' grants).

let server: TestServer;
let admin: RestClient;
let counter = 0;
beforeAll(async () => {
  server = await startTestServer();
  admin = restClient(server.url, server.token);
});
afterAll(async () => {
  await server?.stop();
});

/** An organization with a caller bound to a custom role holding `capabilities` there. */
async function callerWith(capabilities: string[]) {
  const org = uidOf(await createGroup(admin, `grants-cache-${++counter}`));
  const role = uidOf(await createRole(admin, org, { name: "custom", capabilities }));
  const identity = uidOf(await createIdentity(admin, org, { name: "caller" }));
  const binding = uidOf(await ok(bind(admin, org, identity, role)));
  const token = (await server.app.tokens.mint(identity, server.app.urls.baseUrl)).token;
  return { org, role, identity, binding, call: restClient(server.url, token) };
}

/** The grants cache's lookups so far, from /metrics. */
async function lookups(): Promise<{ hit: number; miss: number }> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const count = (result: string) =>
    Number(new RegExp(`^platform_grants_cache_lookups_total\\{result="${result}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
  return { hit: count("hit"), miss: count("miss") };
}

/**
 * The lookups once the server's own work after a write has settled (two readings 100 ms apart
 * agree, within 3 s): delivering a new subscription's events looks its creator's grants up in the
 * background, and a lookup of that kind landing inside a measured read counted as the read's.
 */
async function settledLookups(): Promise<{ hit: number; miss: number }> {
  let last = await lookups();
  for (let i = 0; i < 30; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = await lookups();
    if (now.hit === last.hit && now.miss === last.miss) return now;
    last = now;
  }
  return last;
}

const status = async (res: Promise<RestResponse>) => (await res).status;

describe("grants cache", () => {
  it("a change of a binding or of a role's capabilities counts at the caller's next request", async () => {
    const { org, role, binding, identity, call } = await callerWith(["groups.list"]);
    expect(await status(call("GET", `/iam/v2beta1/groups/${org}`))).toBe(200);
    expect(await status(call("POST", `/registry/v2beta1/repos/${org}`, { name: "denied" }))).toBe(403);

    await ok(admin("PATCH", `/iam/v2beta1/roles/${role}`, { capabilities: ["groups.list", "repo.create"] }));
    expect(await status(call("POST", `/registry/v2beta1/repos/${org}`, { name: "allowed" }))).toBe(200);

    await ok(admin("PATCH", `/iam/v2beta1/roles/${role}`, { capabilities: ["repo.create"] }));
    expect(await status(call("GET", `/iam/v2beta1/groups/${org}`))).toBe(403);

    await ok(admin("DELETE", `/iam/v2beta1/roleBindings/${binding}`));
    expect(await status(call("POST", `/registry/v2beta1/repos/${org}`, { name: "unbound" }))).toBe(403);

    await ok(bind(admin, org, identity, "viewer"));
    expect(await status(call("GET", `/iam/v2beta1/groups/${org}`))).toBe(200);
  });

  it("keeps a caller's grants across writes that grant nothing (on PostgreSQL the writing replica clears its own after an IAM write)", async () => {
    const { org, call } = await callerWith([
      "groups.list",
      "groups.create",
      "roles.create",
      "repo.create",
      "subscriptions.create",
      "events.list",
    ]);
    const read = () => ok(call("GET", `/iam/v2beta1/groups/${org}`));
    await read();
    // Whether the writing replica clears its cache: on PostgreSQL after an IAM write (its NOTIFY may come
    // after the response) unless it wrote no grant table, never after a write elsewhere, which cannot
    // change grants; on PGlite never.
    const writes: [string, () => Promise<unknown>, boolean][] = [
      // A child group touches no grant table: its handler says so, and the cache stays.
      ["a group", () => createGroup(call, "child", org), false],
      ["a repo", () => ok(call("POST", `/registry/v2beta1/repos/${org}`, { name: "app" })), false],
      // A new role is bound to nobody: creating one changes no one's grants (no NOTIFY), but it is an IAM write.
      ["a role", () => createRole(call, org, { name: "spare", capabilities: ["groups.list"] }), true],
      [
        "a subscription",
        () =>
          ok(call("POST", `/events/v2beta1/subscriptions/${org}`, { sink: "https://example.com/hook", types: ["platform.test.never."] })),
        false,
      ],
    ];
    for (const [what, write, iam] of writes) {
      await write();
      const before = await settledLookups();
      await read();
      const after = await lookups();
      expect(after.hit - before.hit + (after.miss - before.miss), what).toBe(1);
      expect(after.hit - before.hit, what).toBe(server.backend === "postgres" && iam ? 0 : 1);
    }
  });

  it("is told of changes to bindings and roles' updates and deletes, not of a new role", async () => {
    const heard: string[] = [];
    let waiting: { marker: string; resolve: () => void } | undefined;
    const unlisten = await server.app.database.listen(
      GRANTS_CHANGED_CHANNEL,
      (payload) => {
        heard.push(payload);
        if (payload === waiting?.marker) waiting.resolve();
      },
      () => {},
    );
    // Notifications arrive in commit order: when our marker arrives, any the writes before it sent have too.
    const settle = async (marker: string) => {
      const arrived = new Promise<void>((resolve) => (waiting = { marker, resolve }));
      await server.app.database.db.execute(sql`select pg_notify(${GRANTS_CHANGED_CHANNEL}, ${marker})`);
      await arrived;
    };
    try {
      const org = uidOf(await createGroup(admin, `grants-notify-${++counter}`));
      const identity = uidOf(await createIdentity(admin, org, { name: "someone" }));
      await settle("start");
      heard.length = 0;

      const role = uidOf(await createRole(admin, org, { name: "fresh", capabilities: ["groups.list"] }));
      await settle("after create");
      expect(heard).toEqual(["after create"]);

      const binding = uidOf(await ok(bind(admin, org, identity, role)));
      await ok(admin("PATCH", `/iam/v2beta1/roles/${role}`, { capabilities: ["repo.list"] }));
      await ok(admin("DELETE", `/iam/v2beta1/roleBindings/${binding}`));
      await ok(admin("DELETE", `/iam/v2beta1/roles/${role}`));
      await settle("after changes");
      expect(heard).toEqual(["after create", "", "", "", "", "after changes"]);
    } finally {
      await unlisten();
    }
  });
});
