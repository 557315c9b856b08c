import { readFile } from "node:fs/promises";
import { Code, ConnectError } from "@connectrpc/connect";
import type { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EventsService } from "../../gen/platform/events/v2beta1/events_pb.js";
import { GroupsService } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { createLogger } from "../../src/server/logger.js";
import { connectClient, restClient, type JsonObject } from "../support/clients.js";
import { bootstrapIdentityUid, createGroup, uidOf } from "../support/rest-iam.js";
import { startTestServer, type TestServer } from "../support/server.js";

// One structured line per request on every protocol, with the request id
// echoed (or made), and never a token or a body.

const lines: JsonObject[] = [];
let server: TestServer;
let group: string;

beforeAll(async () => {
  const destination: pino.DestinationStream = { write: (line: string) => void lines.push(JSON.parse(line) as JsonObject) };
  server = await startTestServer({}, { logger: createLogger("info", destination) });
  group = uidOf(await createGroup(restClient(server.url, server.token), "access-log"));
});
afterAll(async () => {
  await server?.stop();
});

async function lineFor(requestId: string): Promise<JsonObject> {
  for (let i = 0; i < 50; i++) {
    const found = lines.find((l) => l["msg"] === "request" && l["requestId"] === requestId);
    if (found) return found;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no access-log line for ${requestId}`);
}

describe("the access log", () => {
  it("logs a REST call with its route's RPC, status, identity and duration, and echoes x-request-id", async () => {
    const res = await fetch(`${server.url}/iam/v2beta1/groups/${group}`, {
      headers: { authorization: `Bearer ${server.token}`, "x-request-id": "rest-1" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toBe("rest-1");
    const line = await lineFor("rest-1");
    expect(line).toMatchObject({
      level: 30,
      method: "GET",
      path: `/iam/v2beta1/groups/${group}`,
      status: 200,
      rpc: "platform.iam.v2beta1.GroupsService/GetGroup",
      code: 0,
      identity: bootstrapIdentityUid(server.token),
    });
    expect(typeof line["durationMs"]).toBe("number");
    expect(JSON.stringify(line)).not.toContain(server.token);
    // The path, never the query string.
    await fetch(`${server.url}/iam/v2beta1/groups?name=secret-looking`, {
      headers: { authorization: `Bearer ${server.token}`, "x-request-id": "rest-2" },
    });
    expect(await lineFor("rest-2")).toMatchObject({ path: "/iam/v2beta1/groups", rpc: "platform.iam.v2beta1.GroupsService/ListGroups" });
    expect(JSON.stringify(lines)).not.toContain("secret-looking");
  });

  it("logs gRPC and Connect calls, with the RPC's code where HTTP says 200", async () => {
    for (const protocol of ["grpc", "connect"] as const) {
      const id = `${protocol}-1`;
      const client = connectClient(GroupsService, server.url, server.token, protocol);
      const err = await client.getGroup({ uid: "0".repeat(40) }, { headers: { "x-request-id": id } }).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(err?.code).toBe(Code.NotFound);
      const line = await lineFor(id);
      expect(line).toMatchObject({
        method: "POST",
        path: "/platform.iam.v2beta1.GroupsService/GetGroup",
        rpc: "platform.iam.v2beta1.GroupsService/GetGroup",
        code: Code.NotFound,
      });
      expect(line["status"]).toBe(protocol === "grpc" ? 200 : 404);
    }
  });

  it("makes a request id when none (or a malformed one) is given", async () => {
    for (const given of [undefined, "bad id with spaces", "x".repeat(200)]) {
      const res = await fetch(`${server.url}/healthz`, { headers: given ? { "x-request-id": given } : {} });
      const id = res.headers.get("x-request-id") ?? "";
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      expect(await lineFor(id)).toMatchObject({ path: "/healthz", status: 200 });
    }
  });
});

describe("/metrics", () => {
  it("counts requests by RPC, code and status with latency buckets, grants-cache lookups, token exchanges and the process", async () => {
    await fetch(`${server.url}/iam/v2beta1/groups/${group}`, { headers: { authorization: `Bearer ${server.token}` } });
    await fetch(`${server.url}/sts/exchange?aud=${encodeURIComponent(server.app.urls.baseUrl)}&identity=%00`);
    await fetch(`${server.url}/sts/exchange?aud=${encodeURIComponent(server.app.urls.baseUrl)}&identity=${group}/0123456789abcdef`);
    const res = await fetch(`${server.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toMatch(
      /platform_request_duration_seconds_count\{rpc="platform\.iam\.v2beta1\.GroupsService\/GetGroup",code="OK",status="200"\} [1-9]/,
    );
    expect(text).toMatch(
      /platform_request_duration_seconds_bucket\{le="0\.005",rpc="platform\.iam\.v2beta1\.GroupsService\/GetGroup",code="OK",status="200"\} \d+/,
    );
    expect(text).toMatch(/platform_grants_cache_lookups_total\{result="hit"\} [1-9]/);
    expect(text).toMatch(/platform_token_exchanges_total\{outcome="invalid"\} [1-9]/);
    expect(text).toMatch(/platform_token_exchanges_total\{outcome="refused"\} [1-9]/);

    expect(text).toMatch(/platform_process_cpu_seconds_total \d/);
    expect(text).toMatch(/platform_nodejs_eventloop_lag_seconds \d/);
  });

  it("shows the open WatchEvents streams", async () => {
    const streams = async () =>
      Number(/^platform_event_streams (\d+)$/m.exec(await (await fetch(`${server.url}/metrics`)).text())?.[1] ?? NaN);
    expect(await streams()).toBe(0);
    const abort = new AbortController();
    const watching = (async () => {
      for await (const e of connectClient(EventsService, server.url, server.token).watchEvents({}, { signal: abort.signal })) return e;
      return undefined;
    })().catch(() => undefined);
    for (let i = 0; i < 250 && server.app.eventHub.size === 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await streams()).toBe(1);
    abort.abort();
    await watching;
    for (let i = 0; i < 250 && server.app.eventHub.size > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await streams()).toBe(0);
  });

  it("times database queries and shows the pool", async () => {
    const count = async (outcome: string) => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      return Number(new RegExp(`^platform_db_query_duration_seconds_count\\{outcome="${outcome}"\\} (\\d+)$`, "m").exec(text)?.[1] ?? NaN);
    };
    const before = await count("ok");
    // A group nobody has cached: its get is at least one query.
    const res = await fetch(`${server.url}/iam/v2beta1/groups/${group}`, { headers: { authorization: `Bearer ${server.token}` } });
    expect(res.status).toBe(200);
    expect(await count("ok")).toBeGreaterThan(before);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    expect(text).toMatch(/^platform_db_query_duration_seconds_bucket\{le="0\.005",outcome="ok"\} \d+$/m);
    expect(text).toMatch(/^platform_db_queries_in_flight 0$/m);
    expect(text).toMatch(new RegExp(`^platform_db_pool_size ${server.app.database.kind === "postgres" ? 10 : 1}$`, "m"));
  });
});

describe("/version", () => {
  it("names the package, its version and the Node.js running it", async () => {
    const res = await fetch(`${server.url}/version`);
    expect(res.status).toBe(200);
    const pkg = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8")) as { name: string; version: string };
    expect(await res.json()).toEqual({ name: pkg.name, version: pkg.version, node: process.version });
    expect((await fetch(`${server.url}/version`, { method: "POST" })).status).toBe(405);
  });
});
