import * as http from "node:http";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createHandlerContext, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { invalidArgument, notFound } from "../errors/index.js";
import {
  GroupSchema,
  GroupsService,
  ListGroupsResponseSchema,
  type Group,
  type ListGroupsRequest,
} from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { createRestHandler, type RestHandler, type RestHandlerOptions } from "./index.js";

const NAME_RULE = "must match ^[a-z0-9 ._-]{1,}$";
const CREATED = timestampFromDate(new Date("2024-05-06T07:08:09.123Z"));

/** What the fake implementation saw, for assertions. */
interface Seen {
  calls: string[];
  authorization: (string | null)[];
  requestIds: (string | null)[];
  list?: ListGroupsRequest;
  createParent?: string;
  updateMask?: string[];
  updateUid?: string;
  aborted?: boolean;
  internalErrors: unknown[];
}

function fakeGroups(store: Map<string, Group>, seen: Seen): ServiceImpl<typeof GroupsService> {
  const record = (name: string, header: Headers): void => {
    seen.calls.push(name);
    seen.authorization.push(header.get("authorization"));
    seen.requestIds.push(header.get("x-request-id"));
  };
  return {
    listGroups(req, ctx) {
      record("ListGroups", ctx.requestHeader);
      seen.list = req;
      const groups = [...store.values()].filter(
        (g) => req.uidp?.descendantsOf === undefined || g.uid.startsWith(`${req.uidp.descendantsOf}/`),
      );
      return create(ListGroupsResponseSchema, { groups, totalCount: BigInt(groups.length), skipped: req.skip });
    },
    getGroup(req, ctx) {
      record("GetGroup", ctx.requestHeader);
      if (req.uid === "boom") throw new Error("database password is hunter2");
      if (req.uid === "slow") {
        // Never answers; settles only when the caller goes away.
        return new Promise<Group>((_, reject) => {
          ctx.signal.addEventListener("abort", () => {
            seen.aborted = true;
            reject(ctx.signal.reason);
          });
        });
      }
      const g = store.get(req.uid);
      if (g === undefined) throw notFound("group", req.uid);
      return g;
    },
    createGroup(req, ctx) {
      record("CreateGroup", ctx.requestHeader);
      seen.createParent = req.parent;
      const name = req.group?.name ?? "";
      if (!/^[a-z0-9 ._-]{1,}$/.test(name)) throw invalidArgument("name", NAME_RULE);
      const uid = req.parent === "" ? "r00t" : `${req.parent}/c41d`;
      const g = create(GroupSchema, { uid, name, description: req.group?.description ?? "", createTime: CREATED });
      store.set(uid, g);
      return g;
    },
    updateGroup(req, ctx) {
      record("UpdateGroup", ctx.requestHeader);
      seen.updateMask = req.updateMask?.paths;
      seen.updateUid = req.group?.uid;
      const g = store.get(req.group?.uid ?? "");
      if (g === undefined) throw notFound("group", req.group?.uid ?? "");
      for (const p of req.updateMask?.paths ?? []) {
        if (p === "name") g.name = req.group?.name ?? "";
        if (p === "description") g.description = req.group?.description ?? "";
      }
      return g;
    },
    deleteGroup(req, ctx) {
      record("DeleteGroup", ctx.requestHeader);
      store.delete(req.uid);
      return {};
    },
  };
}

let server: http.Server;
let base: string;
/** Bytes the server had read from the connection when its last response finished. */
let lastBytesRead = 0;
// Long-lived objects the fake holds on to; each test resets their contents.
const store = new Map<string, Group>();
const seen: Seen = { calls: [], authorization: [], requestIds: [], internalErrors: [] };

function makeHandler(options: Partial<RestHandlerOptions> = {}): RestHandler {
  const impl = fakeGroups(store, seen) as unknown as Record<string, (req: unknown, ctx: HandlerContext) => unknown>;
  return createRestHandler({
    services: [GroupsService],
    // As the server does: the implementation is called directly with the bound message.
    invoke: async ({ method, message, header, requestMethod, url, clientGone }) => {
      const context = createHandlerContext({
        service: GroupsService,
        method,
        protocolName: "rest",
        requestMethod,
        url,
        requestHeader: header.headers,
        requestSignal: clientGone.signal,
      });
      return create(method.output, (await impl[method.localName]!(message, context)) as never);
    },
    serviceDomain: "localhost",
    onInternalError: (e) => seen.internalErrors.push(e),
    ...options,
  });
}

function startServer(options: Partial<RestHandlerOptions> = {}): Promise<{ server: http.Server; base: string }> {
  const handler = makeHandler(options);
  const s = http.createServer((req, res) => {
    res.once("finish", () => (lastBytesRead = req.socket.bytesRead));
    void handler(req, res);
  });
  return new Promise((resolve) => {
    s.listen(0, "127.0.0.1", () => resolve({ server: s, base: `http://127.0.0.1:${(s.address() as AddressInfo).port}` }));
  });
}

