import http from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { create, toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GetGroupRequest, GroupSchema, GroupsService } from "../../../gen/platform/iam/v2beta1/groups_pb.js";
import { rpcHandler } from "./dispatch.js";

// The Connect JSON direct path is the only one serving Connect JSON unary calls to the API
// (connect-json.ts), so the e2e suites no longer see connect-es's handler answer them. Here the
// same requests go to the direct path and to connect-es's own unary Connect handler (the same
// rpcHandler without a direct path), the implementation behind both the same, answers rendered
// with connect-es's JSON serialization: status, headers and body must match byte for byte.

const READ_MAX_BYTES = 2048;

/** What the implementation sees of a call: the uid asks for an outcome. */
function getGroup(request: GetGroupRequest, timeoutMs: number | undefined) {
  if (request.uid === "missing") throw new ConnectError("Not found: group missing", Code.NotFound, { "retry-after": "7" });
  if (request.uid === "broken") throw new Error("a bug");
  const description = request.uid === "large" ? "x".repeat(4000) : "";
  return create(GroupSchema, { uid: request.uid, name: timeoutMs !== undefined && timeoutMs > 0 ? "deadline" : "none", description });
}

function serve(direct: boolean): http.Server {
  const handle = rpcHandler({
    routes: (router) => router.service(GroupsService, { getGroup: (req, ctx) => getGroup(req, ctx.timeoutMs()) }),
    readMaxBytes: READ_MAX_BYTES,
    fallback: (_req, res) => {
      res.statusCode = 404;
      res.end();
    },
    onError: (e) => {
      throw e;
    },
    ...(direct
      ? {
          direct: async (call) => getGroup(call.message as GetGroupRequest, call.timeoutMs),
          directs: () => true,
          renderJson: (schema, message) => toJsonString(schema, message),
        }
      : {}),
  });
  return http.createServer((req, res) => handle(req, res));
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function request(server: http.Server, method: string, body: Buffer, headers: Record<string, string>, chunked = false): Promise<Answer> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const req = http.request(
      `http://127.0.0.1:${port}/platform.iam.v2beta1.GroupsService/GetGroup`,
      { method, headers: { ...headers, ...(chunked ? {} : { "content-length": String(body.length) }) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const { date: _date, connection: _connection, "keep-alive": _keepAlive, ...rest } = res.headers;
          resolve({ status: res.statusCode ?? 0, headers: rest, body: Buffer.concat(chunks).toString("base64") });
        });
      },
    );
    req.on("error", reject);
    if (chunked) {
      req.write(body.subarray(0, 3));
      req.end(body.subarray(3));
    } else req.end(body);
  });
}

let direct: http.Server;
let connectEs: http.Server;

beforeAll(async () => {
  direct = serve(true);
  connectEs = serve(false);
  await Promise.all([direct, connectEs].map((s) => new Promise<void>((r) => s.listen(0, "127.0.0.1", r))));
});

afterAll(async () => {
  await Promise.all([direct, connectEs].map((s) => new Promise((r) => s.close(r))));
});

const JSON_TYPE = { "content-type": "application/json" };
const json = (uid: string) => Buffer.from(JSON.stringify({ uid }));

const cases: [string, number, string, Buffer, Record<string, string>, boolean?][] = [
  ["a plain call", 200, "POST", json("g"), JSON_TYPE],
  ["a charset in the content type", 200, "POST", json("g"), { "content-type": "application/json; charset=utf-8" }],
  ["a deadline", 200, "POST", json("g"), { ...JSON_TYPE, "connect-timeout-ms": "10000" }],
  ["an invalid deadline", 400, "POST", json("g"), { ...JSON_TYPE, "connect-timeout-ms": "soon" }],
  ["a gzip body", 200, "POST", gzipSync(json("g")), { ...JSON_TYPE, "content-encoding": "gzip" }],
  ["identity encoding", 200, "POST", json("g"), { ...JSON_TYPE, "content-encoding": "identity" }],
  ["an unknown encoding", 501, "POST", json("g"), { ...JSON_TYPE, "content-encoding": "zstd" }],
  ["a body that is not gzip", 400, "POST", json("g"), { ...JSON_TYPE, "content-encoding": "gzip" }],
  [
    "a gzip body over the limit once inflated",
    429,
    "POST",
    gzipSync(json("y".repeat(READ_MAX_BYTES))),
    { ...JSON_TYPE, "content-encoding": "gzip" },
  ],
  ["a chunked body", 200, "POST", json("g"), JSON_TYPE, true],
  ["a declared length over the limit", 429, "POST", json("z".repeat(READ_MAX_BYTES)), JSON_TYPE],
  ["a chunked body over the limit", 429, "POST", json("z".repeat(READ_MAX_BYTES)), JSON_TYPE, true],
  ["undecodable JSON", 400, "POST", Buffer.from('{"uid": '), JSON_TYPE],
  ["a wrong field type", 400, "POST", Buffer.from('{"uid": 42}'), JSON_TYPE],
  ["an error with metadata", 404, "POST", json("missing"), JSON_TYPE],
  ["an error that is not a ConnectError", 500, "POST", json("broken"), JSON_TYPE],
  ["a large answer, gzip accepted", 200, "POST", json("large"), { ...JSON_TYPE, "accept-encoding": "gzip" }],
  ["a large answer, br accepted", 200, "POST", json("large"), { ...JSON_TYPE, "accept-encoding": "br" }],
  ["a large answer, nothing accepted", 200, "POST", json("large"), JSON_TYPE],
  ["a GET of a method with side effects", 405, "GET", Buffer.alloc(0), JSON_TYPE],
];

describe("Connect JSON unary calls: the direct path answers as connect-es's handler does", () => {
  for (const [name, status, method, body, headers, chunked] of cases) {
    it(name, async () => {
      const expected = await request(connectEs, method, body, headers, chunked);
      const actual = await request(direct, method, body, headers, chunked);
      expect(actual).toEqual(expected);
      expect(actual.status).toBe(status);
    });
  }

  it("with the caller's deadline on the context", async () => {
    const answer = await request(direct, "POST", json("g"), { ...JSON_TYPE, "connect-timeout-ms": "10000" });
    expect(JSON.parse(Buffer.from(answer.body, "base64").toString())).toMatchObject({ name: "deadline" });
  });
});
