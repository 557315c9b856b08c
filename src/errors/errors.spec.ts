import { create, createRegistry, toBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  PreconditionFailureSchema,
  QuotaFailureSchema,
  ResourceInfoSchema,
  file_google_rpc_error_details,
} from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";
import {
  alreadyExists,
  clip,
  codeName,
  errorDomainForService,
  failedPrecondition,
  httpStatusFromCode,
  internalError,
  invalidArgument,
  invalidArguments,
  notFound,
  outOfRange,
  permissionDenied,
  rateLimited,
  toConnectError,
  toStatus,
  toStatusJson,
  unauthenticated,
  unavailable,
  unimplemented,
  withErrorInfo,
} from "./index.js";
import { statusFromBinary } from "./status.js";

// The error vocabulary (docs/design.md, "Errors"): what each constructor puts in a
// google.rpc.Status, and how ErrorInfo is added on the way out. How errors are logged is
// src/server/error-serializer.spec.ts.

const DOMAIN = "iam.platform.example";
const registry = createRegistry(file_google_rpc_error_details);

/** The error as a client decodes it: the Status with every detail unpacked. */
function decoded(err: ConnectError) {
  const status = statusFromBinary(toBinary(StatusSchema, toStatus(err)));
  return {
    code: status.code,
    message: status.message,
    details: status.details.map((d) => ({ typeUrl: d.typeUrl, value: anyUnpack(d, registry) })),
  };
}

function errorInfos(err: ConnectError) {
  return err.findDetails(ErrorInfoSchema);
}

describe("constructors", () => {
  it("invalidArgument: code 3, the message names the field, one BadRequest violation", () => {
    const err = invalidArgument("group.name", "is required");
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toBe("Invalid argument: group.name: is required");
    const status = decoded(err);
    expect(status.code).toBe(3);
    expect(status.message).toBe("Invalid argument: group.name: is required");
    expect(status.details).toHaveLength(1);
    expect(status.details[0]?.typeUrl).toBe("type.googleapis.com/google.rpc.BadRequest");
    expect(status.details[0]?.value).toMatchObject({ fieldViolations: [{ field: "group.name", description: "is required" }] });
  });

  it("invalidArguments: one violation per field in order, the message naming the first; none is a generic request violation", () => {
    const err = invalidArguments([
      { field: "documents[2].modified", description: "is not a time" },
      { field: "documents[3].id", description: "is required" },
    ]);
    expect(err.rawMessage).toBe("Invalid argument: documents[2].modified: is not a time");
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => [v.field, v.description])).toEqual([
      ["documents[2].modified", "is not a time"],
      ["documents[3].id", "is required"],
    ]);
    const empty = invalidArguments([]);
    expect(empty.code).toBe(Code.InvalidArgument);
    expect(empty.rawMessage).toBe("Invalid argument: request: is invalid");
  });

  it("failedPrecondition: code 9 with a PreconditionFailure of the given type and subject", () => {
    const err = failedPrecondition("RESOURCE_NOT_EMPTY", "group g still holds repos", "g");
    expect(err.code).toBe(Code.FailedPrecondition);
    expect(err.rawMessage).toBe("Precondition failed: group g still holds repos");
    expect(err.findDetails(PreconditionFailureSchema)[0]?.violations).toMatchObject([
      { type: "RESOURCE_NOT_EMPTY", subject: "g", description: "group g still holds repos" },
    ]);
    expect(failedPrecondition("T", "d").findDetails(PreconditionFailureSchema)[0]?.violations[0]?.subject).toBe("");
  });

  it("notFound and alreadyExists: codes 5 and 6 with ResourceInfo", () => {
    const missing = notFound("repo", "abc/def");
    expect(missing.code).toBe(Code.NotFound);
    expect(missing.rawMessage).toBe("Not found: repo abc/def");
    expect(missing.findDetails(ResourceInfoSchema)[0]).toMatchObject({
      resourceType: "repo",
      resourceName: "abc/def",
      description: "repo does not exist",
    });

    const twin = alreadyExists("group", "ops", 'a sibling group named "ops" already exists');
    expect(twin.code).toBe(Code.AlreadyExists);
    expect(twin.rawMessage).toBe('Already exists: a sibling group named "ops" already exists');
    expect(twin.findDetails(ResourceInfoSchema)[0]).toMatchObject({
      resourceType: "group",
      resourceName: "ops",
      description: 'a sibling group named "ops" already exists',
    });
  });

  it("the detail-less codes: permission denied, out of range, unauthenticated, unimplemented", () => {
    for (const [err, code, prefix] of [
      [permissionDenied("no"), Code.PermissionDenied, "Permission denied: no"],
      [outOfRange("too many"), Code.OutOfRange, "Out of range: too many"],
      [unauthenticated("missing credentials"), Code.Unauthenticated, "Unauthenticated: missing credentials"],
      [unimplemented("not yet"), Code.Unimplemented, "Unimplemented: not yet"],
    ] as const) {
      expect(err.code).toBe(code);
      expect(err.rawMessage).toBe(prefix);
      expect(err.details).toEqual([]);
    }
  });

  it("permissionDenied with a reason carries an ErrorInfo naming the rule, its domain left for the way out", () => {
    const err = permissionDenied("beyond your own grants", "GRANT_CEILING");
    expect(errorInfos(err)).toMatchObject([{ reason: "GRANT_CEILING", domain: "" }]);
  });

  it("unavailable: code 14 asking the client to retry after 2 seconds", () => {
    const err = unavailable("the database cannot be reached");
    expect(err.code).toBe(Code.Unavailable);
    expect(err.metadata.get("retry-after")).toBe("2");
  });

  it("rateLimited: code 8 with a QuotaFailure naming the subject and a whole number of seconds to wait, at least one", () => {
    const err = rateLimited("clientip:192.0.2.1", "too many calls", 12.2);
    expect(err.code).toBe(Code.ResourceExhausted);
    expect(err.rawMessage).toBe("Resource exhausted: too many calls");
    expect(err.findDetails(QuotaFailureSchema)[0]?.violations).toMatchObject([
      { subject: "clientip:192.0.2.1", description: "too many calls" },
    ]);
    expect(err.metadata.get("retry-after")).toBe("13");
    expect(rateLimited("identity:x", "too many", 0).metadata.get("retry-after")).toBe("1");
  });

  it("internalError: code 13 keeping the cause for the log and out of the message and details", () => {
    const cause = new Error("relation secret_table does not exist");
    const err = internalError(cause);
    expect(err.code).toBe(Code.Internal);
    expect(err.cause).toBe(cause);
    expect(JSON.stringify(toStatusJson(err))).not.toContain("secret_table");
  });
});