async function call(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: unknown; headers: Headers }> {
  const res = await fetch(base + path, {
    method,
    headers: { authorization: "Bearer t0k3n", ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json(), headers: res.headers };
}

beforeAll(async () => {
  ({ server, base } = await startServer());
});

afterAll(async () => {
  // A test leaves a connection mid-request (a body it stopped sending), which close() would
  // wait for until the server's request timeout: 2.6 s of nothing.
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  store.clear();
  store.set(
    "root",
    create(GroupSchema, { uid: "root", name: "acme", createTime: CREATED, updateTime: CREATED, resourceLimits: { repos: 5 } }),
  );
  store.set("root/child", create(GroupSchema, { uid: "root/child", name: "team", verified: true }));
  Object.assign(seen, { calls: [], authorization: [], requestIds: [], internalErrors: [] } satisfies Seen);
  delete seen.list;
  delete seen.createParent;
  delete seen.updateMask;
  delete seen.updateUid;
  delete seen.aborted;
});

const CHILD_JSON = {
  uid: "root/child",
  name: "team",
  description: "",
  resourceLimits: {},
  verified: true,
  createTime: null,
  updateTime: null,
};

describe("REST transcoder over HTTP", () => {
  it("lists with query parameters bound into the request", async () => {
    const res = await call(
      "GET",
      "/iam/v2beta1/groups?pageSize=10&uidp.descendants_of=root&uidp.ids=a&uidp.ids=b&orderBy=name%20desc&skip=1",
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(seen.list?.pageSize).toBe(10);
    expect(seen.list?.orderBy).toBe("name desc");
    expect(seen.list?.uidp?.descendantsOf).toBe("root");
    expect(seen.list?.uidp?.ids).toEqual(["a", "b"]);
    expect(res.json).toEqual({ groups: [CHILD_JSON], nextPageToken: "", totalCount: "1", skipped: 1 });
  });

  it("gets a group by a multi-segment uid", async () => {
    const res = await call("GET", "/iam/v2beta1/groups/root/child");
    expect(res.status).toBe(200);
    expect(res.json).toEqual(CHILD_JSON);
    const root = await call("GET", "/iam/v2beta1/groups/root");
    expect(root.json).toEqual({
      uid: "root",
      name: "acme",
      description: "",
      resourceLimits: { repos: 5 },
      verified: false,
      createTime: "2024-05-06T07:08:09.123Z",
      updateTime: "2024-05-06T07:08:09.123Z",
    });
  });

  it("renders a service NOT_FOUND as 404 with its details and ErrorInfo", async () => {
    const res = await call("GET", "/iam/v2beta1/groups/nope/x");
    expect(res.status).toBe(404);
    expect(res.json).toEqual({
      code: 5,
      message: "Not found: group nope/x",
      details: [
        {
          "@type": "type.googleapis.com/google.rpc.ResourceInfo",
          resourceType: "group",
          resourceName: "nope/x",
          description: "group does not exist",
        },
        { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "NOT_FOUND", domain: "iam.localhost" },
      ],
    });
  });

  it("creates a root group with POST /iam/v2beta1/groups", async () => {
    const res = await call("POST", "/iam/v2beta1/groups", { name: "newco", description: "d" });
    expect(res.status).toBe(200);
    expect(seen.createParent).toBe("");
    expect(res.json).toMatchObject({
      uid: "r00t",
      name: "newco",
      description: "d",
      createTime: "2024-05-06T07:08:09.123Z",
      updateTime: null,
    });
  });

  it("creates a child group with POST /iam/v2beta1/groups/{parent=**}", async () => {
    const res = await call("POST", "/iam/v2beta1/groups/root/child", { name: "sub" });
    expect(res.status).toBe(200);
    expect(seen.createParent).toBe("root/child");
    expect(res.json).toMatchObject({ uid: "root/child/c41d", name: "sub" });
  });

  it("PATCH without updateMask sends the fields present in the body, even empty ones", async () => {
    const res = await call("PATCH", "/iam/v2beta1/groups/root/child", { name: "renamed", description: "" });
    expect(res.status).toBe(200);
    expect(seen.updateUid).toBe("root/child");
    expect(seen.updateMask).toEqual(["name", "description"]);
    expect(res.json).toMatchObject({ uid: "root/child", name: "renamed", description: "" });
  });

  it("PATCH with updateMask passes the caller's mask through", async () => {
    const res = await call("PATCH", "/iam/v2beta1/groups/root?updateMask=description", { name: "ignored", description: "kept" });
    expect(res.status).toBe(200);
    expect(seen.updateMask).toEqual(["description"]);
    expect(res.json).toMatchObject({ name: "acme", description: "kept" });
    await call("PATCH", "/iam/v2beta1/groups/root?update_mask=resourceLimits,name", {});
    expect(seen.updateMask).toEqual(["resource_limits", "name"]);
    await call("PATCH", "/iam/v2beta1/groups/root?updateMask=*", {});
    expect(seen.updateMask).toEqual(["*"]);
  });

  it("DELETE renders google.protobuf.Empty as {}", async () => {
    const res = await call("DELETE", "/iam/v2beta1/groups/root/child");
    expect(res.status).toBe(200);
    expect(res.json).toEqual({});
    expect(store.has("root/child")).toBe(false);
  });

  it("renders an invalidArgument from the service as 400 with BadRequest and ErrorInfo", async () => {
    const res = await call("POST", "/iam/v2beta1/groups", { name: "Bad Name!" });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      code: 3,
      message: `Invalid argument: name: ${NAME_RULE}`,
      details: [
        { "@type": "type.googleapis.com/google.rpc.BadRequest", fieldViolations: [{ field: "name", description: NAME_RULE }] },
        { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "INVALID_ARGUMENT", domain: "iam.localhost" },
      ],
    });
  });

  it.each([
    ["malformed JSON", "POST", "/iam/v2beta1/groups", '{"name": ', "body"],
    ["an unknown field", "POST", "/iam/v2beta1/groups", '{"name": "a", "colour": "red"}', "group.colour"],
    ["a wrong type", "POST", "/iam/v2beta1/groups", '{"name": 42}', "group.name"],
    ["a non-object body", "PATCH", "/iam/v2beta1/groups/root", '"name"', "group"],
    ["a wrong query type", "GET", "/iam/v2beta1/groups?pageSize=lots", undefined, "pageSize"],
    ["an unknown query parameter", "GET", "/iam/v2beta1/groups?colour=red", undefined, "colour"],
  ])("rejects %s with 400 INVALID_ARGUMENT naming the field", async (_what, method, path, body, field) => {
    const res = await call(method, path, body);
    expect(res.status).toBe(400);
    const json = res.json as { code: number; message: string; details: Array<Record<string, unknown>> };
    expect(json.code).toBe(3);
    expect(json.message).toMatch(new RegExp(`^Invalid argument: ${field.replace(".", "\\.")}: `));
    expect(json.details).toEqual([
      {
        "@type": "type.googleapis.com/google.rpc.BadRequest",
        fieldViolations: [{ field, description: expect.any(String) }],
      },
      { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "INVALID_ARGUMENT", domain: "iam.localhost" },
    ]);
    expect(seen.calls).toEqual([]);
  });

  it("rejects a body over 1 MiB with 400 without calling the service", async () => {
    const big = JSON.stringify({ name: "x", description: "d".repeat(1024 * 1024 + 10) });
    const res = await call("POST", "/iam/v2beta1/groups", big);
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({
      code: 3,
      message: "Invalid argument: body: is larger than the limit of 1048576 bytes",
    });
    // Refused on its Content-Length: the body was not read.
    expect(lastBytesRead).toBeLessThan(256 * 1024);
    expect(seen.calls).toEqual([]);
  });

  it("accepts a body just under the limit", async () => {
    const res = await call("POST", "/iam/v2beta1/groups", JSON.stringify({ name: "x", description: "d".repeat(1000 * 1000) }));
    expect(res.status).toBe(200);
  });

  it("answers an unknown path with 404 NOT_FOUND and ErrorInfo for its area", async () => {
    const res = await call("GET", "/iam/v2beta1/nothing");
    expect(res.status).toBe(404);
    expect(res.json).toEqual({
      code: 5,
      message: "Not found: no REST route for /iam/v2beta1/nothing",
      details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "NOT_FOUND", domain: "iam.localhost" }],
    });
    const other = await call("GET", "/elsewhere");
    expect(other.status).toBe(404);
    expect(other.json).toMatchObject({ code: 5, details: [{ domain: "localhost" }] });
    const trailing = await call("GET", "/iam/v2beta1/groups/");
    expect(trailing.status).toBe(404);
  });

  it("answers a known path with the wrong method with 405 UNIMPLEMENTED and Allow", async () => {
    const res = await call("PUT", "/iam/v2beta1/groups/root");
    expect(res.status).toBe(405);
    expect(res.headers.get("allow")).toBe("DELETE, GET, PATCH, POST");
    expect(res.json).toEqual({
      code: 12,
      message: "Unimplemented: PUT is not allowed on /iam/v2beta1/groups/root; allowed: DELETE, GET, PATCH, POST",
      details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "UNIMPLEMENTED", domain: "iam.localhost" }],
    });
    const list = await call("DELETE", "/iam/v2beta1/groups");
    expect(list.status).toBe(405);
    expect(list.headers.get("allow")).toBe("GET, POST");
  });

  it("forwards the authorization and x-request-id headers to the implementation", async () => {
    await call("GET", "/iam/v2beta1/groups/root", undefined, { "x-request-id": "req-1" });
    expect(seen.authorization).toEqual(["Bearer t0k3n"]);
    expect(seen.requestIds).toEqual(["req-1"]);
  });

  it("hides the internals of an unexpected failure behind 500 INTERNAL", async () => {
    const res = await call("GET", "/iam/v2beta1/groups/boom");
    expect(res.status).toBe(500);
    expect(res.json).toEqual({
      code: 13,
      message: "Internal error",
      details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "INTERNAL", domain: "iam.localhost" }],
    });
    expect(JSON.stringify(res.json)).not.toContain("hunter2");
  });
});

