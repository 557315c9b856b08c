import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { principalKey } from "../../caller/index.js";
import { callerGrants } from "../../authz/index.js";
import { count, eq, inArray } from "drizzle-orm";
import {
  SubscriptionSchema,
  Subscription_State,
  SubscriptionsService,
  type Subscription,
} from "../../../gen/platform/events/v2beta1/subscriptions_pb.js";
import type { SecretBox } from "../../crypto/index.js";
import { newChildUid, organizationOf, parentOf, schema, type Executor } from "../../db/index.js";
import { atOrBelow } from "../../list/scope.js";
import { EgressError, type Egress } from "../../egress/index.js";
import { invalidArgument, notFound, permissionDenied, quotaExceeded, unauthenticated } from "../../errors/index.js";
import { subscriptionSecretContext } from "../../events/index.js";
import { requireField } from "../resource-store.js";
import { defineResource, resourceService } from "../resource.js";
import { toTimestamp } from "../timestamps.js";
import { checkDescription } from "../validation.js";

const { subscriptions, eventDeliveries, groups } = schema;
const MAX_TYPES = 50;
const MAX_TYPE_LENGTH = 200;
const MAX_SINK_LENGTH = 2048;
const TYPE_PREFIX = /^[a-z0-9_.]+$/;

/**
 * Subscriptions one organization may hold, in its root group and every group below. Each event is
 * written with a delivery for every matching subscription of its group and of the groups above
 * it, in the change's transaction, so this bounds what one change costs and what one
 * organization can put in every replica's delivery queue. A limit per group would not: an owner
 * could nest groups and give each its own share.
 */
export const MAX_SUBSCRIPTIONS_PER_ORGANIZATION = 50;

/** Refuses a subscription beyond its organization's limit. Run in the create's transaction. */
async function assertRoomFor(tx: Executor, group: string): Promise<void> {
  const organization = organizationOf(group);
  // Creates in one organization take turns on its root group's row (FOR NO KEY UPDATE, which the
  // KEY SHARE locks of other creates do not wait for), so two cannot both find room for the last one.
  const [root] = await tx.select({ uid: groups.uid }).from(groups).where(eq(groups.uid, organization)).for("no key update");
  if (!root) throw notFound("group", group);
  const [row] = await tx.select({ n: count() }).from(subscriptions).where(atOrBelow(subscriptions.parentUid, organization));
  if ((row?.n ?? 0) >= MAX_SUBSCRIPTIONS_PER_ORGANIZATION) {
    throw quotaExceeded(
      `organization ${organization}`,
      `an organization holds at most ${MAX_SUBSCRIPTIONS_PER_ORGANIZATION} subscriptions, in all its groups: delete one first (a subscription's types can name several event type prefixes)`,
    );
  }
}

/** A Standard Webhooks signing secret: `whsec_` and 32 random bytes in base64. */
function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}

/** Fills each subscription's delivery counts in one query for the page. */
async function withDeliveryCounts(db: Executor, page: Subscription[]): Promise<Subscription[]> {
  if (!page.length) return page;
  const rows = await db
    .select({ uid: eventDeliveries.subscriptionUid, state: eventDeliveries.state, n: count() })
    .from(eventDeliveries)
    .where(
      inArray(
        eventDeliveries.subscriptionUid,
        page.map((s) => s.uid),
      ),
    )
    .groupBy(eventDeliveries.subscriptionUid, eventDeliveries.state);
  const byUid = new Map(page.map((s) => [s.uid, s]));
  for (const r of rows) {
    const s = byUid.get(r.uid);
    if (!s) continue;
    const n = BigInt(r.n);
    if (r.state === "delivered") s.deliveredCount = n;
    else if (r.state === "pending") s.pendingCount = n;
    else if (r.state === "failed") s.failedCount = n;
  }
  return page;
}

/** The sink must be a URL the egress guard would send to (https, and a public address when it is an IP literal). */
function checkSink(egress: Egress, sink: string): void {
  if (!sink) throw invalidArgument("sink", "is required");
  if (sink.length > MAX_SINK_LENGTH) throw invalidArgument("sink", `must be at most ${MAX_SINK_LENGTH} characters`);
  try {
    egress.checkUrl(sink);
  } catch (e) {
    if (e instanceof EgressError) throw invalidArgument("sink", `is not a URL events may be sent to: ${e.message}`);
    throw e;
  }
}

