import grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grpcJsClient, grpcStatusDetails, grpcUnary } from "../support/clients.js";
import type { TestServer } from "../support/server.js";
import { sharedServer } from "../support/shared-server.js";

interface GroupMsg {
  uid: string;
  name: string;
  description: string;
  resource_limits: Record<string, number>;
  verified: boolean;
  create_time: { seconds: string; nanos: number } | null;
}
interface ListMsg {
  groups: GroupMsg[];
  next_page_token: string;
  total_count: string;
  skipped: number;
}

let server: TestServer;
let client: grpc.Client & Record<string, unknown>;

beforeAll(async () => {
  server = await sharedServer();
  client = grpcJsClient(`127.0.0.1:${server.app.port}`, "platform.iam.v2beta1.GroupsService", "platform/iam/v2beta1/groups.proto");
});
afterAll(async () => {
  client?.close();
});

/** `token` "" sends no authorization header. */
const rpc = <T>(method: string, req: unknown, token: string = server.token) => grpcUnary<T>(client, method, req, token);

async function failure(p: Promise<unknown>): Promise<grpc.ServiceError> {
  try {
    await p;
  } catch (e) {
    return e as grpc.ServiceError;
  }
  throw new Error("expected the call to fail");
}

describe("groups over gRPC (@grpc/grpc-js)", () => {
  it("creates, gets, updates with a mask and deletes", async () => {
    const root = await rpc<GroupMsg>("CreateGroup", { group: { name: "grpc-org", description: "d" } });
    expect(root.uid).toMatch(/^[0-9a-f]{40}$/);
    expect(root.verified).toBe(false);
    expect(root.create_time?.seconds).toMatch(/^\d+$/);
    const child = await rpc<GroupMsg>("CreateGroup", { parent: root.uid, group: { name: "child" } });
    expect(child.uid.startsWith(`${root.uid}/`)).toBe(true);

    const got = await rpc<GroupMsg>("GetGroup", { uid: child.uid });
    expect(got).toEqual(child);

    const masked = await rpc<GroupMsg>("UpdateGroup", {
      group: { uid: child.uid, name: "ignored", description: "new" },
      update_mask: { paths: ["description"] },
    });
    expect(masked).toMatchObject({ name: "child", description: "new" });
    // without a mask, gRPC changes the non-default fields
    const unmasked = await rpc<GroupMsg>("UpdateGroup", { group: { uid: child.uid, name: "child2" } });
    expect(unmasked).toMatchObject({ name: "child2", description: "new" });

    await rpc("DeleteGroup", { uid: child.uid });
    const gone = await failure(rpc("GetGroup", { uid: child.uid }));
    expect(gone.code).toBe(grpc.status.NOT_FOUND);
  });

  it("pages with tokens and reports the total", async () => {
    const root = await rpc<GroupMsg>("CreateGroup", { group: { name: "grpc-paging" } });
    const names = ["c", "a", "e", "b", "d"];
    for (const name of names) await rpc("CreateGroup", { parent: root.uid, group: { name } });
    const seen: string[] = [];
    let token = "";
    for (let i = 0; i < 10; i++) {
      const page = await rpc<ListMsg>("ListGroups", {
        uidp: { children_of: root.uid },
        order_by: "name desc",
        page_size: 2,
        page_token: token,
      });
      expect(page.total_count).toBe("5");
      seen.push(...page.groups.map((g) => g.name));
      token = page.next_page_token;
      if (!token) break;
    }
    expect(seen).toEqual(["e", "d", "c", "b", "a"]);
  });

  it("answers an empty name with a REQUIRED violation that still states the pattern, and an empty role name with REQUIRED", async () => {
    const err = await failure(rpc("CreateGroup", { group: { name: "" } }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toBe("Invalid argument: name: is required and must match the pattern ^[a-z0-9 ._-]{1,}$");
    expect(grpcStatusDetails(err).details[0]!.value).toMatchObject({
      fieldViolations: [{ field: "name", description: "is required and must match the pattern ^[a-z0-9 ._-]{1,}$", reason: "REQUIRED" }],
    });
    const org = await rpc<{ uid: string }>("CreateGroup", { group: { name: "grpc-required" } });
    const roles = grpcJsClient(`127.0.0.1:${server.app.port}`, "platform.iam.v2beta1.RolesService", "platform/iam/v2beta1/roles.proto");
    try {
      const role = await failure(
        grpcUnary(roles, "CreateRole", { parent: org.uid, role: { capabilities: ["groups.list"] } }, server.token),
      );
      expect(role.details).toBe("Invalid argument: name: is required");
      expect(grpcStatusDetails(role).details[0]!.value).toMatchObject({
        fieldViolations: [{ field: "name", description: "is required", reason: "REQUIRED" }],
      });
    } finally {
      roles.close();
    }
  });

  it("sends INVALID_ARGUMENT with BadRequest and ErrorInfo in grpc-status-details-bin", async () => {
    const err = await failure(rpc("CreateGroup", { group: { name: "Bad Name" } }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    // grpc-message as grpc-js reads it: nothing left percent-encoded.
    expect(err.details).toBe("Invalid argument: name: must match the pattern ^[a-z0-9 ._-]{1,}$");
    const status = grpcStatusDetails(err);
    expect(status.code).toBe(3);
    expect(status.message).toBe("Invalid argument: name: must match the pattern ^[a-z0-9 ._-]{1,}$");
    const types = status.details.map((d) => d.type);
    expect(types).toEqual(["google.rpc.BadRequest", "google.rpc.ErrorInfo"]);
    expect(status.details[0]!.value).toMatchObject({
      fieldViolations: [{ field: "name", description: "must match the pattern ^[a-z0-9 ._-]{1,}$" }],
    });
    expect(status.details[1]!.value).toMatchObject({ reason: "INVALID_ARGUMENT", domain: "iam.localhost" });
  });

  it("sends FAILED_PRECONDITION / RESOURCE_NOT_EMPTY for a non-empty group", async () => {
    const root = await rpc<GroupMsg>("CreateGroup", { group: { name: "grpc-nonempty" } });
    await rpc("CreateGroup", { parent: root.uid, group: { name: "kid" } });
    const err = await failure(rpc("DeleteGroup", { uid: root.uid }));
    expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
    const status = grpcStatusDetails(err);
    expect(status.message).toMatch(/^Precondition failed: /);
    expect(status.details[0]).toMatchObject({
      type: "google.rpc.PreconditionFailure",
      value: { violations: [expect.objectContaining({ type: "RESOURCE_NOT_EMPTY" })] },
    });
    expect(status.details[1]).toMatchObject({ type: "google.rpc.ErrorInfo", value: { reason: "FAILED_PRECONDITION" } });
  });

  it("refuses calls without a token or with a tampered one as UNAUTHENTICATED", async () => {
    const none = await failure(rpc("ListGroups", {}, ""));
    expect(none.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(grpcStatusDetails(none).details[0]).toMatchObject({ type: "google.rpc.ErrorInfo", value: { reason: "UNAUTHENTICATED" } });
    const [h, p, s] = server.token.split(".");
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, "base64url").toString()), sub: "someone-else" })).toString("base64url")}.${s}`;
    const bad = await failure(rpc("ListGroups", {}, tampered));
    expect(bad.code).toBe(grpc.status.UNAUTHENTICATED);
  });
});
