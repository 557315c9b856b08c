import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { FieldMaskSchema, timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { testEventRecorder } from "../../test/support/event-recorder.js";
import { migratedStorePerFile } from "../../test/support/fresh-store.js";
import { BadRequestSchema, ResourceInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { GroupSchema, GroupsService, type Group } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { createContextValues } from "@connectrpc/connect";
import { principalKey } from "../caller/index.js";
import { newChildUid, newRootUid, schema, type DatabaseHandle } from "../db/index.js";
import { SecretBox } from "../crypto/index.js";
import { Egress } from "../egress/index.js";
import { isForeignKeyViolation } from "../errors/index.js";
import { groupResource } from "./iam/groups.js";
import { ResourceStore } from "./resource-store.js";
import { toTimestamp } from "./timestamps.js";

// ResourceStore (docs/design.md, "Writes") against a real database: a copy of the migrated PGlite, or a
// fresh PostgreSQL database when DATABASE_URL is set.

const T0 = new Date("2030-01-01T00:00:00.000Z");
let now = T0;
const clock = () => now;
const later = (ms: number) => new Date(T0.getTime() + ms);

// The groups service's own definition: the store's rules are what these tests exercise,
// through a real resource (its beforeDelete is not used: delete takes its own hook here).
const groupMapping = groupResource;
const deps = { secrets: new SecretBox(Buffer.alloc(32, 7)), egress: new Egress({ allowInsecure: false }) };

let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));
let store: ResourceStore<typeof schema.groups, typeof GroupSchema>;
const recorder = testEventRecorder(clock);

beforeAll(async () => {
  store = new ResourceStore(groupMapping, { db: handle.db, clock, events: recorder, ...deps });
});

/** The call a change is made by: its method declares the event type; the actor is `actor-1`. */
function callOf(method: keyof typeof GroupsService.method) {
  const values = createContextValues();
  values.set(principalKey, { identityUid: "actor-1", audience: "https://platform.test", expiry: new Date(Date.now() + 3_600_000) });
  return { method: GroupsService.method[method], values };
}
const creating = callOf("createGroup");
const updating = callOf("updateGroup");
const deleting = callOf("deleteGroup");

const group = (init: MessageInitShape<typeof GroupSchema>) => create(GroupSchema, init);
const mask = (...paths: string[]) => create(FieldMaskSchema, { paths });

async function stored(uid: string) {
  const [row] = await handle.db.select().from(schema.groups).where(eq(schema.groups.uid, uid));
  return row;
}

/** A new organization stored directly, at T0; returns its uid. */
async function org(name = "org"): Promise<string> {
  const uid = newRootUid();
  await handle.db.insert(schema.groups).values({ uid, parentUid: null, name, createTime: T0, updateTime: T0 });
  return uid;
}

async function refusal(p: Promise<unknown>): Promise<ConnectError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ConnectError);
  return e as ConnectError;
}

/** The store runs on the clock `at`, then goes back to T0. */
async function atTime<R>(at: Date, f: () => Promise<R>): Promise<R> {
  now = at;
  try {
    return await f();
  } finally {
    now = T0;
  }
}

describe("ResourceStore.get", () => {
  it("returns the message of a stored row", async () => {
    const uid = await org("gettable");
    const g = await store.get(uid);
    expect(g.uid).toBe(uid);
    expect(g.name).toBe("gettable");
    expect(timestampDate(g.createTime!)).toEqual(T0);
  });

  it("is NOT_FOUND with ResourceInfo for a uid that is not stored", async () => {
    const missing = newRootUid();
    const err = await refusal(store.get(missing));
    expect(err.code).toBe(Code.NotFound);
    expect(err.rawMessage).toBe(`Not found: group ${missing}`);
    expect(err.findDetails(ResourceInfoSchema)[0]).toMatchObject({ resourceType: "group", resourceName: missing });
  });

  it("is INVALID_ARGUMENT on the named field for an empty uid", async () => {
    const err = await refusal(store.get("", "group.uid"));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations).toMatchObject([{ field: "group.uid", description: "is required" }]);
  });
});

