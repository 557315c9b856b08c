import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { create, type DescMethod, type JsonValue } from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createContextValues } from "@connectrpc/connect";
import { and, eq, type SQL } from "drizzle-orm";
import { RepoSchema, ReposService } from "../../gen/platform/registry/v2beta1/repos_pb.js";
import { TagSchema, TagsService } from "../../gen/platform/registry/v2beta1/tags_pb.js";
import { bearerToken } from "../auth/index.js";
import { principalKey } from "../caller/index.js";
import type { Grants } from "../authz/index.js";
import type { SecretBox } from "../crypto/index.js";
import { loadSealedSetting, newChildUid, schema, UID_SHAPES, type Database, type Transaction } from "../db/index.js";
import { invalidArgument, unauthenticated } from "../errors/index.js";
import type { ChangeCall, EventRecorder } from "../events/index.js";
import { BodyReadError, BodyTooLargeError, readBody } from "../http/body.js";
import { sendJson } from "../http/response.js";
import type { NodeRequest, NodeResponse, Route } from "../http/types.js";
import { ResourceStore, type StoreContext } from "../services/resource-store.js";
import { repoResource } from "../services/registry/repos.js";
import { tagResource } from "../services/registry/tags.js";
import { parseRegistryPath } from "./paths.js";

// The registry's notifications feed the catalog (docs/design.md, "The image registry"): distribution
// POSTs envelopes of events; manifest pushes and deletes become repos and tags through the same
// store as the API, with the same events, made by the identity the registry token named.

/** The sealed setting holding the secret the registry sends as `Authorization: Bearer <secret>`. */
/** Below the auth URL. */
export const REGISTRY_NOTIFICATIONS_PATH = "/registry/notifications";
export const NOTIFICATION_SECRET_SETTING = "registry.notifications_secret";
/** The largest envelope read; distribution sends one or a few events per request. */
export const MAX_NOTIFICATION_BODY_BYTES = 1024 * 1024;
export const MAX_NOTIFICATION_EVENTS = 1000;

/** Media types of manifests and indexes: a push of one of these is an image (or index) pushed, not a blob. */
export const MANIFEST_MEDIA_TYPES: ReadonlySet<string> = new Set([
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.docker.distribution.manifest.v2+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
]);

/** The shared secret of the notifications endpoint: made once, sealed at rest, the same on every replica. */
export function loadRegistryNotificationSecret(db: Database, secrets: SecretBox): Promise<string> {
  // base64url: a valid bearer token (bearerToken's alphabet) and a valid YAML scalar in the registry's configuration.
  return loadSealedSetting(db, secrets, NOTIFICATION_SECRET_SETTING, () => randomBytes(32).toString("base64url"));
}

export interface RegistryNotificationsDeps extends StoreContext {
  db: Database;
  clock: () => Date;
  events: EventRecorder;
  /** The grants of an identity (the server's GrantsCache.get). */
  grantsOf: (identityUid: string) => Promise<Grants>;
  /** The secret from loadRegistryNotificationSecret. */
  secret: string;
  /** Told of each event that was not applied, and why (a warning in the server's log). */
  log: (message: string, fields: Record<string, JsonValue>) => void;
}

/** One registry event, as far as the catalog reads it (fields checked for type only). */
interface RegistryEvent {
  id?: string;
  timestamp?: string;
  action?: string;
  target?: { mediaType?: string; digest?: string; repository?: string; tag?: string };
  actor?: { name?: string };
}

/** What became of one event. */
type Outcome = { applied: boolean } | { skipped: string };

const TAG_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;
const DIGEST_PATTERN = /^sha256:[0-9a-f]{64}$/;
// RFC 3339 as distribution writes it (Go's RFC3339Nano): fractions of up to nine digits.
const RFC3339 = /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/;
/** How often an event is tried again when a concurrent write (another replica, the API) collided with it. */
const ATTEMPTS = 3;
/** Strings from the registry are clipped to this in the log. */
const LOGGED_CHARS = 300;

