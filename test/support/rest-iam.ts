import { expect } from "vitest";
import type { JsonObject, RestResponse, RestClient } from "./clients.js";

// REST fixtures and error readers shared by the IAM end-to-end suites.

/** A REST timestamp: UTC, three fractional digits. */
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A google.rpc detail of a REST error body, by short type name (BadRequest, PreconditionFailure, ...). */
export function restDetail(res: RestResponse, type: string): JsonObject | undefined {
  const details = (res.body["details"] ?? []) as JsonObject[];
  return details.find((d) => d["@type"] === `type.googleapis.com/google.rpc.${type}`);
}

/** Asserts an INVALID_ARGUMENT (400, code 3) naming `field`; returns the violation's description. */
export function expectInvalid(res: RestResponse, field: string): string {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body["code"]).toBe(3);
  const violations = (restDetail(res, "BadRequest")?.["fieldViolations"] ?? []) as JsonObject[];
  expect(violations.map((v) => v["field"])).toEqual([field]);
  expect(res.body["message"]).toBe(`Invalid argument: ${field}: ${violations[0]?.["description"]}`);
  return violations[0]?.["description"] as string;
}

/** Asserts a FAILED_PRECONDITION (400, code 9) of `type`; returns its description. */
export function expectPrecondition(res: RestResponse, type: string): string {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body["code"]).toBe(9);
  const violations = (restDetail(res, "PreconditionFailure")?.["violations"] ?? []) as JsonObject[];
  expect(violations[0]?.["type"]).toBe(type);
  return violations[0]?.["description"] as string;
}

/** The 200 body of a call, failing with the body otherwise. */
export async function ok(p: Promise<RestResponse>): Promise<JsonObject> {
  const res = await p;
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

export const createGroup = (call: RestClient, name: string, parent?: string) =>
  ok(call("POST", parent ? `/iam/v2beta1/groups/${parent}` : "/iam/v2beta1/groups", { name }));

export const createIdentity = (call: RestClient, parent: string, body: JsonObject) =>
  ok(call("POST", `/iam/v2beta1/identities/${parent}`, body));

export const createRole = (call: RestClient, parent: string, body: JsonObject) => ok(call("POST", `/iam/v2beta1/roles/${parent}`, body));

export const bind = (call: RestClient, parent: string, identityUid: string, roleUid: string) =>
  call("POST", `/iam/v2beta1/roleBindings/${parent}`, { identityUid, roleUid });

/**
 * The group `groupUid` holds the resource at `path` (REST path without the
 * uid) and only it: deleting the group is RESOURCE_NOT_EMPTY naming `label`;
 * deleting the resource returns {} and is then 404 on GET and DELETE; the
 * group can then be deleted.
 */
export async function expectHeldUntilDeleted(call: RestClient, groupUid: string, resourcePath: string, label: string): Promise<void> {
  expect(expectPrecondition(await call("DELETE", `/iam/v2beta1/groups/${groupUid}`), "RESOURCE_NOT_EMPTY")).toContain(label);
  expect(await ok(call("DELETE", resourcePath))).toEqual({});
  expect((await call("GET", resourcePath)).status).toBe(404);
  expect((await call("DELETE", resourcePath)).status).toBe(404);
  await ok(call("DELETE", `/iam/v2beta1/groups/${groupUid}`));
}

/** The bootstrap identity's uid: the `sub` of the admin token. */
export function bootstrapIdentityUid(adminToken: string): string {
  const claims = JSON.parse(Buffer.from(adminToken.split(".")[1] ?? "", "base64url").toString()) as { sub: string };
  return claims.sub;
}

/** A uid string field of a JSON object. */
export const uidOf = (o: JsonObject): string => o["uid"] as string;