describe("REST transcoder and disconnecting clients", () => {
  it("aborts the call when the HTTP client goes away", async () => {
    const client = new AbortController();
    const pending = fetch(`${base}/iam/v2beta1/groups/slow`, { signal: client.signal });
    await vi.waitFor(() => expect(seen.calls).toEqual(["GetGroup"]));
    client.abort();
    await expect(pending).rejects.toThrow();
    await vi.waitFor(() => expect(seen.aborted).toBe(true));
  });
});

describe("REST transcoder over HTTP/2", () => {
  let h2: http2.Http2Server;
  let session: http2.ClientHttp2Session;

  beforeAll(async () => {
    const handler = makeHandler({ maxBodyBytes: 64 });
    h2 = http2.createServer((req, res) => void handler(req, res));
    await new Promise<void>((resolve) => h2.listen(0, "127.0.0.1", resolve));
    session = http2.connect(`http://127.0.0.1:${(h2.address() as AddressInfo).port}`);
  });

  afterAll(async () => {
    session.close();
    await new Promise((resolve) => h2.close(resolve));
  });

  function h2call(method: string, path: string, body?: string): Promise<{ status: number; json: unknown; allow: unknown }> {
    return new Promise((resolve, reject) => {
      const stream = session.request({ ":method": method, ":path": path, authorization: "Bearer h2" });
      let status = 0;
      let allow: unknown;
      let text = "";
      stream.on("response", (headers) => {
        status = Number(headers[":status"]);
        allow = headers["allow"];
      });
      stream.setEncoding("utf8");
      stream.on("data", (chunk: string) => (text += chunk));
      stream.on("end", () => resolve({ status, json: JSON.parse(text) as unknown, allow }));
      stream.on("error", reject);
      stream.end(body);
    });
  }

  it("serves the same routes through the compat API", async () => {
    const res = await h2call("GET", "/iam/v2beta1/groups/root/child");
    expect(res.status).toBe(200);
    expect(res.json).toEqual(CHILD_JSON);
    expect(seen.authorization).toEqual(["Bearer h2"]);
  });

  it("binds bodies and renders errors", async () => {
    const created = await h2call("POST", "/iam/v2beta1/groups/root", '{"name": "h2"}');
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({ uid: "root/c41d", name: "h2" });
    const tooBig = await h2call("POST", "/iam/v2beta1/groups", JSON.stringify({ name: "x".repeat(100) }));
    expect(tooBig.status).toBe(400);
    expect(tooBig.json).toMatchObject({ code: 3, message: "Invalid argument: body: is larger than the limit of 64 bytes" });
    const wrongMethod = await h2call("PUT", "/iam/v2beta1/groups");
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.allow).toBe("GET, POST");
  });
});