/** The event's time to the millisecond (the catalog's precision), or undefined when it is not RFC 3339. */
export function parseEventTime(text: string): Date | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const ms = (m[3] ?? "").slice(0, 3).padEnd(3, "0");
  const time = new Date(`${m[1]}T${m[2]}.${ms}${m[4]!.toUpperCase()}`);
  return Number.isNaN(time.getTime()) ? undefined : time;
}

/** Compared as equal-length hashes: the time taken says nothing of the secret. */
function sameSecret(given: string, secret: string): boolean {
  const hash = (s: string) => createHash("sha256").update(s).digest();
  return timingSafeEqual(hash(given), hash(secret));
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The envelope's events, or INVALID_ARGUMENT naming the first field of the wrong type. Checked whole
 * before anything is written: a bad envelope stores nothing. Only types are checked here; an event
 * whose values the catalog cannot use is skipped later, so it never holds up the registry's queue.
 */
export function parseEnvelope(body: Uint8Array): RegistryEvent[] {
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(body).toString("utf8"));
  } catch {
    throw invalidArgument("body", "is not JSON");
  }
  if (!isObject(doc) || !Array.isArray(doc["events"])) throw invalidArgument("events", "must be an array (a notifications envelope)");
  const events = doc["events"] as unknown[];
  if (events.length > MAX_NOTIFICATION_EVENTS) throw invalidArgument("events", `holds more than ${MAX_NOTIFICATION_EVENTS} events`);
  const strings = (o: Record<string, unknown>, path: string, keys: string[]) => {
    for (const k of keys) if (o[k] !== undefined && typeof o[k] !== "string") throw invalidArgument(`${path}.${k}`, "must be a string");
  };
  const object = (o: Record<string, unknown>, path: string, key: string): Record<string, unknown> | undefined => {
    const v = o[key];
    if (v === undefined) return undefined;
    if (!isObject(v)) throw invalidArgument(`${path}.${key}`, "must be an object");
    return v;
  };
  events.forEach((e, i) => {
    const path = `events[${i}]`;
    if (!isObject(e)) throw invalidArgument(path, "must be an object");
    strings(e, path, ["id", "timestamp", "action"]);
    const target = object(e, path, "target");
    if (target) strings(target, `${path}.target`, ["mediaType", "digest", "repository", "tag", "url"]);
    const actor = object(e, path, "actor");
    if (actor) strings(actor, `${path}.actor`, ["name"]);
    object(e, path, "request");
    object(e, path, "source");
  });
  return events as RegistryEvent[];
}

/**
 * `POST {auth URL}/registry/notifications`: the endpoint of distribution's `notifications.endpoints`.
 * Answers 200 once every event of the envelope was applied or skipped; a failure of the database
 * answers 500, and the registry sends the envelope again (applying an event twice changes nothing).
 */
