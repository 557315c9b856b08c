import { create } from "@bufbuild/protobuf";
import { ClaimMatchSchema, type ClaimMatch } from "../../../gen/platform/iam/v2beta1/identities_pb.js";

/** A claim match as six strings, "" where a member is not in use: the table's columns, v1's shape. */
export interface ClaimFields {
  issuer: string;
  subject: string;
  issuerPattern: string;
  subjectPattern: string;
  audience: string;
  audiencePattern: string;
}

/** The members in use of `c`, "" for the others. */
export function claimFields(c: ClaimMatch | undefined): ClaimFields {
  const member = (o: { case: string | undefined; value?: string } | undefined, name: string) => (o?.case === name ? (o.value ?? "") : "");
  return {
    issuer: member(c?.iss, "issuer"),
    subject: member(c?.sub, "subject"),
    issuerPattern: member(c?.iss, "issuerPattern"),
    subjectPattern: member(c?.sub, "subjectPattern"),
    audience: member(c?.aud, "audience"),
    audiencePattern: member(c?.aud, "audiencePattern"),
  };
}

/**
 * The claim match of six strings, with only the members in use set (an empty
 * string is a member not in use), so that it is answered with no empty
 * sibling (docs/design.md, "Claim match"). Where both of a pair are given (a
 * v1 body, a row stored before the pairs were oneofs), the exact value is the
 * one kept, and the one the exchange matches (token-exchange.ts).
 */
export function claimMatchOf(f: Partial<ClaimFields>): ClaimMatch {
  const pick = <E extends string, P extends string>(exact: E, e: string | undefined, pattern: P, p: string | undefined) =>
    e ? ({ case: exact, value: e } as const) : p ? ({ case: pattern, value: p } as const) : { case: undefined };
  return create(ClaimMatchSchema, {
    iss: pick("issuer", f.issuer, "issuerPattern", f.issuerPattern),
    sub: pick("subject", f.subject, "subjectPattern", f.subjectPattern),
    aud: pick("audience", f.audience, "audiencePattern", f.audiencePattern),
  });
}