describe("ResourceStore.create", () => {
  it("stamps both times from the clock and takes uid and parent from `extra`, not from the message", async () => {
    const parent = await org();
    const uid = newChildUid(parent);
    // Output-only and identifier fields in the body are ignored (AIP-203).
    const body = group({
      uid: "ignored",
      name: "child",
      description: "d",
      resourceLimits: { repos: 3 },
      verified: true,
      createTime: toTimestamp(later(-5000)),
    });
    const made = await atTime(later(1234), () => store.create(body, { uid, parentUid: parent }, creating));
    expect(made).toMatchObject({ uid, name: "child", description: "d", resourceLimits: { repos: 3 }, verified: false });
    expect(timestampDate(made.createTime!)).toEqual(later(1234));
    expect(timestampDate(made.updateTime!)).toEqual(later(1234));
    expect(await stored(uid)).toMatchObject({ parentUid: parent, createTime: later(1234), updateTime: later(1234), verified: false });
  });

  it("on its own, with its row known, is one statement: no transaction, no read-back; answer, row and event agree", async () => {
    const parent = await org();
    const uid = newChildUid(parent);
    const calls: string[] = [];
    // The store's database, with the calls a write could make counted, down to the statements
    // its session prepares (a compiled statement goes there directly).
    const countCalls = <O extends object>(of: O, names: string[], replaced: Record<string, unknown> = {}): O =>
      new Proxy(of, {
        get(target, prop, receiver) {
          if (typeof prop === "string" && prop in replaced) return replaced[prop];
          const value = Reflect.get(target, prop, receiver) as unknown;
          if (names.includes(String(prop))) calls.push(String(prop));
          return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
    const session = countCalls(handle.db._.session, ["prepareQuery", "transaction"]);
    const counted = countCalls(handle.db, ["execute", "transaction", "select", "insert"], { _: { ...handle.db._, session } });
    const oneShot = new ResourceStore(groupMapping, { db: counted, clock, events: recorder, ...deps });
    calls.length = 0;
    const body = group({ name: "known", resourceLimits: { repos: 2 } });
    const made = await atTime(later(77), () => oneShot.create(body, { uid, parentUid: parent }, creating));
    expect(calls).toEqual(["prepareQuery"]);
    expect(made).toEqual(await store.get(uid));
    const [event] = await eventsAbout(uid);
    expect(event!.data).toEqual({
      after: expect.objectContaining({ uid, name: "known", resourceLimits: { repos: 2 }, createTime: later(77).toISOString() }),
    });
  });

  it("answers a map in the order a Get reads it back (jsonb's: shorter keys first)", async () => {
    const parent = await org();
    const uid = newChildUid(parent);
    const made = await store.create(
      group({ name: "ordered", resourceLimits: { groups: 3, repos: 2, b: 1 } }),
      { uid, parentUid: parent },
      creating,
    );
    const read = await store.get(uid);
    expect(Object.keys(read.resourceLimits)).toEqual(["b", "repos", "groups"]);
    expect(Object.keys(made.resourceLimits)).toEqual(Object.keys(read.resourceLimits));
  });

  it("takes no event sequence number when refused (duplicate, missing parent): watchers see no gap", async () => {
    const parent = await org();
    const first = newChildUid(parent);
    await store.create(group({ name: "seq-a" }), { uid: first, parentUid: parent }, creating);
    await refusal(store.create(group({ name: "seq-a" }), { uid: newChildUid(parent), parentUid: parent }, creating));
    const missing = newRootUid();
    await refusal(store.create(group({ name: "seq-b" }), { uid: newChildUid(missing), parentUid: missing }, creating));
    const second = newChildUid(parent);
    await store.create(group({ name: "seq-c" }), { uid: second, parentUid: parent }, creating);
    const [a] = await eventsAbout(first);
    const [c] = await eventsAbout(second);
    expect(c!.seq).toBe(a!.seq + 1);
    expect(await stored(second)).toMatchObject({ name: "seq-c" });
  });

  it("lets exactly one of eight concurrent creates of one name win, the rest ALREADY_EXISTS, one seq taken", async () => {
    const parent = await org();
    const before = newChildUid(parent);
    await store.create(group({ name: "race-before" }), { uid: before, parentUid: parent }, creating);
    const racers = Array.from({ length: 8 }, () => newChildUid(parent));
    const outcomes = await Promise.allSettled(
      racers.map((uid) => store.create(group({ name: "race" }), { uid, parentUid: parent }, creating)),
    );
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === "rejected");
    expect(refused.map((o) => (o.reason as ConnectError).code)).toEqual(Array(7).fill(Code.AlreadyExists));
    const after = newChildUid(parent);
    await store.create(group({ name: "race-after" }), { uid: after, parentUid: parent }, creating);
    const [a] = await eventsAbout(before);
    const [c] = await eventsAbout(after);
    expect(c!.seq).toBe(a!.seq + 2);
  });

  it("validates before writing anything", async () => {
    const parent = await org();
    const uid = newChildUid(parent);
    const err = await refusal(store.create(group({ name: "Not Valid!" }), { uid, parentUid: parent }, creating));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("name");
    expect(await stored(uid)).toBeUndefined();
  });

  it("maps a unique-index collision to ALREADY_EXISTS with the mapping's description", async () => {
    const parent = await org();
    await store.create(group({ name: "twin" }), { uid: newChildUid(parent), parentUid: parent }, creating);
    const uid = newChildUid(parent);
    const err = await refusal(store.create(group({ name: "twin" }), { uid, parentUid: parent }, creating));
    expect(err.code).toBe(Code.AlreadyExists);
    expect(err.rawMessage).toBe('Already exists: a sibling group named "twin" already exists');
    expect(err.findDetails(ResourceInfoSchema)[0]).toMatchObject({ resourceType: "group", resourceName: "twin" });
    expect(await stored(uid)).toBeUndefined();
  });

  it("maps a foreign-key violation to NOT_FOUND of `missingReference`, naming the parent", async () => {
    const missingParent = newRootUid();
    const err = await refusal(
      store.create(group({ name: "orphan" }), { uid: newChildUid(missingParent), parentUid: missingParent }, creating),
    );
    expect(err.code).toBe(Code.NotFound);
    expect(err.rawMessage).toBe(`Not found: group ${missingParent}`);
    expect(err.findDetails(ResourceInfoSchema)[0]).toMatchObject({ resourceType: "group", resourceName: missingParent });
  });

  it("passes a foreign-key violation through when the mapping names no missing reference", async () => {
    const bare = new ResourceStore({ ...groupMapping, missingReference: undefined }, { db: handle.db, clock, events: recorder, ...deps });
    const missingParent = newRootUid();
    const e = await bare.create(group({ name: "orphan" }), { uid: newChildUid(missingParent), parentUid: missingParent }, creating).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).not.toBeInstanceOf(ConnectError);
    expect(isForeignKeyViolation(e)).toBe(true);
  });

  it("runs inside a caller's transaction and goes when it rolls back", async () => {
    const parent = await org();
    const uid = newChildUid(parent);
    const rollback = new Error("roll back");
    await expect(
      handle.db.transaction(async (tx) => {
        await store.create(group({ name: "in-tx" }), { uid, parentUid: parent }, creating, tx);
        expect((await tx.select().from(schema.groups).where(eq(schema.groups.uid, uid))).length).toBe(1);
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await stored(uid)).toBeUndefined();
    // Its event went with it: none is ever recorded for a change that did not happen.
    expect(await eventsAbout(uid)).toEqual([]);
  });
});

async function eventsAbout(subject: string) {
  return handle.db.select().from(schema.events).where(eq(schema.events.subject, subject)).orderBy(schema.events.seq);
}

describe('events recorded with the change (docs/design.md, "Events")', () => {
  it("records created, updated and deleted with the actor, the group, and the resource before and after", async () => {
    const parent = await org();
    const uid = newChildUid(parent);
    await atTime(later(1), () => store.create(group({ name: "audited", description: "one" }), { uid, parentUid: parent }, creating));
    await atTime(later(2), () => store.update(uid, group({ description: "two" }), mask("description"), updating));
    await atTime(later(3), () => store.delete(uid, deleting));
    const rows = await eventsAbout(uid);
    expect(rows.map((r) => r.type)).toEqual([
      "platform.iam.group.created.v1",
      "platform.iam.group.updated.v1",
      "platform.iam.group.deleted.v1",
    ]);
    expect(rows.map((r) => r.time)).toEqual([later(1), later(2), later(3)]);
    for (const r of rows) expect(r).toMatchObject({ actor: "actor-1", source: "https://platform.test", parentUid: uid, subject: uid });
    expect(rows[0]!.data).toEqual({ after: expect.objectContaining({ uid, name: "audited", description: "one" }) });
    expect(rows[1]!.data).toEqual({
      before: expect.objectContaining({ description: "one" }),
      after: expect.objectContaining({ description: "two" }),
    });
    expect(rows[2]!.data).toEqual({ before: expect.objectContaining({ uid, description: "two" }) });
    // Ids sort in the order the events were recorded.
    expect([...rows.map((r) => r.uid)].sort()).toEqual(rows.map((r) => r.uid));
  });

  it("records nothing for a refused change, and nothing for a method that declares no event", async () => {
    const parent = await org();
    const uid = newChildUid(parent);
    await refusal(store.create(group({ name: "Not Valid!" }), { uid, parentUid: parent }, creating));
    expect(await eventsAbout(uid)).toEqual([]);
    await store.create(group({ name: "quiet" }), { uid, parentUid: parent }, callOf("getGroup"));
    expect(await stored(uid)).toBeDefined();
    expect(await eventsAbout(uid)).toEqual([]);
  });
});

describe("ResourceStore.update", () => {
  it("runs inside a caller's transaction and goes, with its event, when it rolls back", async () => {
    const parent = await org();
    const uid = newChildUid(parent);
    await store.create(group({ name: "kept", description: "before" }), { uid, parentUid: parent }, creating);
    const rollback = new Error("roll back");
    await expect(
      handle.db.transaction(async (tx) => {
        await store.update(uid, group({ description: "after" }), mask("description"), updating, undefined, tx);
        expect((await tx.select().from(schema.groups).where(eq(schema.groups.uid, uid)))[0]?.description).toBe("after");
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect((await stored(uid))?.description).toBe("before");
    expect((await eventsAbout(uid)).map((e) => e.type)).toEqual(["platform.iam.group.created.v1"]);
  });

  async function child(parent: string, name: string): Promise<string> {
    const uid = newChildUid(parent);
    await store.create(group({ name, description: "before" }), { uid, parentUid: parent }, creating);
    return uid;
  }

  it("with a mask changes exactly the masked paths, keeps create_time, and stamps update_time", async () => {
    const uid = await child(await org(), "masked");
    const patch = group({ name: "renamed", description: "after", resourceLimits: { repos: 1 } });
    const updated = await atTime(later(60_000), () => store.update(uid, patch, mask("description"), updating));
    expect(updated).toMatchObject({ name: "masked", description: "after", resourceLimits: {} });
    expect(timestampDate(updated.createTime!)).toEqual(T0);
    expect(timestampDate(updated.updateTime!)).toEqual(later(60_000));
    expect(await stored(uid)).toMatchObject({ name: "masked", description: "after", createTime: T0, updateTime: later(60_000) });
  });

  it("with a mask clears a masked field the patch leaves unset", async () => {
    const uid = await child(await org(), "cleared");
    const updated = await store.update(uid, group({}), mask("description"), updating);
    expect(updated.description).toBe("");
  });

  it("without a mask changes the fields the patch sets and nothing else", async () => {
    const uid = await child(await org(), "implied");
    const updated = await store.update(uid, group({ resourceLimits: { repos: 2 } }), undefined, updating);
    expect(updated).toMatchObject({ name: "implied", description: "before", resourceLimits: { repos: 2 } });
  });

  it("is NOT_FOUND for a uid that is not stored", async () => {
    const missing = newChildUid(newRootUid());
    const err = await refusal(store.update(missing, group({ description: "x" }), mask("description"), updating));
    expect(err.code).toBe(Code.NotFound);
    expect(err.findDetails(ResourceInfoSchema)[0]?.resourceName).toBe(missing);
  });

  it("validates the result as a whole and leaves the row alone when it fails", async () => {
    const uid = await child(await org(), "valid");
    const err = await refusal(store.update(uid, group({ name: "In Valid" }), mask("name"), updating));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(await stored(uid)).toMatchObject({ name: "valid", updateTime: T0 });
  });

  it("refuses an unknown mask path on update_mask", async () => {
    const uid = await child(await org(), "unknown-path");
    const err = await refusal(store.update(uid, group({}), mask("colour"), updating));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("update_mask");
  });

  it("maps a rename onto a sibling's name to ALREADY_EXISTS", async () => {
    const parent = await org();
    await child(parent, "taken");
    const uid = await child(parent, "free");
    const err = await refusal(store.update(uid, group({ name: "taken" }), mask("name"), updating));
    expect(err.code).toBe(Code.AlreadyExists);
    expect(err.rawMessage).toBe('Already exists: a sibling group named "taken" already exists');
    expect((await stored(uid))?.name).toBe("free");
  });

  it("hands `extra` the transaction and both messages, writes what it returns, and rolls back when it throws", async () => {
    const uid = await child(await org(), "extra");
    const seen: { next: string; current: string; inTx: string }[] = [];
    const updated = await store.update(uid, group({ description: "after" }), mask("description"), updating, async (tx, next, current) => {
      const [locked] = await tx.select().from(schema.groups).where(eq(schema.groups.uid, uid));
      seen.push({ next: next.description, current: current.description, inTx: locked!.description });
      return { verified: true };
    });
    expect(seen).toEqual([{ next: "after", current: "before", inTx: "before" }]);
    expect(updated).toMatchObject({ description: "after", verified: true });

    const refused = new Error("refused by extra");
    await expect(
      store.update(uid, group({ description: "never" }), mask("description"), updating, () => Promise.reject(refused)),
    ).rejects.toBe(refused);
    expect((await stored(uid))?.description).toBe("after");
  });

  it("serialises concurrent updates of one row under the row lock: no read-modify-write is lost", async () => {
    const uid = await child(await org(), "counter");
    const n = 8;
    // Each update reads the counter inside its transaction and writes it plus one; without
    // the lock two would read the same value and one increment would be lost. (PGlite runs one
    // transaction at a time anyway; this bites on PostgreSQL.)
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        store.update(uid, group({ description: `writer ${i}` }), mask("description"), updating, (_tx, _next, current) => ({
          resourceLimits: { count: (current.resourceLimits["count"] ?? 0) + 1 },
        })),
      ),
    );
    expect((await stored(uid))?.resourceLimits).toEqual({ count: n });
  });
});

describe("decorated answers", () => {
  /** The groups mapping with a decoration that marks each message and counts its calls. */
  function decoratedStore() {
    const calls: number[] = [];
    const mapping: typeof groupMapping = {
      ...groupMapping,
      decorate: async (_db: unknown, page: Group[]) => {
        calls.push(page.length);
        for (const g of page) g.description = `${g.description} (decorated)`;
        return page;
      },
    };
    return { store: new ResourceStore(mapping, { db: handle.db, clock, events: recorder, ...deps }), calls };
  }

  it("get answers the decorated message", async () => {
    const uid = await org("decorated-get");
    const { store: decorated, calls } = decoratedStore();
    expect((await decorated.get(uid)).description).toBe(" (decorated)");
    expect(calls).toEqual([1]);
  });

  it("update answers the decorated message, decorating the new state once for the event and the answer alike", async () => {
    const uid = await org("decorated-update");
    const { store: decorated, calls } = decoratedStore();
    const answer = await decorated.update(uid, group({ description: "new" }), mask("description"), updating);
    expect(answer.description).toBe("new (decorated)");
    // Once for the event's "before", once for its "after", which is also the answer.
    expect(calls).toEqual([1, 1]);
    expect((await stored(uid))?.description).toBe("new");
  });
});

describe("ResourceStore.delete", () => {
  it("runs inside a caller's transaction and goes, with its event, when it rolls back", async () => {
    const parent = await org();
    const uid = newChildUid(parent);
    await store.create(group({ name: "kept" }), { uid, parentUid: parent }, creating);
    const rollback = new Error("roll back");
    await expect(
      handle.db.transaction(async (tx) => {
        await store.delete(uid, deleting, undefined, tx);
        expect(await tx.select().from(schema.groups).where(eq(schema.groups.uid, uid))).toEqual([]);
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await stored(uid)).toBeDefined();
    expect((await eventsAbout(uid)).map((e) => e.type)).toEqual(["platform.iam.group.created.v1"]);
  });

  it("deletes the row and is NOT_FOUND the second time", async () => {
    const uid = await org();
    await store.delete(uid, deleting);
    expect(await stored(uid)).toBeUndefined();
    const err = await refusal(store.delete(uid, deleting));
    expect(err.code).toBe(Code.NotFound);
    expect(err.findDetails(ResourceInfoSchema)[0]).toMatchObject({ resourceType: "group", resourceName: uid });
  });

  it("is INVALID_ARGUMENT on uid for an empty uid", async () => {
    const err = await refusal(store.delete("", deleting));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("uid");
  });

  it("runs `before` in the delete's transaction: its writes commit with the delete", async () => {
    const parent = await org();
    const kid = newChildUid(parent);
    await store.create(group({ name: "kid" }), { uid: kid, parentUid: parent }, creating);
    // The child's foreign key would refuse the delete unless `before` removes it first, in the same transaction.
    await store.delete(parent, deleting, async (tx, row) => {
      expect(row.uid).toBe(parent);
      await tx.delete(schema.groups).where(eq(schema.groups.parentUid, row.uid));
    });
    expect(await stored(parent)).toBeUndefined();
    expect(await stored(kid)).toBeUndefined();
  });

  it("rolls back `before`'s writes and keeps the row when `before` throws", async () => {
    const parent = await org();
    const kid = newChildUid(parent);
    await store.create(group({ name: "kid" }), { uid: kid, parentUid: parent }, creating);
    const refused = new Error("not empty");
    await expect(
      store.delete(parent, deleting, async (tx) => {
        await tx.delete(schema.groups).where(eq(schema.groups.parentUid, parent));
        throw refused;
      }),
    ).rejects.toBe(refused);
    expect(await stored(parent)).toBeDefined();
    expect(await stored(kid)).toBeDefined();
  });

  it("leaves a foreign-key refusal of the delete to the caller and keeps the row", async () => {
    const parent = await org();
    await store.create(group({ name: "kid" }), { uid: newChildUid(parent), parentUid: parent }, creating);
    const e = await store.delete(parent, deleting).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(isForeignKeyViolation(e)).toBe(true);
    expect(await stored(parent)).toBeDefined();
  });
});
