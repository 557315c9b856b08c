import { create, type DescMethod } from "@bufbuild/protobuf";
import { randomBytes } from "node:crypto";
import { createContextValues, type HandlerContext } from "@connectrpc/connect";
import { inArray } from "drizzle-orm";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import { beforeAll, describe, expect, it } from "vitest";
import { testEventRecorder } from "../../../test/support/event-recorder.js";
import { migratedStorePerFile } from "../../../test/support/fresh-store.js";
import {
  BatchCreateRoleBindingsRequestSchema,
  CreateRoleBindingRequestSchema,
  RoleBindingsService,
} from "../../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { CreateRootRoleBindingRequestSchema, RootRoleBindingsService } from "../../../gen/platform/iam/v2beta1/root_role_bindings_pb.js";
import { Grants, grantsKey } from "../../authz/index.js";
import { principalKey } from "../../caller/index.js";
import { CAPABILITIES } from "../../capabilities/index.js";
import { newChildUid, newRootUid, schema, type Database, type DatabaseHandle } from "../../db/index.js";
import type { ServiceContext } from "../context.js";
import { ResourceCatalog } from "../resource-catalog.js";
import { roleBindingsService } from "./role-bindings.js";
import { rootRoleBindingsService } from "./root-role-bindings.js";

// What a batch of role bindings costs the database: each binding is hydrated (its identity, group
// and role joined in) once for the whole answer, its event reusing the answer's message
// (src/bindings/), not once per binding and again for the answer.

const T0 = new Date("2030-01-01T00:00:00.000Z");
let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));

/** Every statement the service runs, as SQL text: the same store seen through a logging Drizzle. */
let statements: string[] = [];
let service: ReturnType<typeof roleBindingsService.build>;
let rootService: ReturnType<typeof rootRoleBindingsService.build>;
let org = "";

beforeAll(async () => {
  const logger = { logQuery: (query: string) => void statements.push(query) };
  const client = (handle.db as unknown as { $client: never }).$client;
  const db = (handle.kind === "pglite"
    ? drizzlePglite(client, { schema, logger })
    : drizzlePostgres(client, { schema, logger })) as unknown as Database;
  const clock = () => T0;
  const ctx = { db, clock, events: testEventRecorder(clock), resources: new ResourceCatalog() } as ServiceContext;
  service = roleBindingsService.build(ctx);
  rootService = rootRoleBindingsService.build(ctx);
  org = newRootUid();
  await handle.db.insert(schema.groups).values({ uid: org, parentUid: null, name: "org", createTime: T0, updateTime: T0 });
});

/** `n` new identities of the organization. */
async function identities(n: number): Promise<string[]> {
  const rows = Array.from({ length: n }, (_, k) => ({
    uid: newChildUid(org),
    parentUid: org,
    name: `robot-${k}`,
    createTime: T0,
    updateTime: T0,
  }));
  await handle.db.insert(schema.identities).values(rows);
  return rows.map((r) => r.uid);
}

/** A call of `method` by a root owner (the grant ceiling lets it bind anything). */
function callOf(method: DescMethod): HandlerContext {
  const values = createContextValues();
  values.set(principalKey, { identityUid: "actor-1", audience: "https://platform.test", expiry: new Date(Date.now() + 3_600_000) });
  values.set(grantsKey, new Grants([{ groupUid: null, capabilities: new Set(CAPABILITIES) }]));
  return { method, values } as unknown as HandlerContext;
}

/** The statements that hydrate bindings: the binding joined with its identity. */
const hydrations = () => statements.filter((s) => /from "(root_)?role_bindings" inner join "identities"/i.test(s)).length;

describe("creating role bindings", () => {
  it.each([1, 5, 20])("hydrates a batch of %i bindings in one query, for its answer and its events alike", async (n) => {
    const uids = await identities(n);
    statements = [];
    const answer = await service.batchCreateRoleBindings(
      create(BatchCreateRoleBindingsRequestSchema, {
        parent: org,
        requests: uids.map((identityUid) => create(CreateRoleBindingRequestSchema, { identityUid, roleUid: "viewer" })),
      }),
      callOf(RoleBindingsService.method.batchCreateRoleBindings),
    );
    expect((answer.roleBindings ?? []).map((b) => [b.identity?.uid, b.group?.uid, b.role?.name])).toEqual(
      uids.map((u) => [u, org, "viewer"]),
    );
    expect(hydrations()).toBe(1);
    // Each binding's event shows it as the answer does.
    const events = await handle.db
      .select()
      .from(schema.events)
      .where(
        inArray(
          schema.events.subject,
          (answer.roleBindings ?? []).map((b) => b.uid ?? ""),
        ),
      );
    expect(events.map((e) => (e.data as { after: { identity: { uid: string } } }).after.identity.uid).sort()).toEqual([...uids].sort());
  });

  it("hydrates a single binding once", async () => {
    const [identityUid] = await identities(1);
    statements = [];
    const binding = await service.createRoleBinding(
      create(CreateRoleBindingRequestSchema, { parent: org, identityUid: identityUid!, roleUid: "editor" }),
      callOf(RoleBindingsService.method.createRoleBinding),
    );
    expect(binding.role?.name).toBe("editor");
    expect(hydrations()).toBe(1);
  });

  it("hydrates a root binding once", async () => {
    const identityUid = randomBytes(8).toString("hex");
    await handle.db.insert(schema.identities).values({ uid: identityUid, parentUid: null, name: "person", createTime: T0, updateTime: T0 });
    statements = [];
    const binding = await rootService.createRootRoleBinding(
      create(CreateRootRoleBindingRequestSchema, { identityUid, roleUid: "viewer" }),
      callOf(RootRoleBindingsService.method.createRootRoleBinding),
    );
    expect([binding.identity?.uid, binding.group, binding.role?.name]).toEqual([identityUid, undefined, "viewer"]);
    expect(hydrations()).toBe(1);
  });
});
