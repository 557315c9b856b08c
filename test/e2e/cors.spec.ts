import http from "node:http";
import net from "node:net";
import { cors } from "@connectrpc/connect";
import type { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/server/logger.js";
import { restClient, type JsonObject } from "../support/clients.js";
import { createGroup, uidOf } from "../support/rest-iam.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { sharedServer } from "../support/shared-server.js";

// CORS (docs/security.md, "Browser origins (CORS)"): the allowed origins get
// preflights and readable answers on the API's paths; every other origin,
// and every other path, gets no CORS header at all.

const APP = "https://app.example.com";
const DEV = "http://localhost:5173";
const CONNECT_PATH = "/platform.iam.v2beta1.GroupsService/ListGroups";

const lines: JsonObject[] = [];
/** PLATFORM_CORS_ORIGINS set. */
let server: TestServer;
/** Nothing configured. */
let plain: TestServer;
let group: string;

beforeAll(async () => {
  const destination: pino.DestinationStream = { write: (line: string) => void lines.push(JSON.parse(line) as JsonObject) };
  [server, plain] = await Promise.all([
    startTestServer({ PLATFORM_CORS_ORIGINS: `${APP}, ${DEV}` }, { logger: createLogger("info", destination) }),
    sharedServer(),
  ]);
  group = uidOf(await createGroup(restClient(server.url, server.token), "cors"));
});
afterAll(async () => {
  await server?.stop();
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One HTTP/1.1 request with exactly these headers (fetch would add or refuse some). */
function send(target: TestServer, method: string, path: string, headers: Record<string, string>, body?: string | Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${target.url}${path}`,
      { method, headers: { ...headers, ...(body !== undefined ? { "content-length": String(Buffer.byteLength(body)) } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** Raw bytes on a socket, for header values no HTTP client will send; the status line's code. */
function sendRaw(target: TestServer, head: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(target.app.port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => {
      chunks.push(c);
      // One answer is enough: stop at the end of its head (preflights and errors here are small).
      if (Buffer.concat(chunks).includes("\r\n\r\n")) socket.end();
    });
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("latin1");
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), text });
    });
    socket.write(head);
  });
}

const preflight = (target: TestServer, path: string, origin: string, method: string, requestHeaders: string) =>
  send(target, "OPTIONS", path, { origin, "access-control-request-method": method, "access-control-request-headers": requestHeaders });

const list = (value: string | string[] | undefined): string[] =>
  String(value ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);

function corsHeadersOf(headers: http.IncomingHttpHeaders): string[] {
  return Object.keys(headers).filter((name) => name.startsWith("access-control-"));
}

function expectAllowedPreflight(res: Answer, origin: string): void {
  expect(res.status, res.body).toBe(204);
  expect(res.headers["access-control-allow-origin"]).toBe(origin);
  expect(list(res.headers["vary"])).toContain("origin");
  expect(res.headers["access-control-allow-credentials"]).toBeUndefined();
  const methods = list(res.headers["access-control-allow-methods"]);
  for (const m of [...cors.allowedMethods, "GET", "POST", "PATCH", "PUT", "DELETE"]) expect(methods).toContain(m.toLowerCase());
  const allowed = list(res.headers["access-control-allow-headers"]);
  for (const h of [...cors.allowedHeaders, "Authorization", "Content-Type", "X-Request-Id"]) expect(allowed).toContain(h.toLowerCase());
  expect(Number(res.headers["access-control-max-age"])).toBeGreaterThan(0);
}

function expectReadable(res: Answer, origin: string): void {
  expect(res.headers["access-control-allow-origin"]).toBe(origin);
  expect(list(res.headers["vary"])).toContain("origin");
  const exposed = list(res.headers["access-control-expose-headers"]);
  for (const h of [...cors.exposedHeaders, "Grpc-Status-Details-Bin", "X-Request-Id", "Retry-After"])
    expect(exposed).toContain(h.toLowerCase());
}

describe("preflights from an allowed origin", () => {
  it("answer a Connect path with Connect's lists and REST's", async () => {
    const res = await preflight(
      server,
      CONNECT_PATH,
      APP,
      "POST",
      "authorization,content-type,connect-protocol-version,connect-timeout-ms",
    );
    expectAllowedPreflight(res, APP);
    expect(res.body).toBe("");
  });

  it("answer a gRPC-Web path", async () => {
    expectAllowedPreflight(
      await preflight(server, CONNECT_PATH, DEV, "POST", "authorization,content-type,x-grpc-web,x-user-agent,grpc-timeout"),
      DEV,
    );
  });

  it("answer a REST path instead of 405", async () => {
    const res = await preflight(server, `/iam/v2beta1/groups/${group}`, APP, "PATCH", "authorization,content-type,x-request-id");
    expectAllowedPreflight(res, APP);
    // An OPTIONS that is not a preflight is still the transcoder's 405.
    expect((await send(server, "OPTIONS", `/iam/v2beta1/groups/${group}`, { origin: APP })).status).toBe(405);
  });

  it("are logged like any request", async () => {
    await preflight(server, `/iam/v2beta1/groups?x=secret-looking`, APP, "GET", "authorization");
    let line: JsonObject | undefined;
    for (let i = 0; i < 50 && !line; i++) {
      line = lines.find((l) => l["msg"] === "request" && l["method"] === "OPTIONS" && l["path"] === "/iam/v2beta1/groups");
      if (!line) await new Promise((r) => setTimeout(r, 20));
    }
    expect(line).toMatchObject({ status: 204 });
    expect(JSON.stringify(lines)).not.toContain("secret-looking");
  });
});

describe("actual requests from an allowed origin", () => {
  it("REST GET: readable, with the exposed headers", async () => {
    const res = await send(server, "GET", `/iam/v2beta1/groups/${group}`, { origin: APP, authorization: `Bearer ${server.token}` });
    expect(res.status).toBe(200);
    expect((JSON.parse(res.body) as JsonObject)["uid"]).toBe(group);
    expectReadable(res, APP);
  });

  it("Connect POST: readable", async () => {
    const res = await send(
      server,
      "POST",
      CONNECT_PATH,
      { origin: DEV, authorization: `Bearer ${server.token}`, "content-type": "application/json" },
      "{}",
    );
    expect(res.status, res.body).toBe(200);
    expect(JSON.stringify(JSON.parse(res.body))).toContain(group);
    expectReadable(res, DEV);
  });

  it("gRPC-Web POST: readable, grpc-status exposed", async () => {
    // An empty ListGroupsRequest in one uncompressed frame.
    const frame = Buffer.from([0, 0, 0, 0, 0]);
    const res = await send(
      server,
      "POST",
      CONNECT_PATH,
      { origin: APP, authorization: `Bearer ${server.token}`, "content-type": "application/grpc-web+proto", "x-grpc-web": "1" },
      frame,
    );
    expect(res.status).toBe(200);
    expectReadable(res, APP);
  });

  it("errors are readable too (401, unknown REST path)", async () => {
    const unauthenticated = await send(server, "GET", "/iam/v2beta1/groups", { origin: APP });
    expect(unauthenticated.status).toBe(401);
    expectReadable(unauthenticated, APP);
    const unknown = await send(server, "GET", "/iam/v2beta1/no-such-thing", { origin: APP, authorization: `Bearer ${server.token}` });
    expect(unknown.status).toBe(404);
    expectReadable(unknown, APP);
  });
});

describe("routes outside the API", () => {
  it("get no CORS headers, even from an allowed origin", async () => {
    const authPrefix = new URL(server.app.urls.authUrl).pathname.replace(/\/+$/, "");
    for (const path of [
      "/healthz",
      "/readyz",
      "/metrics",
      `${authPrefix}/sts/exchange`,
      `${authPrefix}/oauth`,
      `${authPrefix}/oauth/callback`,
      `${authPrefix}/.well-known/jwks.json`,
    ]) {
      const pre = await preflight(server, path, APP, "GET", "authorization");
      expect(pre.status, path).not.toBe(204);
      expect(pre.status, path).toBeLessThan(500);
      expect(corsHeadersOf(pre.headers), path).toEqual([]);
      const get = await send(server, "GET", path, { origin: APP });
      expect(get.status, path).toBeLessThan(500);
      expect(corsHeadersOf(get.headers), path).toEqual([]);
    }
  });
});

describe("origins that are not allowed", () => {
  it("get a 403 preflight and answers without CORS headers", async () => {
    const pre = await preflight(server, CONNECT_PATH, "https://evil.example.net", "POST", "authorization,content-type");
    expect(pre.status).toBe(403);
    expect(corsHeadersOf(pre.headers)).toEqual([]);
    const get = await send(server, "GET", `/iam/v2beta1/groups/${group}`, {
      origin: "https://evil.example.net",
      authorization: `Bearer ${server.token}`,
    });
    expect(get.status).toBe(200);
    expect(corsHeadersOf(get.headers)).toEqual([]);
  });

  it("get nothing from a server with no origins configured (the default)", async () => {
    const pre = await preflight(plain, `/iam/v2beta1/groups`, APP, "GET", "authorization");
    expect(pre.status).toBe(403);
    expect(corsHeadersOf(pre.headers)).toEqual([]);
    const post = await send(
      plain,
      "POST",
      CONNECT_PATH,
      { origin: APP, authorization: `Bearer ${plain.token}`, "content-type": "application/json" },
      "{}",
    );
    expect(post.status).toBe(200);
    expect(corsHeadersOf(post.headers)).toEqual([]);
    expect(post.headers["vary"]).toBeUndefined();
  });

  it("odd Origin values never match and never fail the server", async () => {
    const odd = [
      "null",
      "https://app.example.com.evil.net",
      "https://app.example.co",
      "https://app.example.com:443",
      "https://app.example.com/",
      "HTTPS://APP.EXAMPLE.COM",
      "http://app.example.com",
      `${APP}, ${DEV}`,
      "*",
      "",
      `https://${"a".repeat(10_000)}.example.com`,
      "https://app.example.com\u00e9",
    ];
    for (const origin of odd) {
      const label = JSON.stringify(origin.slice(0, 60));
      const pre = await preflight(server, CONNECT_PATH, origin, "POST", "content-type");
      expect(pre.status, label).toBe(403);
      expect(corsHeadersOf(pre.headers), label).toEqual([]);
      const get = await send(server, "GET", `/iam/v2beta1/groups/${group}`, { origin, authorization: `Bearer ${server.token}` });
      expect(get.status, label).toBe(200);
      expect(corsHeadersOf(get.headers), label).toEqual([]);
    }
  });

  it("bytes no HTTP client sends (NUL, two Origin headers) are never a 500 nor allowed", async () => {
    const heads = [
      `OPTIONS ${CONNECT_PATH} HTTP/1.1\r\nHost: x\r\nOrigin: ${APP}\u0000\r\nAccess-Control-Request-Method: POST\r\n\r\n`,
      `OPTIONS ${CONNECT_PATH} HTTP/1.1\r\nHost: x\r\nOrigin: ${APP}\r\nOrigin: https://evil.example.net\r\nAccess-Control-Request-Method: POST\r\n\r\n`,
      `GET /iam/v2beta1/groups HTTP/1.1\r\nHost: x\r\nOrigin: \u0000${APP}\r\n\r\n`,
      `OPTIONS ${CONNECT_PATH} HTTP/1.1\r\nHost: x\r\nOrigin: ${APP}\u00ff\r\nAccess-Control-Request-Method: POST\r\n\r\n`,
    ];
    for (const head of heads) {
      const { status, text } = await sendRaw(server, head);
      expect(status, JSON.stringify(head)).toBeGreaterThanOrEqual(400);
      expect(status, JSON.stringify(head)).toBeLessThan(500);
      expect(text.toLowerCase()).not.toContain("access-control-allow-origin");
    }
  });
});
