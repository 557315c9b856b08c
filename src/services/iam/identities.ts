import { create } from "@bufbuild/protobuf";
import { eq, sql, type SQL } from "drizzle-orm";
import {
  IdentitiesService,
  IdentitySchema,
  type Identity,
  type ListIdentitiesRequest,
} from "../../../gen/platform/iam/v2beta1/identities_pb.js";
import { assertWithinCeiling, callerGrants, Grants } from "../../authz/index.js";
import { newChildUid, parentOf, schema, type Executor } from "../../db/index.js";
import { claimFields, claimMatchOf, type ClaimFields } from "./claim-match.js";
import { issuerPatternOrigin } from "./claim-pattern.js";
import { invalidArgument } from "../../errors/index.js";
import { CREATOR_DELETED, stopSubscriptions } from "../../events/index.js";
import type { ExtraFilters } from "../../list/index.js";
import { requireField } from "../resource-store.js";
import { defineResource, resourceService } from "../resource.js";
import { removeBindingsWith } from "../../bindings/index.js";
import { toTimestamp } from "../timestamps.js";
import { checkByteLength, checkDescription, checkLength, checkName, checkPattern } from "../validation.js";

const MAX_CLAIM_LENGTH = 1024;
const MAX_PATTERN_LENGTH = 512;

const t = schema.identities;

function validateClaimMatch(c: ClaimFields): void {
  // issuer and subject share one index entry: bytes, not characters, keep it under PostgreSQL's limit.
  for (const [field, value] of [
    ["issuer", c.issuer],
    ["subject", c.subject],
    ["audience", c.audience],
  ] as const) {
    checkLength(value, `claim_match.${field}`, MAX_CLAIM_LENGTH);
    checkByteLength(value, `claim_match.${field}`, MAX_CLAIM_LENGTH);
  }
  // Stored as given; matching is always against the whole claim.
  checkPattern(c.issuerPattern, "claim_match.issuer_pattern", MAX_PATTERN_LENGTH);
  // The exchange contacts the issuer a token names: the pattern must fix where that is.
  if (c.issuerPattern && !issuerPatternOrigin(c.issuerPattern)) {
    throw invalidArgument(
      "claim_match.issuer_pattern",
      "must fix the scheme, host and port: start with them as literal text, then / or nothing more (e.g. https://token\\.actions\\.githubusercontent\\.com/.*)",
    );
  }
  checkPattern(c.subjectPattern, "claim_match.subject_pattern", MAX_PATTERN_LENGTH);
  checkPattern(c.audiencePattern, "claim_match.audience_pattern", MAX_PATTERN_LENGTH);
}

export const identityResource = defineResource({
  kind: "identity",
  table: t,
  schema: IdentitySchema,
  groupContent: "identities",
  listFilters: claimFilters,
  toMessage: (row) =>
    create(IdentitySchema, {
      uid: row.uid,
      name: row.name,
      description: row.description,
      lastSeenTime: toTimestamp(row.lastSeenTime),
      claimMatch: claimMatchOf({
        issuer: row.claimIssuer,
        subject: row.claimSubject,
        issuerPattern: row.claimIssuerPattern,
        subjectPattern: row.claimSubjectPattern,
        audience: row.claimAudience,
        audiencePattern: row.claimAudiencePattern,
      }),
      createTime: toTimestamp(row.createTime),
      updateTime: toTimestamp(row.updateTime),
    }),
  validate: (i: Identity) => {
    checkName(i.name);
    checkDescription(i.description);
    validateClaimMatch(claimFields(i.claimMatch));
  },
  toColumns: (i) => {
    const c = claimFields(i.claimMatch);
    return {
      name: i.name,
      description: i.description,
      claimIssuer: c.issuer,
      claimSubject: c.subject,
      claimIssuerPattern: c.issuerPattern,
      claimSubjectPattern: c.subjectPattern,
      claimAudience: c.audience,
      claimAudiencePattern: c.audiencePattern,
    };
  },
  missingReference: "group",
  beforeDelete: async (tx, row, deleting) => {
    // The subscriptions it made send for it: they stop with it, before the events of its going are
    // written (docs/design.md, "Webhooks").
    await stopSubscriptions(tx, sql`creator_uid = ${row.uid}`, CREATOR_DELETED, deleting.events.now());
    // Its bindings go with it (the foreign keys cascade): each is recorded as deleted first.
    await removeBindingsWith(tx, deleting.events, deleting.call, { identity: row.uid });
  },
  example: ({ unique }) => ({ name: `identity-${unique}` }),
});

/** claim_match.issuer / claim_match.subject: exact matches; the other claim fields cannot be filtered on. */
function claimFilters(req: ListIdentitiesRequest): ExtraFilters {
  const c = claimFields(req.claimMatch);
  for (const [field, value] of [
    ["issuer_pattern", c.issuerPattern],
    ["subject_pattern", c.subjectPattern],
    ["audience", c.audience],
    ["audience_pattern", c.audiencePattern],
  ]) {
    if (value) throw invalidArgument(`claim_match.${field}`, "cannot be filtered on; use claim_match.issuer or claim_match.subject");
  }
  const where: SQL[] = [];
  if (c.issuer) where.push(eq(t.claimIssuer, c.issuer));
  if (c.subject) where.push(eq(t.claimSubject, c.subject));
  return { where, key: { issuer: c.issuer, subject: c.subject } };
}

/**
 * Changing claimMatch changes who may assume the identity, and with it
 * everything the identity holds: the caller needs role_bindings.create at the
 * identity's group and every capability of every role bound to it, where it
 * is bound (docs/security.md, "Grant ceiling").
 */
async function assertMayRetarget(tx: Executor, grants: Grants, identityUid: string): Promise<void> {
  const group = parentOf(identityUid);
  assertWithinCeiling(grants, ["role_bindings.create"], group, "changing who may assume the identity");
  const held = await Grants.load(tx, identityUid);
  for (const binding of held.grants) {
    assertWithinCeiling(grants, binding.capabilities, binding.groupUid ?? "", "changing who may assume the identity");
  }
}

// Delete is the shared one: role_bindings.identity_uid cascades, so the bindings go in the same statement.
export const identitiesService = resourceService(IdentitiesService, identityResource, (store, ctx) => ({
  createIdentity(req, context) {
    const parent = requireField(req.parent, "parent");
    // Seen at the instant it was created: one clock reading for all three.
    const now = ctx.clock();
    return store.create(
      req.identity ?? create(IdentitySchema),
      {
        uid: newChildUid(parent),
        parentUid: parent,
        lastSeenTime: now,
        createTime: now,
        updateTime: now,
      },
      context,
    );
  },

  updateIdentity(req, context) {
    const grants = callerGrants(context);
    const uid = requireField(req.identity?.uid ?? "", "identity.uid");
    return store.update(uid, req.identity ?? create(IdentitySchema), req.updateMask, context, async (tx, next, current) => {
      // Compared as what is stored: a member given empty is one not in use.
      const [a, b] = [claimFields(next.claimMatch), claimFields(current.claimMatch)];
      const unchanged = (Object.keys(a) as (keyof ClaimFields)[]).every((k) => a[k] === b[k]);
      if (!unchanged) await assertMayRetarget(tx, grants, uid);
      return {};
    });
  },
}));