function validateSubscription(egress: Egress, s: Subscription): void {
  checkSink(egress, s.sink);
  if (s.types.length > MAX_TYPES) throw invalidArgument("types", `at most ${MAX_TYPES} type prefixes`);
  s.types.forEach((t, i) => {
    if (!t || t.length > MAX_TYPE_LENGTH || !TYPE_PREFIX.test(t)) {
      throw invalidArgument(
        `types[${i}]`,
        `must be an event type or a prefix of one (lower-case letters, digits, "_" and ".", at most ${MAX_TYPE_LENGTH} characters)`,
      );
    }
  });
  checkDescription(s.description);
}

export const subscriptionResource = defineResource({
  kind: "subscription",
  table: subscriptions,
  schema: SubscriptionSchema,
  groupContent: "subscriptions",
  decorate: withDeliveryCounts,
  toMessage: (row) =>
    create(SubscriptionSchema, {
      uid: row.uid,
      sink: row.sink,
      types: row.types,
      description: row.description,
      lastError: row.lastError,
      lastErrorTime: row.lastErrorTime ? toTimestamp(row.lastErrorTime) : undefined,
      lastDeliveryTime: row.lastDeliveryTime ? toTimestamp(row.lastDeliveryTime) : undefined,
      state: row.state === "stopped" ? Subscription_State.STOPPED : Subscription_State.ACTIVE,
      creator: row.creatorUid ?? "",
      createTime: toTimestamp(row.createTime),
      updateTime: toTimestamp(row.updateTime),
    }),
  validate: (s: Subscription, deps) => validateSubscription(deps.egress, s),
  toColumns: (s) => ({ sink: s.sink, types: [...new Set(s.types)], description: s.description }),
  missingReference: "group",
  // Types that match no event: a subscription made as an example queues no delivery.
  example: () => ({ sink: "https://example.com/hook", types: ["platform.example.never."] }),
});

export const subscriptionsService = resourceService(SubscriptionsService, subscriptionResource, (store, ctx) => ({
  async createSubscription(req, context) {
    const parent = requireField(req.parent, "parent");
    mayReceiveEvents(context, parent);
    const uid = newChildUid(parent);
    const secret = newSigningSecret();
    const input = req.subscription ?? create(SubscriptionSchema);
    // A bad request is told so before a full organization is (the store validates it again, cheaply).
    store.validate(input);
    const values = { uid, parentUid: parent, secret: sealSecret(ctx.secrets, uid, secret), creatorUid: callerUid(context) };
    const created = await ctx.db.transaction(async (tx) => {
      await assertRoomFor(tx, parent);
      return store.create(input, values, context, tx);
    });
    // The only answer that carries the secret (never the event's data: that is rendered from the row).
    created.secret = secret;
    return created;
  },

  async updateSubscription(req, context) {
    const patch = req.subscription ?? create(SubscriptionSchema);
    const uid = requireField(patch.uid, "subscription.uid");
    mayReceiveEvents(context, parentOf(uid));
    // Whoever changes it vouches for it now: it sends for them, and a stopped one starts again.
    const rehomed = { creatorUid: callerUid(context), state: "active" };
    return store.update(uid, patch, req.updateMask, context, () => rehomed);
  },
}));

/**
 * A subscription receives every event of its group's subtree, so whoever points one at a sink
 * must be allowed to read those events: `events.list` there, beside the subscription capability.
 */
function mayReceiveEvents(context: HandlerContext, group: string): void {
  if (!callerGrants(context).holdsAt("events.list", group)) {
    throw permissionDenied(`a subscription sends the events of ${group}: that needs events.list there too`);
  }
}

/** The identity a subscription made or changed by this call sends for. */
function callerUid(context: HandlerContext): string {
  const principal = context.values.get(principalKey);
  if (!principal) throw unauthenticated("missing credentials");
  return principal.identityUid;
}

function sealSecret(secrets: SecretBox, uid: string, secret: string): string {
  return secrets.seal(secret, subscriptionSecretContext(uid));
}
