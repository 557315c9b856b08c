import { Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema, ErrorInfoSchema, PreconditionFailureSchema } from "../../gen/google/rpc/error_details_pb.js";
import { GroupsService } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { connectClient, type Protocol } from "../support/clients.js";
import type { TestServer } from "../support/server.js";
import { sharedServer } from "../support/shared-server.js";

let server: TestServer;

beforeAll(async () => {
  server = await sharedServer();
});

async function failure(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (e) {
    return ConnectError.from(e);
  }
  throw new Error("expected the call to fail");
}

describe.each<Protocol>(["connect", "grpc-web", "grpc"])("groups over %s", (protocol) => {
  it("creates, lists, updates and deletes on the same port", async () => {
    const client = connectClient(GroupsService, server.url, server.token, protocol);
    const root = await client.createGroup({ group: { name: `${protocol}-org` } });
    const child = await client.createGroup({ parent: root.uid, group: { name: "one", description: "first" } });
    const list = await client.listGroups({ uidp: { childrenOf: root.uid } });
    expect(list.groups.map((g) => g.uid)).toEqual([child.uid]);
    expect(list.totalCount).toBe(1n);
    expect(list.nextPageToken).toBe("");
    const updated = await client.updateGroup({ group: { uid: child.uid, description: "second" }, updateMask: { paths: ["description"] } });
    expect(updated.description).toBe("second");
    expect(updated.name).toBe("one");
    await client.deleteGroup({ uid: child.uid });
    await client.deleteGroup({ uid: root.uid });
    const gone = await failure(client.getGroup({ uid: root.uid }));
    expect(gone.code).toBe(Code.NotFound);
  });

  it("carries typed error details", async () => {
    const client = connectClient(GroupsService, server.url, server.token, protocol);
    const err = await failure(client.createGroup({ group: { name: "Bad Name" } }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toBe("Invalid argument: name: must match the pattern ^[a-z0-9 ._-]{1,}$");
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("name");
    expect(err.findDetails(ErrorInfoSchema)[0]).toMatchObject({ reason: "INVALID_ARGUMENT", domain: "iam.localhost" });

    const root = await client.createGroup({ group: { name: `${protocol}-full` } });
    await client.createGroup({ parent: root.uid, group: { name: "kid" } });
    const notEmpty = await failure(client.deleteGroup({ uid: root.uid }));
    expect(notEmpty.code).toBe(Code.FailedPrecondition);
    expect(notEmpty.findDetails(PreconditionFailureSchema)[0]?.violations[0]?.type).toBe("RESOURCE_NOT_EMPTY");
  });

  it("requires a token", async () => {
    const client = connectClient(GroupsService, server.url, "", protocol);
    const err = await failure(client.listGroups({}));
    expect(err.code).toBe(Code.Unauthenticated);
  });
});
