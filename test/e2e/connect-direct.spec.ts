import http from "node:http";
import { gzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { restClient } from "../support/clients.js";
import { createGroup, uidOf } from "../support/rest-iam.js";
import type { TestServer } from "../support/server.js";
import { sharedServer } from "../support/shared-server.js";

// Connect JSON unary calls are served by one path (src/server/rpc/connect-json.ts),
// whether they carry a deadline, a compressed body or no declared length: the
// caller must not be able to tell how the request was framed. That the path
// answers as connect-es's own handler would is src/server/rpc/connect-json.spec.ts.

let server: TestServer;
let org: string;
const GET_GROUP = "/platform.iam.v2beta1.GroupsService/GetGroup";

interface Raw {
  status: number;
  contentType: string | undefined;
  body: unknown;
}

/** One POST with exact control over its headers and framing. */
function post(path: string, body: Buffer, headers: Record<string, string>, chunked = false): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${server.url}${path}`,
      {
        method: "POST",
        headers: { authorization: `Bearer ${server.token}`, ...headers, ...(chunked ? {} : { "content-length": String(body.length) }) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          resolve({ status: res.statusCode ?? 0, contentType: res.headers["content-type"], body: text ? JSON.parse(text) : undefined });
        });
      },
    );
    req.on("error", reject);
    if (chunked) {
      // Two writes without a length: Transfer-Encoding: chunked.
      req.write(body.subarray(0, 3));
      req.end(body.subarray(3));
    } else {
      req.end(body);
    }
  });
}

/** The same JSON request framed each way: plain, with a deadline, gzipped, chunked. */
async function everyWay(path: string, json: string): Promise<Record<string, Raw>> {
  const body = Buffer.from(json);
  const ct = { "content-type": "application/json" };
  return {
    direct: await post(path, body, ct),
    deadline: await post(path, body, { ...ct, "connect-timeout-ms": "10000" }),
    gzip: await post(path, gzipSync(body), { ...ct, "content-encoding": "gzip" }),
    chunked: await post(path, body, ct, true),
  };
}

function expectSame(outcomes: Record<string, Raw>): Raw {
  const { direct, ...others } = outcomes;
  for (const [way, raw] of Object.entries(others)) expect({ way, ...raw }).toEqual({ way, ...direct });
  return direct!;
}

beforeAll(async () => {
  server = await sharedServer();
  const call = restClient(server.url, server.token);
  org = uidOf(await createGroup(call, "connect direct"));
});

describe("Connect JSON unary calls, however framed", () => {
  it("answer a Get the same way", async () => {
    const raw = expectSame(await everyWay(GET_GROUP, JSON.stringify({ uid: org })));
    expect(raw.status).toBe(200);
    expect(raw.contentType).toBe("application/json");
    expect(raw.body).toMatchObject({ uid: org, name: "connect direct" });
  });

  it("ignore unknown JSON fields the same way", async () => {
    const raw = expectSame(await everyWay(GET_GROUP, JSON.stringify({ uid: org, notAField: 1 })));
    expect(raw.status).toBe(200);
  });

  it("answer NOT_FOUND with the same error body and ErrorInfo", async () => {
    const missing = "f".repeat(40);
    const raw = expectSame(await everyWay(GET_GROUP, JSON.stringify({ uid: missing })));
    expect(raw.status).toBe(404);
    const body = raw.body as { code: string; message: string; details: { type: string }[] };
    expect(body.code).toBe("not_found");
    expect(body.details.map((d) => d.type)).toContain("google.rpc.ErrorInfo");
  });

  it("refuse undecodable JSON, a wrong type and a NUL the same way (invalid_argument, never 500)", async () => {
    for (const json of ['{"uid": ', '{"uid": 42}', '{"uid": "a\\u0000b"}', "[]"]) {
      const raw = expectSame(await everyWay(GET_GROUP, json));
      expect(raw.status, json).toBe(400);
      expect((raw.body as { code: string }).code, json).toBe("invalid_argument");
    }
  });

  it("refuse a missing token the same way", async () => {
    const body = Buffer.from(JSON.stringify({ uid: org }));
    const noToken = (headers: Record<string, string>) =>
      new Promise<Raw>((resolve, reject) => {
        const req = http.request(
          `${server.url}${GET_GROUP}`,
          { method: "POST", headers: { "content-length": String(body.length), ...headers } },
          (res) => {
            let text = "";
            res.on("data", (c: Buffer) => (text += c.toString()));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, contentType: res.headers["content-type"], body: JSON.parse(text) }));
          },
        );
        req.on("error", reject);
        req.end(body);
      });
    const direct = await noToken({ "content-type": "application/json" });
    const deadline = await noToken({ "content-type": "application/json", "connect-timeout-ms": "10000" });
    expect(deadline).toEqual(direct);
    expect(direct.status).toBe(401);
    expect((direct.body as { code: string }).code).toBe("unauthenticated");
  });

  it("survive a client that leaves mid-body, and keep serving", async () => {
    await new Promise<void>((resolve) => {
      const req = http.request(`${server.url}${GET_GROUP}`, {
        method: "POST",
        headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json", "content-length": "1000" },
      });
      req.on("error", () => resolve());
      req.write('{"uid": "');
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 50);
    });
    const raw = await post(GET_GROUP, Buffer.from(JSON.stringify({ uid: org })), { "content-type": "application/json" });
    expect(raw.status).toBe(200);
  });
});
