import http from "node:http";
import type { AddressInfo } from "node:net";
import { create, toJson } from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { createContextValues } from "@connectrpc/connect";
import { and, eq, inArray } from "drizzle-orm";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { TagSchema, TagsService } from "../../gen/platform/registry/v2beta1/tags_pb.js";
import { migratedStorePerFile } from "../../test/support/fresh-store.js";
import { principalKey } from "../caller/index.js";
import { Grants } from "../authz/index.js";
import { SecretBox } from "../crypto/index.js";
import { Egress } from "../egress/index.js";
import { EventRecorder } from "../events/index.js";
import { newChildUid, newRootUid, schema, settingContext, type DatabaseHandle } from "../db/index.js";
import { sendError } from "../http/response.js";
import { ResourceStore } from "../services/resource-store.js";
import { tagResource } from "../services/registry/tags.js";
import {
  loadRegistryNotificationSecret,
  MAX_NOTIFICATION_BODY_BYTES,
  NOTIFICATION_SECRET_SETTING,
  parseEventTime,
  registryNotificationsRoute,
} from "./notifications.js";
import { registryPathOf } from "./paths.js";

// The registry's notifications endpoint (docs/design.md, "The image registry") against a real database
// (PGlite, or PostgreSQL when DATABASE_URL is set), over HTTP as distribution sends them.

let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));

const NOW = new Date("2030-01-01T00:00:00.000Z");
const clock = () => NOW;
// The recorder of the tests, but counting announcements (what tells watchers and webhooks).
let announced = 0;
const recorder = new EventRecorder({
  source: "https://platform.test",
  clock,
  render: (desc, message) => toJson(desc, message),
  retryForMs: 86_400_000,
  announce: async () => void announced++,
  onError: (e) => {
    throw e;
  },
});
/** Announcements go out a few milliseconds after the commit, gathered. */
const announcements = async () => {
  await new Promise((resolve) => setTimeout(resolve, 50));
  const n = announced;
  announced = 0;
  return n;
};
const SECRET = "s3cret-of-the-registry";
const MANIFEST = "application/vnd.oci.image.manifest.v1+json";
const DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json";
const EVENTS_TYPE = "application/vnd.docker.distribution.events.v1+json";
const digest = (c: string) => `sha256:${c.repeat(64)}`;

/** What each identity holds, as the grants cache would answer. */
const grantsByActor = new Map<string, Grants>();
const holds = (actor: string, at: string, ...capabilities: string[]) =>
  grantsByActor.set(
    actor,
    new Grants([...(grantsByActor.get(actor)?.grants ?? []), { groupUid: at, capabilities: new Set(capabilities) }]),
  );
const logged: { message: string; fields: Record<string, unknown> }[] = [];

const deps = { secrets: new SecretBox(Buffer.alloc(32, 7)), egress: new Egress({ allowInsecure: false }) };

