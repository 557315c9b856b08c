import { execFileSync } from "node:child_process";
import http from "node:http";
import http2 from "node:http2";
import https from "node:https";
import type { TLSSocket } from "node:tls";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { startTestServer, type TestServer } from "../support/server.js";
import { sharedServer } from "../support/shared-server.js";

describe("ops routes", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await sharedServer();
  });

  it("answers /healthz and /readyz without a token", async () => {
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ready" });
  });

  it("answers GET and HEAD / with where to start (/docs), not a 404", async () => {
    const root = await fetch(`${server.url}/`);
    expect(root.status).toBe(200);
    expect(await root.json()).toMatchObject({ docs: "/docs", openapi: "/openapi.json", health: "/healthz" });
    expect(root.headers.get("link")).toBe('</docs>; rel="service-doc", </openapi.json>; rel="service-desc"');
    const head = await fetch(`${server.url}/`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
    expect((await fetch(`${server.url}/docs`)).status).toBe(200);
    const post = await fetch(`${server.url}/`, { method: "POST" });
    expect(post.status).toBe(405);
  });
});

describe("graceful shutdown", () => {
  it("finishes a request in flight, then refuses new connections", async () => {
    const server = await startTestServer();
    const body = JSON.stringify({ name: "late-body", description: "x".repeat(1000) });
    const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(
        `${server.url}/iam/v2beta1/groups`,
        {
          method: "POST",
          headers: {
            authorization: `Bearer ${server.token}`,
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body),
          },
        },
        (res) => {
          let text = "";
          res.on("data", (c: Buffer) => (text += c.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on("error", reject);
      req.write(body.slice(0, 10));
      // the rest of the body arrives after shutdown has begun
      setTimeout(() => req.end(body.slice(10)), 300);
    });
    await new Promise((r) => setTimeout(r, 100));
    const closing = server.stop();
    const res = await response;
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toMatchObject({ name: "late-body" });
    await closing;
    await expect(fetch(`${server.url}/healthz`)).rejects.toThrow();
  });
});

describe("TLS with ALPN", () => {
  let server: TestServer;
  let dir: string;
  let cert: Buffer;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "platform-tls-"));
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=DNS:localhost,IP:127.0.0.1",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
    cert = await readFile(join(dir, "cert.pem"));
    server = await startTestServer({ PLATFORM_TLS_CERT: join(dir, "cert.pem"), PLATFORM_TLS_KEY: join(dir, "key.pem") });
  });
  afterAll(async () => {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("serves gRPC over h2 and REST over HTTP/1.1 on one TLS port", async () => {
    const baseUrl = `https://localhost:${server.app.port}`;
    const client = createClient(
      GroupsService,
      createGrpcTransport({
        baseUrl,
        nodeOptions: { ca: cert },
        interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${server.token}`), next(req))],
      }),
    );
    const g = await client.createGroup({ group: { name: "tls-org" } });
    expect(g.uid).toMatch(/^[0-9a-f]{40}$/);

    const viaH1 = await new Promise<{ status: number; alpn: string | false; text: string }>((resolve, reject) => {
      const req = https.request(
        `${baseUrl}/iam/v2beta1/groups/${g.uid}`,
        { headers: { authorization: `Bearer ${server.token}` }, ca: cert, ALPNProtocols: ["http/1.1"] } as https.RequestOptions,
        (res) => {
          let text = "";
          const alpn = (res.socket as TLSSocket).alpnProtocol ?? false;
          res.on("data", (c: Buffer) => (text += c.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, alpn, text }));
        },
      );
      req.on("error", reject);
      req.end();
    });
    expect(viaH1.status).toBe(200);
    expect(viaH1.alpn).toBe("http/1.1");
    expect(JSON.parse(viaH1.text)).toMatchObject({ uid: g.uid, name: "tls-org" });

    const session = http2.connect(baseUrl, { ca: cert });
    try {
      await new Promise<void>((resolve) => session.once("connect", () => resolve()));
      expect(session.alpnProtocol).toBe("h2");
    } finally {
      session.close();
    }
  });
});