export function registryNotificationsRoute(deps: RegistryNotificationsDeps): Route {
  const repos = new ResourceStore(repoResource, deps);
  const tags = new ResourceStore(tagResource, deps);
  const { groups } = schema;
  const digestOnly = create(FieldMaskSchema, { paths: ["digest"] });

  /** A change made by `actor` (the identity the registry token was issued to), recorded as `method` declares. */
  const callBy = (actor: string, method: DescMethod): ChangeCall => {
    const values = createContextValues();
    values.set(principalKey, { identityUid: actor, audience: "", expiry: deps.clock() });
    return { method, values };
  };

  const skip = (event: RegistryEvent, reason: string): void => {
    const clip = (s: string | undefined) => (s ?? "").slice(0, LOGGED_CHARS);
    deps.log("registry notification skipped", {
      reason,
      id: clip(event.id),
      action: clip(event.action),
      repository: clip(event.target?.repository),
      tag: clip(event.target?.tag),
      actor: clip(event.actor?.name),
    });
  };

  /** What every event the catalog reads must carry, checked; or why it cannot be used. */
  function basics(event: RegistryEvent): { time: Date; groupUid: string; repoName: string; actor: string } | string {
    const time = parseEventTime(event.timestamp ?? "");
    if (!time) return "its timestamp is not RFC 3339";
    const path = parseRegistryPath(event.target?.repository ?? "");
    if (!path) return "its repository is not a registry path of the catalog (<group uid with - for />/<repo name>)";
    const actor = event.actor?.name ?? "";
    if (!UID_SHAPES.identity.test(actor)) return "its actor is not an identity";
    return { time, actor, ...path };
  }

  async function push(tx: Transaction, event: RegistryEvent, grants: Grants): Promise<Outcome> {
    const b = basics(event);
    if (typeof b === "string") return { skipped: b };
    const digest = event.target?.digest ?? "";
    const tag = event.target?.tag ?? "";
    if (!DIGEST_PATTERN.test(digest)) return { skipped: "its digest is not sha256:<64 hex>" };
    if (tag && !TAG_PATTERN.test(tag)) return { skipped: "its tag is not a valid tag name" };
    const [group] = await tx.select({ uid: groups.uid }).from(groups).where(eq(groups.uid, b.groupUid));
    if (!group) return { skipped: "its group does not exist" };
    let applied = false;
    let [repo] = await tx
      .select({ uid: schema.repos.uid })
      .from(schema.repos)
      .where(and(eq(schema.repos.parentUid, b.groupUid), eq(schema.repos.name, b.repoName)));
    if (!repo) {
      // Checked before anything is written: a push the actor could not make leaves no repo behind.
      const needed = tag ? ["repo.create", "tag.create"] : ["repo.create"];
      const missing = grants.missingAt(needed, b.groupUid);
      if (missing.length)
        return { skipped: `its actor does not hold ${missing.join(", ")} at ${b.groupUid} (it claims a group it may not push to)` };
      const made = await repos.create(
        create(RepoSchema, { name: b.repoName }),
        { uid: newChildUid(b.groupUid), parentUid: b.groupUid },
        callBy(b.actor, ReposService.method.createRepo),
        tx,
      );
      repo = { uid: made.uid };
      applied = true;
    }
    if (!tag) return { applied };
    const { tags: t } = schema;
    const [current] = await tx
      .select({ uid: t.uid, digest: t.digest, sourceTime: t.sourceTime })
      .from(t)
      .where(and(eq(t.parentUid, repo.uid), eq(t.name, tag)))
      .for("update");
    if (!current) {
      if (!grants.holdsAt("tag.create", repo.uid)) return { skipped: `its actor does not hold tag.create at ${repo.uid}` };
      await tags.create(
        create(TagSchema, { name: tag, digest }),
        { uid: newChildUid(repo.uid), parentUid: repo.uid, sourceTime: b.time },
        callBy(b.actor, TagsService.method.createTag),
        tx,
      );
      return { applied: true };
    }
    // Not newer than what set the tag: a retry, or a late event a newer one already overtook.
    if (current.sourceTime && b.time.getTime() <= current.sourceTime.getTime()) return { applied };
    if (!grants.holdsAt("tag.update", repo.uid)) return { skipped: `its actor does not hold tag.update at ${repo.uid}` };
    if (current.digest === digest) {
      // The same image again: nothing changes but the time an older event is measured against.
      await tx.update(t).set({ sourceTime: b.time }).where(eq(t.uid, current.uid));
      return { applied };
    }
    await tags.update(
      current.uid,
      create(TagSchema, { digest }),
      digestOnly,
      callBy(b.actor, TagsService.method.updateTag),
      () => ({ sourceTime: b.time }),
      tx,
    );
    return { applied: true };
  }

  async function remove(tx: Transaction, event: RegistryEvent, grants: Grants): Promise<Outcome> {
    const b = basics(event);
    if (typeof b === "string") return { skipped: b };
    // A manifest (or blob) delete names a digest, a tag delete a tag.
    const digest = event.target?.digest ?? "";
    const tag = event.target?.tag ?? "";
    if (digest && !DIGEST_PATTERN.test(digest)) return { applied: false }; // no tag holds such a digest
    if (tag && !TAG_PATTERN.test(tag)) return { skipped: "its tag is not a valid tag name" };
    if (!digest && !tag) return { skipped: "it names neither a digest nor a tag" };
    const [repo] = await tx
      .select({ uid: schema.repos.uid })
      .from(schema.repos)
      .where(and(eq(schema.repos.parentUid, b.groupUid), eq(schema.repos.name, b.repoName)));
    if (!repo) return { applied: false };
    const { tags: t } = schema;
    const where: SQL[] = [eq(t.parentUid, repo.uid)];
    if (digest) where.push(eq(t.digest, digest));
    if (tag) where.push(eq(t.name, tag));
    const rows = await tx
      .select({ uid: t.uid, sourceTime: t.sourceTime })
      .from(t)
      .where(and(...where))
      .for("update");
    if (!rows.length) return { applied: false };
    if (!grants.holdsAt("tag.delete", repo.uid)) return { skipped: `its actor does not hold tag.delete at ${repo.uid}` };
    let applied = false;
    for (const row of rows) {
      // A tag set by a newer push than this delete stays.
      if (row.sourceTime && b.time.getTime() < row.sourceTime.getTime()) continue;
      await tags.delete(row.uid, callBy(b.actor, TagsService.method.deleteTag), tagResource.beforeDelete, tx);
      applied = true;
    }
    return { applied };
  }

  /** Applies one event in a transaction of its own; collisions with concurrent writes are tried again. */
  async function apply(event: RegistryEvent): Promise<void> {
    const action =
      event.action === "push" && MANIFEST_MEDIA_TYPES.has(event.target?.mediaType ?? "")
        ? push
        : event.action === "delete"
          ? remove
          : undefined;
    // Blob pushes, pulls and mounts do not change the catalog.
    if (!action) return;
    const actor = event.actor?.name ?? "";
    const grants = UID_SHAPES.identity.test(actor) ? await deps.grantsOf(actor) : undefined;
    for (let attempt = 1; ; attempt++) {
      let outcome: Outcome;
      try {
        outcome = grants ? await deps.db.transaction((tx) => action(tx, event, grants)) : { skipped: "its actor is not an identity" };
      } catch (e) {
        // ALREADY_EXISTS / NOT_FOUND: another writer made or removed the repo or tag meanwhile; the
        // next attempt sees it. Other refusals of the store (INVALID_ARGUMENT) would refuse every
        // time: skipped, so the registry's queue moves on.
        if (!(e instanceof ConnectError)) throw e;
        if ((e.code === Code.AlreadyExists || e.code === Code.NotFound) && attempt < ATTEMPTS) continue;
        outcome = { skipped: `the catalog refused it: ${e.rawMessage}` };
      }
      if ("skipped" in outcome) skip(event, outcome.skipped);
      else if (outcome.applied) deps.events.announce();
      return;
    }
  }

  return {
    methods: ["POST"],
    async serve(req: NodeRequest, res: NodeResponse): Promise<void> {
      const given = bearerToken(typeof req.headers["authorization"] === "string" ? req.headers["authorization"] : null);
      if (!given || !sameSecret(given, deps.secret)) {
        // The body is never read: over HTTP/1.1 the connection closes instead of draining it.
        if (req.httpVersionMajor === 1) res.setHeader("connection", "close");
        throw unauthenticated(
          "the registry notifications endpoint takes the secret of the registry's configuration as a bearer token",
          given !== undefined,
        );
      }
      let body: Uint8Array;
      try {
        body = await readBody(req, MAX_NOTIFICATION_BODY_BYTES);
      } catch (e) {
        if (e instanceof BodyTooLargeError) {
          if (req.httpVersionMajor === 1) res.setHeader("connection", "close");
          throw invalidArgument("body", `is larger than the limit of ${MAX_NOTIFICATION_BODY_BYTES} bytes`);
        }
        if (e instanceof BodyReadError) return; // the registry went away; it sends the envelope again
        throw e;
      }
      const events = parseEnvelope(body);
      // In order: a later event of the envelope may depend on an earlier one (a push, then a re-tag).
      for (const event of events) await apply(event);
      sendJson(res, 200, {}, { "cache-control": "no-store" });
    },
  };
}