let server: http.Server;
let url = "";
beforeAll(async () => {
  const route = registryNotificationsRoute({
    db: handle.db,
    clock,
    events: recorder,
    ...deps,
    grantsOf: async (uid) => grantsByActor.get(uid) ?? new Grants([]),
    secret: SECRET,
    log: (message, fields) => logged.push({ message, fields }),
  });
  // As the server's plain routes serve it: a thrown error becomes its status.
  server = http.createServer((req, res) => {
    const u = new URL(req.url ?? "/", "http://localhost");
    void route.serve(req, res, u).catch((e: unknown) =>
      sendError(res, e, {
        domain: "test",
        onInternalError: (cause) => {
          throw cause;
        },
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
beforeEach(() => {
  logged.length = 0;
});

interface EventInit {
  action?: string;
  repository: string;
  tag?: string;
  digest?: string;
  mediaType?: string;
  timestamp?: string;
  actor?: string;
  id?: string;
}
let nextId = 0;
/** An event as distribution 2.8 writes one. */
function event(e: EventInit): Record<string, unknown> {
  return {
    id: e.id ?? `event-${++nextId}`,
    timestamp: e.timestamp ?? "2030-01-01T00:00:01.123456789Z",
    action: e.action ?? "push",
    target: {
      mediaType: e.mediaType ?? MANIFEST,
      size: 1234,
      digest: e.digest ?? digest("a"),
      length: 1234,
      repository: e.repository,
      url: `http://registry.test/v2/${e.repository}/manifests/${e.digest ?? digest("a")}`,
      ...(e.tag === undefined ? {} : { tag: e.tag }),
    },
    request: { id: "r", addr: "127.0.0.1:5555", host: "registry.test", method: "PUT", useragent: "skopeo/1.9" },
    actor: { name: e.actor ?? "" },
    source: { addr: "registry:5000", instanceID: "i-1" },
  };
}

async function post(body: unknown, opts: { secret?: string | null; raw?: string } = {}): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = { "content-type": EVENTS_TYPE };
  const secret = opts.secret === undefined ? SECRET : opts.secret;
  if (secret !== null) headers["authorization"] = `Bearer ${secret}`;
  const res = await fetch(url, { method: "POST", headers, body: opts.raw ?? JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}
const envelope = (...events: Record<string, unknown>[]) => ({ events });

/** A new organization (and a group in it when `child`), stored directly. */
async function newGroup(parent?: string): Promise<string> {
  const uid = parent ? newChildUid(parent) : newRootUid();
  await handle.db
    .insert(schema.groups)
    .values({ uid, parentUid: parent ?? null, name: `g${uid.slice(-6)}`, createTime: NOW, updateTime: NOW });
  return uid;
}
/** A new identity uid in `org` (the grants are what the test says; no row is needed for them). */
const identity = (org: string) => newChildUid(org);

async function reposIn(group: string) {
  return handle.db.select().from(schema.repos).where(eq(schema.repos.parentUid, group));
}
async function tagsOf(repoUid: string) {
  return handle.db.select().from(schema.tags).where(eq(schema.tags.parentUid, repoUid)).orderBy(schema.tags.name);
}
async function eventsOf(subjects: string[]) {
  if (!subjects.length) return [];
  return handle.db.select().from(schema.events).where(inArray(schema.events.subject, subjects)).orderBy(schema.events.seq);
}
/** Every event about the repos of `group` and their tags. */
async function eventsIn(group: string) {
  const rows = await handle.db.select().from(schema.events).where(eq(schema.events.parentUid, group)).orderBy(schema.events.seq);
  const repos = (await reposIn(group)).map((r) => r.uid);
  const tagRows = repos.length
    ? await handle.db.select().from(schema.events).where(inArray(schema.events.parentUid, repos)).orderBy(schema.events.seq)
    : [];
  return [...rows, ...tagRows].sort((a, b) => a.seq - b.seq);
}

/** An organization with a pusher holding what registry.push gives, and its path for repo `name`. */
async function pushSetup(name = "app") {
  const org = await newGroup();
  const actor = identity(org);
  holds(actor, org, "repo.create", "tag.create", "tag.update", "tag.delete", "repo.blobs.get");
  return { org, actor, path: registryPathOf(org, name) };
}

describe("manifest pushes", () => {
  it("create the repo and the tag, with their events made by the pushing identity", async () => {
    const { org, actor, path } = await pushSetup("team/app");
    const r = await post(envelope(event({ repository: path, tag: "v1", digest: digest("a"), actor })));
    expect(r).toEqual({ status: 200, body: {} });
    const [repo, ...others] = await reposIn(org);
    expect(others).toEqual([]);
    expect(repo).toMatchObject({ name: "team/app" });
    const tags = await tagsOf(repo!.uid);
    expect(tags).toMatchObject([{ name: "v1", digest: digest("a"), sourceTime: new Date("2030-01-01T00:00:01.123Z"), updateTime: NOW }]);
    const events = await eventsOf([repo!.uid, tags[0]!.uid]);
    expect(events.map((e) => [e.type, e.subject, e.actor])).toEqual([
      ["platform.registry.repo.created.v1", repo!.uid, actor],
      ["platform.registry.tag.created.v1", tags[0]!.uid, actor],
    ]);
    expect(events[0]!.parentUid).toBe(org);
    expect(events[1]!.parentUid).toBe(org);
    expect(events[1]!.data).toEqual({ after: expect.objectContaining({ name: "v1", digest: digest("a") }) });
    expect(logged).toEqual([]);
  });

  it("are idempotent: the same envelope again changes nothing and records no second event", async () => {
    const { org, actor, path } = await pushSetup();
    const body = envelope(
      event({ repository: path, tag: "v1", digest: digest("a"), actor }),
      event({ repository: path, tag: "v2", digest: digest("b"), actor }),
    );
    await post(body);
    const before = await eventsIn(org);
    const [repo] = await reposIn(org);
    const tagsBefore = await tagsOf(repo!.uid);
    expect(before).toHaveLength(3);
    expect(await announcements()).toBeGreaterThan(0);
    expect(await post(body)).toEqual({ status: 200, body: {} });
    expect(await announcements()).toBe(0);
    expect(await eventsIn(org)).toEqual(before);
    expect(await tagsOf(repo!.uid)).toEqual(tagsBefore);
    expect(await reposIn(org)).toHaveLength(1);
  });

  it("move a tag's digest when newer (tag.updated), and a late, older event does not move it back", async () => {
    const { org, actor, path } = await pushSetup();
    await post(envelope(event({ repository: path, tag: "latest", digest: digest("a"), actor, timestamp: "2030-01-01T00:00:01Z" })));
    await post(
      envelope(
        event({
          repository: path,
          tag: "latest",
          digest: digest("b"),
          actor,
          timestamp: "2030-01-01T00:00:03.5+00:00",
          mediaType: DOCKER_MANIFEST,
        }),
      ),
    );
    const [repo] = await reposIn(org);
    let [tag] = await tagsOf(repo!.uid);
    expect(tag).toMatchObject({ digest: digest("b"), sourceTime: new Date("2030-01-01T00:00:03.500Z") });
    const updated = (await eventsOf([tag!.uid])).filter((e) => e.type === "platform.registry.tag.updated.v1");
    expect(updated).toHaveLength(1);
    expect(updated[0]!.data).toEqual({
      before: expect.objectContaining({ digest: digest("a") }),
      after: expect.objectContaining({ digest: digest("b") }),
    });
    // Pushed at 00:00:02, delivered after the one of 00:00:03.5 (an offset zone as well).
    const late = await post(
      envelope(event({ repository: path, tag: "latest", digest: digest("c"), actor, timestamp: "2030-01-01T01:00:02+01:00" })),
    );
    expect(late.status).toBe(200);
    [tag] = await tagsOf(repo!.uid);
    expect(tag).toMatchObject({ digest: digest("b"), sourceTime: new Date("2030-01-01T00:00:03.500Z") });
    expect((await eventsOf([tag!.uid])).map((e) => e.type)).toEqual([
      "platform.registry.tag.created.v1",
      "platform.registry.tag.updated.v1",
    ]);
  });

  it("of the same digest again record nothing but move the time an older event is measured against", async () => {
    const { org, actor, path } = await pushSetup();
    await post(envelope(event({ repository: path, tag: "t", digest: digest("a"), actor, timestamp: "2030-01-01T00:00:01Z" })));
    await post(envelope(event({ repository: path, tag: "t", digest: digest("a"), actor, timestamp: "2030-01-01T00:00:05Z" })));
    const [repo] = await reposIn(org);
    expect(await tagsOf(repo!.uid)).toMatchObject([{ digest: digest("a"), sourceTime: new Date("2030-01-01T00:00:05Z") }]);
    // One of 00:00:03 is older than the push of 00:00:05 that set the tag last.
    await post(envelope(event({ repository: path, tag: "t", digest: digest("b"), actor, timestamp: "2030-01-01T00:00:03Z" })));
    expect(await tagsOf(repo!.uid)).toMatchObject([{ digest: digest("a") }]);
    expect((await eventsIn(org)).map((e) => e.type)).toEqual(["platform.registry.repo.created.v1", "platform.registry.tag.created.v1"]);
  });

  it("apply in the envelope's order", async () => {
    const { org, actor, path } = await pushSetup();
    await post(
      envelope(
        event({ repository: path, tag: "t", digest: digest("a"), actor, timestamp: "2030-01-01T00:00:01Z" }),
        event({ repository: path, tag: "t", digest: digest("b"), actor, timestamp: "2030-01-01T00:00:02Z" }),
      ),
    );
    const [repo] = await reposIn(org);
    expect(await tagsOf(repo!.uid)).toMatchObject([{ digest: digest("b") }]);
  });

  it("into the same new repo at once (two registry replicas) make one repo and every tag", async () => {
    const { org, actor, path } = await pushSetup();
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => post(envelope(event({ repository: path, tag: `c${i}`, digest: digest("c"), actor })))),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
    const repos = await reposIn(org);
    expect(repos).toHaveLength(1);
    expect((await tagsOf(repos[0]!.uid)).map((t) => t.name)).toEqual(["c0", "c1", "c2", "c3", "c4", "c5"]);
    expect((await eventsIn(org)).filter((e) => e.type === "platform.registry.repo.created.v1")).toHaveLength(1);
    expect(logged).toEqual([]);
  });

  it("by digest alone create the repo and no tag", async () => {
    const { org, actor, path } = await pushSetup();
    await post(envelope(event({ repository: path, actor })));
    const [repo] = await reposIn(org);
    expect(repo).toBeDefined();
    expect(await tagsOf(repo!.uid)).toEqual([]);
  });

  it("are left to API writes' rules: an API update keeps source_time, so an older event still changes nothing", async () => {
    const { org, actor, path } = await pushSetup();
    await post(envelope(event({ repository: path, tag: "t", digest: digest("a"), actor, timestamp: "2030-01-01T00:00:05Z" })));
    const [repo] = await reposIn(org);
    const [tag] = await tagsOf(repo!.uid);
    const values = createContextValues();
    values.set(principalKey, { identityUid: actor, audience: "https://platform.test", expiry: new Date(NOW.getTime() + 60_000) });
    const api = new ResourceStore(tagResource, { db: handle.db, clock, events: recorder, ...deps });
    await api.update(
      tag!.uid,
      create(TagSchema, { digest: digest("d"), deprecated: true }),
      create(FieldMaskSchema, { paths: ["digest", "deprecated"] }),
      { method: TagsService.method.updateTag, values },
    );
    expect(await tagsOf(repo!.uid)).toMatchObject([
      { digest: digest("d"), deprecated: true, sourceTime: new Date("2030-01-01T00:00:05Z") },
    ]);
    await post(envelope(event({ repository: path, tag: "t", digest: digest("b"), actor, timestamp: "2030-01-01T00:00:04Z" })));
    expect(await tagsOf(repo!.uid)).toMatchObject([{ digest: digest("d") }]);
    // A newer one applies, and keeps what the API set besides the digest.
    await post(envelope(event({ repository: path, tag: "t", digest: digest("b"), actor, timestamp: "2030-01-01T00:00:06Z" })));
    expect(await tagsOf(repo!.uid)).toMatchObject([
      { digest: digest("b"), deprecated: true, sourceTime: new Date("2030-01-01T00:00:06Z") },
    ]);
  });
});

describe("deletes", () => {
  it("remove the repo's tags that hold the digest (tag.deleted each), and leave the others", async () => {
    const { org, actor, path } = await pushSetup();
    await post(
      envelope(
        event({ repository: path, tag: "a1", digest: digest("a"), actor }),
        event({ repository: path, tag: "a2", digest: digest("a"), actor }),
        event({ repository: path, tag: "b1", digest: digest("b"), actor }),
      ),
    );
    // The same digest in another repo of the group stays too.
    const other = registryPathOf(org, "other");
    await post(envelope(event({ repository: other, tag: "a1", digest: digest("a"), actor })));
    const [repo] = (await reposIn(org)).filter((r) => r.name === "app");
    const gone = (await tagsOf(repo!.uid)).filter((t) => t.digest === digest("a"));
    // distribution's manifest delete: a digest, no media type, no tag.
    const del = event({ action: "delete", repository: path, digest: digest("a"), actor, timestamp: "2030-01-01T00:00:09Z" });
    delete (del["target"] as Record<string, unknown>)["mediaType"];
    expect(await post(envelope(del))).toEqual({ status: 200, body: {} });
    expect((await tagsOf(repo!.uid)).map((t) => t.name)).toEqual(["b1"]);
    const [otherRepo] = (await reposIn(org)).filter((r) => r.name === "other");
    expect((await tagsOf(otherRepo!.uid)).map((t) => t.name)).toEqual(["a1"]);
    const deleted = await eventsOf(gone.map((t) => t.uid));
    expect(deleted.filter((e) => e.type === "platform.registry.tag.deleted.v1").map((e) => [e.subject, e.actor])).toEqual(
      gone.map((t) => [t.uid, actor]),
    );
    // Again: nothing left to delete, nothing recorded.
    const count = (await eventsIn(org)).length;
    await post(envelope(del));
    expect(await eventsIn(org)).toHaveLength(count);
  });

  it("of a tag (no digest) remove that tag only", async () => {
    const { org, actor, path } = await pushSetup();
    await post(envelope(event({ repository: path, tag: "x", actor }), event({ repository: path, tag: "y", actor })));
    const del = event({ action: "delete", repository: path, tag: "x", actor, timestamp: "2030-01-01T00:00:09Z" });
    delete (del["target"] as Record<string, unknown>)["digest"];
    delete (del["target"] as Record<string, unknown>)["mediaType"];
    await post(envelope(del));
    const [repo] = await reposIn(org);
    expect((await tagsOf(repo!.uid)).map((t) => t.name)).toEqual(["y"]);
  });

  it("older than the push that last set a tag leave the tag", async () => {
    const { org, actor, path } = await pushSetup();
    await post(envelope(event({ repository: path, tag: "t", digest: digest("a"), actor, timestamp: "2030-01-01T00:00:05Z" })));
    await post(envelope(event({ action: "delete", repository: path, digest: digest("a"), actor, timestamp: "2030-01-01T00:00:04Z" })));
    const [repo] = await reposIn(org);
    expect(await tagsOf(repo!.uid)).toHaveLength(1);
  });

  it("are skipped when the actor does not hold tag.delete there", async () => {
    const { org, actor, path } = await pushSetup();
    await post(envelope(event({ repository: path, tag: "t", digest: digest("a"), actor })));
    const puller = identity(org);
    holds(puller, org, "repo.blobs.get", "tag.create");
    await post(
      envelope(event({ action: "delete", repository: path, digest: digest("a"), actor: puller, timestamp: "2030-01-01T00:00:09Z" })),
    );
    const [repo] = await reposIn(org);
    expect(await tagsOf(repo!.uid)).toHaveLength(1);
    expect(logged).toMatchObject([{ message: "registry notification skipped", fields: { reason: expect.stringContaining("tag.delete") } }]);
  });
});

describe("events the catalog does not follow", () => {
  it("blob pushes, mounts and pulls change nothing", async () => {
    const { org, actor, path } = await pushSetup();
    const r = await post(
      envelope(
        event({ repository: path, mediaType: "application/octet-stream", digest: digest("1"), actor }),
        event({ repository: path, mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", digest: digest("2"), actor }),
        event({
          action: "mount",
          repository: path,
          mediaType: "application/vnd.docker.image.rootfs.diff.tar.gzip",
          digest: digest("3"),
          actor,
        }),
        event({ action: "pull", repository: path, tag: "v1", actor }),
      ),
    );
    expect(r).toEqual({ status: 200, body: {} });
    expect(await reposIn(org)).toEqual([]);
    expect(await eventsIn(org)).toEqual([]);
    expect(logged).toEqual([]);
  });
});

describe("authorization, checked again for each event", () => {
  it("skips a path in a group that does not exist, and logs it", async () => {
    const { org, actor } = await pushSetup();
    const missing = newChildUid(org);
    const r = await post(envelope(event({ repository: registryPathOf(missing, "app"), tag: "v1", actor })));
    expect(r.status).toBe(200);
    expect(await handle.db.select().from(schema.repos).where(eq(schema.repos.parentUid, missing))).toEqual([]);
    expect(logged).toMatchObject([{ fields: { reason: "its group does not exist", repository: registryPathOf(missing, "app") } }]);
  });

  it("skips a push into another organization where the actor holds nothing", async () => {
    const { actor } = await pushSetup();
    const foreign = await newGroup();
    const r = await post(envelope(event({ repository: registryPathOf(foreign, "app"), tag: "v1", actor })));
    expect(r.status).toBe(200);
    expect(await reposIn(foreign)).toEqual([]);
    expect(await eventsIn(foreign)).toEqual([]);
    expect(logged).toMatchObject([{ fields: { reason: expect.stringContaining("claims a group it may not push to"), actor } }]);
  });

  it("lets an actor with tag.create but no repo.create tag an existing repo, and not make a new one", async () => {
    const { org, actor: owner, path } = await pushSetup();
    await post(envelope(event({ repository: path, actor: owner })));
    const tagger = identity(org);
    holds(tagger, org, "tag.create", "tag.update");
    await post(envelope(event({ repository: path, tag: "v9", digest: digest("9"), actor: tagger })));
    const [repo] = await reposIn(org);
    const [tag] = await tagsOf(repo!.uid);
    expect(tag).toMatchObject({ name: "v9", digest: digest("9") });
    expect((await eventsOf([tag!.uid])).map((e) => e.actor)).toEqual([tagger]);
    expect(logged).toEqual([]);

    await post(envelope(event({ repository: registryPathOf(org, "new-one"), tag: "v1", actor: tagger })));
    expect((await reposIn(org)).map((r) => r.name)).toEqual(["app"]);
    expect(logged).toMatchObject([{ fields: { reason: expect.stringContaining("repo.create") } }]);
  });

  it("skips a tag change the actor may not make (tag.update for a tag that exists)", async () => {
    const { org, actor, path } = await pushSetup();
    await post(envelope(event({ repository: path, tag: "t", digest: digest("a"), actor, timestamp: "2030-01-01T00:00:01Z" })));
    const creator = identity(org);
    holds(creator, org, "tag.create");
    await post(envelope(event({ repository: path, tag: "t", digest: digest("b"), actor: creator, timestamp: "2030-01-01T00:00:02Z" })));
    const [repo] = await reposIn(org);
    expect(await tagsOf(repo!.uid)).toMatchObject([{ digest: digest("a") }]);
    expect(logged).toMatchObject([{ fields: { reason: expect.stringContaining("tag.update") } }]);
  });

  it("skips an event whose actor is not an identity (anonymous, or another name)", async () => {
    const { org, path } = await pushSetup();
    await post(envelope(event({ repository: path, tag: "v1", actor: "" }), event({ repository: path, tag: "v1", actor: "admin" })));
    expect(await reposIn(org)).toEqual([]);
    expect(logged.map((l) => l.fields["reason"])).toEqual(["its actor is not an identity", "its actor is not an identity"]);
  });
});

describe("values the catalog cannot use are skipped (200), so the registry's queue moves on", () => {
  it("skips NUL in the repository or the tag, an unknown digest algorithm, and a timestamp that is not RFC 3339", async () => {
    const { org, actor, path } = await pushSetup();
    const r = await post(
      envelope(
        event({ repository: `${path}\u0000x`, tag: "v1", actor }),
        event({ repository: path, tag: "v1\u0000", actor }),
        event({ repository: path, tag: "v1", digest: `sha512:${"a".repeat(128)}`, actor }),
        event({ repository: path, tag: "v1", actor, timestamp: "yesterday" }),
        event({ repository: path.toUpperCase(), tag: "v1", actor }),
        event({ repository: `${path}/${"x".repeat(300)}`, tag: "v1", actor }),
      ),
    );
    expect(r).toEqual({ status: 200, body: {} });
    expect(await reposIn(org)).toEqual([]);
    expect(logged.map((l) => l.fields["reason"])).toEqual([
      expect.stringContaining("not a registry path"),
      "its tag is not a valid tag name",
      "its digest is not sha256:<64 hex>",
      "its timestamp is not RFC 3339",
      expect.stringContaining("not a registry path"),
      expect.stringContaining("not a registry path"),
    ]);
    // What is logged of a long value is clipped.
    expect(String(logged[5]!.fields["repository"]).length).toBe(300);
  });
});

describe("the envelope", () => {
  it("is refused with 401, before its body is read, without the secret or with another one", async () => {
    const { org, actor, path } = await pushSetup();
    const body = envelope(event({ repository: path, tag: "v1", actor }));
    const refused = await fetch(url, { method: "POST", headers: { "content-type": EVENTS_TYPE }, body: JSON.stringify(body) });
    expect(refused.status).toBe(401);
    // Over HTTP/1.1 the connection closes after the answer rather than reading the body to drain it.
    expect(refused.headers.get("connection")).toBe("close");
    expect((await post(body, { secret: "wrong" })).status).toBe(401);
    expect((await post(body, { secret: `${SECRET}x` })).status).toBe(401);
    expect(await reposIn(org)).toEqual([]);
    // A body that never ends is answered all the same: nothing past the headers is read.
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(url, {
        method: "POST",
        headers: { "content-type": EVENTS_TYPE, authorization: "Bearer wrong", "content-length": String(10 * MAX_NOTIFICATION_BODY_BYTES) },
      });
      req.on("response", (res) => {
        resolve(res.statusCode ?? 0);
        res.resume();
        req.destroy();
      });
      req.on("error", reject);
      req.write("{");
    });
    expect(status).toBe(401);
  });

  it("is refused with 400 when it is not JSON, or not an envelope, and nothing of it is stored", async () => {
    const { org, actor, path } = await pushSetup();
    const good = event({ repository: path, tag: "v1", actor });
    expect((await post(undefined, { raw: "{not json" })).status).toBe(400);
    expect((await post(undefined, { raw: "" })).status).toBe(400);
    expect((await post([good])).status).toBe(400);
    expect((await post({ events: good })).status).toBe(400);
    expect((await post({ events: [good, "x"] })).status).toBe(400);
    const wrongType = event({ repository: path, tag: "v2", actor });
    (wrongType["target"] as Record<string, unknown>)["tag"] = 7;
    const r = await post(envelope(good, wrongType));
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body)).toContain("events[1].target.tag");
    expect((await post(envelope(good, { ...good, actor: "someone" }))).status).toBe(400);
    expect(await reposIn(org)).toEqual([]);
  });

  it("is refused with 400 over 1,000 events, and nothing of it is stored", async () => {
    const { org, actor, path } = await pushSetup();
    const many = Array.from({ length: 1001 }, (_, i) => event({ repository: path, tag: `t${i}`, actor }));
    expect((await post({ events: many })).status).toBe(400);
    expect(await reposIn(org)).toEqual([]);
  });

  it("is refused over 1 MiB: a declared length at once, a streamed body once the limit is passed, without reading the rest", async () => {
    const { org, actor, path } = await pushSetup();
    const declared = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${SECRET}`, "content-type": EVENTS_TYPE },
      body: JSON.stringify(envelope(event({ repository: path, tag: "v1", actor, id: "x".repeat(2 * MAX_NOTIFICATION_BODY_BYTES) }))),
    });
    expect(declared.status).toBe(400);
    expect(await declared.text()).toContain("larger than the limit");
    // Chunked, no length: the answer comes while the client is still sending, after about 1 MiB.
    let sent = 0;
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(url, { method: "POST", headers: { authorization: `Bearer ${SECRET}`, "content-type": EVENTS_TYPE } });
      req.on("response", (res) => {
        resolve(res.statusCode ?? 0);
        res.resume();
        req.destroy();
      });
      req.on("error", reject);
      const chunk = Buffer.alloc(64 * 1024, " ");
      const more = () => {
        while (sent < 4 * MAX_NOTIFICATION_BODY_BYTES) {
          sent += chunk.length;
          if (!req.write(chunk)) return void req.once("drain", more);
        }
      };
      more();
    });
    expect(status).toBe(400);
    expect(sent).toBeLessThan(4 * MAX_NOTIFICATION_BODY_BYTES);
    expect(await reposIn(org)).toEqual([]);
  });
});

describe("parseEventTime", () => {
  it("reads RFC 3339 as distribution writes it, to the millisecond", () => {
    expect(parseEventTime("2030-01-02T03:04:05.123456789Z")).toEqual(new Date("2030-01-02T03:04:05.123Z"));
    expect(parseEventTime("2030-01-02T03:04:05Z")).toEqual(new Date("2030-01-02T03:04:05.000Z"));
    expect(parseEventTime("2030-01-02T03:04:05.5-02:00")).toEqual(new Date("2030-01-02T05:04:05.500Z"));
    expect(parseEventTime("2030-01-02t03:04:05z")).toEqual(new Date("2030-01-02T03:04:05.000Z"));
  });

  it("reads nothing else", () => {
    for (const bad of [
      "",
      "2030-01-02",
      "2030-01-02T03:04:05",
      "2030-13-02T03:04:05Z",
      "2030-01-02T03:04:05.1234567890Z",
      "2030-01-02T03:04:05Z\u0000",
      "1700000000",
    ]) {
      expect(parseEventTime(bad)).toBeUndefined();
    }
  });
});

describe("loadRegistryNotificationSecret", () => {
  it("makes the secret once, sealed at rest, and gives every caller the same one", async () => {
    const box = new SecretBox(new Uint8Array(32).fill(7));
    const first = await loadRegistryNotificationSecret(handle.db, box);
    expect(first).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await loadRegistryNotificationSecret(handle.db, box)).toBe(first);
    const [row] = await handle.db
      .select()
      .from(schema.settings)
      .where(and(eq(schema.settings.key, NOTIFICATION_SECRET_SETTING)));
    expect(SecretBox.isSealed(row!.value)).toBe(true);
    expect(row!.value).not.toContain(first);
    expect(box.open(row!.value, settingContext(NOTIFICATION_SECRET_SETTING))).toBe(first);
  });
});
