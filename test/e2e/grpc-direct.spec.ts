import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { HealthCheckRequestSchema, HealthCheckResponseSchema, HealthCheckResponse_ServingStatus } from "../../gen/health/v1/health_pb.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GetGroupRequestSchema, ListGroupsRequestSchema } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { UIDPFilterSchema } from "../../gen/platform/common/v1/uidp_pb.js";
import { restClient } from "../support/clients.js";
import { createGroup, uidOf } from "../support/rest-iam.js";
import type { TestServer } from "../support/server.js";
import { sharedServer } from "../support/shared-server.js";

// Plain gRPC unary calls are served by the direct path (src/server/rpc/grpc-unary.ts,
// serveGrpcUnary); a call with a deadline (grpc-timeout) takes connect-es's
// handler. The caller must not be able to tell them apart: the same request
// gets the same headers, body bytes and trailers either way.

let server: TestServer;
let session: http2.ClientHttp2Session;
let org: string;
const GET = "/platform.iam.v2beta1.GroupsService/GetGroup";
const LIST = "/platform.iam.v2beta1.GroupsService/ListGroups";

interface Raw {
  headers: Record<string, unknown>;
  body: string;
  trailers: Record<string, unknown>;
}

function envelope(message: Uint8Array, flag = 0): Buffer {
  const out = Buffer.alloc(5 + message.byteLength);
  out[0] = flag;
  out.writeUInt32BE(message.byteLength, 1);
  out.set(message, 5);
  return out;
}

function call(path: string, body: Buffer, extra: Record<string, string> = {}, token: string | undefined = server.token): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc+proto",
      te: "trailers",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...extra,
    });
    let headers: Record<string, unknown> = {};
    let trailers: Record<string, unknown> = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      // Per response by design: the date, and the request id (checked present, then left out).
      const { date: _date, "x-request-id": requestId, ...rest } = h;
      expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
      headers = rest;
    });
    stream.on("trailers", (t) => (trailers = { ...t }));
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => resolve({ headers, body: Buffer.concat(chunks).toString("hex"), trailers }));
    stream.on("error", reject);
    stream.end(body);
  });
}

/** The direct path's answer, checked against connect-es's answer to the same request with a deadline. */
async function same(path: string, body: Buffer, extra: Record<string, string> = {}, token?: string): Promise<Raw> {
  const direct = await call(path, body, extra, token);
  const viaConnect = await call(path, body, { ...extra, "grpc-timeout": "10S" }, token);
  expect(direct).toEqual(viaConnect);
  return direct;
}

beforeAll(async () => {
  server = await sharedServer();
  const rest = restClient(server.url, server.token);
  org = uidOf(await createGroup(rest, "grpc direct"));
  // Enough children, with long descriptions, for a list answer over 1 KiB (compressed when accepted).
  for (let i = 0; i < 8; i++) {
    const res = await rest("POST", `/iam/v2beta1/groups/${org}`, { name: `child ${i}`, description: "d".repeat(200) });
    expect(res.status).toBe(200);
  }
  session = http2.connect(server.url);
});

afterAll(() => {
  session?.close();
});

describe("gRPC unary calls, direct or through connect-es's handler", () => {
  it("answer a Get the same way", async () => {
    const raw = await same(GET, envelope(toBinary(GetGroupRequestSchema, create(GetGroupRequestSchema, { uid: org }))));
    expect(raw.trailers["grpc-status"]).toBe("0");
    expect(raw.body.length).toBeGreaterThan(10);
  });

  it("negotiate and compress a large answer the same way", async () => {
    const req = create(ListGroupsRequestSchema, { uidp: create(UIDPFilterSchema, { childrenOf: org }), pageSize: 50 });
    const raw = await same(LIST, envelope(toBinary(ListGroupsRequestSchema, req)), { "grpc-accept-encoding": "identity,gzip" });
    expect(raw.headers["grpc-encoding"]).toBe("gzip");
    expect(raw.body.slice(0, 2)).toBe("01"); // the compressed flag
    const plain = await same(LIST, envelope(toBinary(ListGroupsRequestSchema, req)));
    expect(plain.body.slice(0, 2)).toBe("00");
  });

  it("answer NOT_FOUND, UNAUTHENTICATED and undecodable bytes with the same trailers", async () => {
    const missing = await same(GET, envelope(toBinary(GetGroupRequestSchema, create(GetGroupRequestSchema, { uid: "f".repeat(40) }))));
    expect(missing.trailers["grpc-status"]).toBe("5");
    expect(missing.trailers["grpc-status-details-bin"]).toBeTruthy();
    const anonymous = await same(GET, envelope(toBinary(GetGroupRequestSchema, create(GetGroupRequestSchema, { uid: org }))), {}, "");
    expect(anonymous.trailers["grpc-status"]).toBe("16");
    const garbage = await same(GET, envelope(Buffer.from([0x0a, 0xff, 0xff, 0xff])));
    expect(garbage.trailers["grpc-status"]).toBe("3");
  });

  it("leave the router's own unary methods (health) to connect-es, over gRPC and Connect JSON", async () => {
    const check = envelope(toBinary(HealthCheckRequestSchema, create(HealthCheckRequestSchema, { service: "" })));
    const grpc = await same("/grpc.health.v1.Health/Check", check);
    expect(grpc.trailers["grpc-status"]).toBe("0");
    expect(fromBinary(HealthCheckResponseSchema, Buffer.from(grpc.body, "hex").subarray(5)).status).toBe(
      HealthCheckResponse_ServingStatus.SERVING,
    );
    const connect = await fetch(`${server.url}/grpc.health.v1.Health/Check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(connect.status).toBe(200);
    expect(await connect.json()).toEqual({ status: "SERVING" });
  });

  it("hand a body over readMaxBytes to connect-es with the bytes already read, and answer as it does", async () => {
    // 1 MiB + 1 of message bytes in one envelope: past the cap, the direct path stops reading and hands over.
    const huge = envelope(Buffer.alloc(1024 * 1024 + 1, 0x61));
    const raw = await same(GET, huge);
    expect(raw.trailers["grpc-status"]).toBe("8"); // RESOURCE_EXHAUSTED
  });

  it("hand odd bodies to connect-es: empty, truncated, two envelopes, a compressed flag without an encoding", async () => {
    const one = envelope(toBinary(GetGroupRequestSchema, create(GetGroupRequestSchema, { uid: org })));
    for (const body of [Buffer.alloc(0), one.subarray(0, 7), Buffer.concat([one, one]), envelope(Buffer.from([1, 2, 3]), 1)]) {
      const raw = await same(GET, body);
      expect(raw.trailers["grpc-status"], body.toString("hex")).not.toBe("0");
    }
  });
});