describe("clip", () => {
  it("leaves text up to the limit alone and cuts longer text to the limit plus an ellipsis", () => {
    expect(clip("a".repeat(512))).toBe("a".repeat(512));
    expect(clip("a".repeat(513))).toBe(`${"a".repeat(512)}…`);
    expect(clip("abcdef", 3)).toBe("abc…");
  });

  it("never cuts a surrogate pair in half", () => {
    const text = `${"a".repeat(511)}😀tail`;
    expect(clip(text)).toBe(`${"a".repeat(511)}…`);
    expect(clip(text)).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it("bounds what every constructor repeats from the input", () => {
    const long = "x".repeat(5000);
    const err = invalidArgument(long, long);
    const violation = err.findDetails(BadRequestSchema)[0]?.fieldViolations[0];
    expect(violation?.field).toHaveLength(513);
    expect(violation?.description).toHaveLength(513);
    for (const e of [
      notFound("group", long),
      alreadyExists("group", long, long),
      failedPrecondition("T", long),
      permissionDenied(long),
      outOfRange(long),
    ]) {
      expect(e.rawMessage.length).toBeLessThan(600);
    }
    expect(notFound("group", long).findDetails(ResourceInfoSchema)[0]?.resourceName).toHaveLength(513);
  });
});

describe("withErrorInfo", () => {
  it("adds ErrorInfo{reason: <code name>, domain} with empty metadata", () => {
    const err = withErrorInfo(notFound("group", "g"), DOMAIN);
    expect(errorInfos(err)).toHaveLength(1);
    expect(errorInfos(err)[0]).toMatchObject({ reason: "NOT_FOUND", domain: DOMAIN, metadata: {} });
    // The constructor's own detail stays, ahead of ErrorInfo.
    expect(decoded(err).details.map((d) => d.typeUrl)).toEqual([
      "type.googleapis.com/google.rpc.ResourceInfo",
      "type.googleapis.com/google.rpc.ErrorInfo",
    ]);
  });

  it("keeps a specific reason and fills in its missing domain", () => {
    const err = withErrorInfo(permissionDenied("beyond your grants", "GRANT_CEILING"), DOMAIN);
    expect(errorInfos(err)).toMatchObject([{ reason: "GRANT_CEILING", domain: DOMAIN }]);
  });

  it("adds nothing the second time and never overwrites a domain already set", () => {
    const err = withErrorInfo(withErrorInfo(invalidArgument("f", "d"), DOMAIN), "registry.other.example");
    expect(errorInfos(err)).toMatchObject([{ reason: "INVALID_ARGUMENT", domain: DOMAIN }]);
  });

  it("counts an ErrorInfo received still encoded (from another service) as present", () => {
    const info = create(ErrorInfoSchema, { reason: "UPSTREAM", domain: "elsewhere.example" });
    const err = new ConnectError("upstream refused", Code.Aborted);
    // As connect-es stores a detail parsed from the wire.
    err.details.push({ type: ErrorInfoSchema.typeName, value: toBinary(ErrorInfoSchema, info) });
    withErrorInfo(err, DOMAIN);
    expect(err.details).toHaveLength(1);
    expect(errorInfos(err)).toMatchObject([{ reason: "UPSTREAM", domain: "elsewhere.example" }]);
  });

  it("gives every code its google.rpc.Code name", () => {
    expect(codeName(Code.InvalidArgument)).toBe("INVALID_ARGUMENT");
    expect(codeName(Code.Unauthenticated)).toBe("UNAUTHENTICATED");
    expect(errorInfos(withErrorInfo(unavailable("down"), DOMAIN))[0]?.reason).toBe("UNAVAILABLE");
    expect(errorInfos(withErrorInfo(internalError(new Error("x")), DOMAIN))[0]?.reason).toBe("INTERNAL");
  });
});

describe("errorDomainForService", () => {
  it("is <package area>.<host> for the platform's services and the first segment otherwise", () => {
    expect(errorDomainForService("platform.iam.v2beta1.GroupsService", "platform.example")).toBe("iam.platform.example");
    expect(errorDomainForService("platform.registry.v1.ReposService", "platform.example")).toBe("registry.platform.example");
    expect(errorDomainForService("platform.vulnerabilities.v1.AdvisoriesService", "h")).toBe("vulnerabilities.h");
    expect(errorDomainForService("grpc.health.v1.Health", "h")).toBe("grpc.h");
  });
});

describe("toStatusJson", () => {
  it("renders code, message and every detail with its @type, ErrorInfo included", () => {
    const err = withErrorInfo(invalidArgument("page_size", "must not be negative"), DOMAIN);
    expect(toStatusJson(err)).toEqual({
      code: 3,
      message: "Invalid argument: page_size: must not be negative",
      details: [
        {
          "@type": "type.googleapis.com/google.rpc.BadRequest",
          fieldViolations: [{ field: "page_size", description: "must not be negative" }],
        },
        { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "INVALID_ARGUMENT", domain: DOMAIN },
      ],
    });
  });

  it("renders an error without details as an empty list", () => {
    expect(toStatusJson(outOfRange("too many"))).toEqual({ code: 11, message: "Out of range: too many", details: [] });
  });
});

describe("httpStatusFromCode", () => {
  it("follows the standard gRPC to HTTP mapping", () => {
    const expected: [Code, number][] = [
      [Code.InvalidArgument, 400],
      [Code.FailedPrecondition, 400],
      [Code.OutOfRange, 400],
      [Code.NotFound, 404],
      [Code.AlreadyExists, 409],
      [Code.Aborted, 409],
      [Code.PermissionDenied, 403],
      [Code.Unauthenticated, 401],
      [Code.ResourceExhausted, 429],
      [Code.Unavailable, 503],
      [Code.DeadlineExceeded, 504],
      [Code.Internal, 500],
      [Code.Unimplemented, 501],
      [Code.Canceled, 499],
      [Code.Unknown, 500],
      [Code.DataLoss, 500],
    ];
    for (const [code, http] of expected) expect(httpStatusFromCode(code), codeName(code)).toBe(http);
    expect(httpStatusFromCode(99 as Code)).toBe(500);
  });
});

describe("toConnectError", () => {
  const never = () => {
    throw new Error("onInternal must not be called");
  };

  it("returns a ConnectError as it is", () => {
    const err = notFound("group", "g");
    expect(toConnectError(err, never)).toBe(err);
  });

  it("makes a database that cannot be reached UNAVAILABLE, looking through causes", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
    const shuttingDown = Object.assign(new Error("terminating connection"), { code: "57P01" });
    for (const thrown of [refused, new Error("Failed query", { cause: refused }), shuttingDown]) {
      const err = toConnectError(thrown, never);
      expect(err.code).toBe(Code.Unavailable);
      expect(err.metadata.get("retry-after")).toBe("2");
    }
  });

  it("makes a transaction PostgreSQL gave up on (deadlock, serialization failure) ABORTED, never INTERNAL", () => {
    for (const code of ["40P01", "40001"]) {
      const err = toConnectError(new Error("Failed query", { cause: Object.assign(new Error("deadlock detected"), { code }) }), never);
      expect(err.code, code).toBe(Code.Aborted);
      expect(err.rawMessage).toContain("retry");
    }
  });

  it("makes a value PostgreSQL refused INVALID_ARGUMENT on request", () => {
    for (const code of ["22P02", "22021", "54000"]) {
      const err = toConnectError(new Error("Failed query", { cause: Object.assign(new Error("bad value"), { code }) }), never);
      expect(err.code, code).toBe(Code.InvalidArgument);
      expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("request");
    }
  });

  it("makes anything else INTERNAL, handing the cause to onInternal and not to the caller", () => {
    const causes: unknown[] = [];
    const thrown = Object.assign(new Error("duplicate key value violates unique constraint users_pkey"), { code: "23505" });
    const err = toConnectError(thrown, (c) => causes.push(c));
    expect(err.code).toBe(Code.Internal);
    expect(err.rawMessage).toBe("Internal error");
    expect(causes).toEqual([thrown]);
    expect(toConnectError("a thrown string", (c) => causes.push(c)).code).toBe(Code.Internal);
    expect(causes).toEqual([thrown, "a thrown string"]);
  });
});