describe("REST transcoder with a small body limit", () => {
  let small: { server: http.Server; base: string };

  beforeAll(async () => {
    small = await startServer({ maxBodyBytes: 64 });
  });

  afterAll(async () => {
    await new Promise((resolve) => small.server.close(resolve));
  });

  it("stops reading a chunked body at the limit", async () => {
    const chunk = new TextEncoder().encode(`{"name": "${"a".repeat(40)}", `);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        // Far more than the limit (~10 MB), with no Content-Length to reject it up front.
        if (sent++ < 200_000) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const res = await fetch(`${small.base}/iam/v2beta1/groups`, {
      method: "POST",
      body: stream,
      duplex: "half",
    } as RequestInit & { duplex: "half" });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 3, message: "Invalid argument: body: is larger than the limit of 64 bytes" });
    // The client offered ~10 MB; the server read one socket buffer's worth and closed.
    expect(lastBytesRead).toBeLessThan(256 * 1024);
    expect(sent).toBeLessThan(200_000);
    expect(seen.calls).toEqual([]);
  });

  it("still accepts bodies within the limit", async () => {
    const res = await fetch(`${small.base}/iam/v2beta1/groups`, { method: "POST", body: '{"name": "ok"}' });
    expect(res.status).toBe(200);
    expect(seen.createParent).toBe("");
  });
});
