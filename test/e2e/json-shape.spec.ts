import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restClient, type JsonObject } from "../support/clients.js";
import { startTestServer, type TestServer } from "../support/server.js";

// Connect JSON and REST show a message the same way (docs/rest.md, "API conventions"):
// every field, `null` for an unset message, milliseconds on timestamps.

let server: TestServer;
let org: JsonObject;

// A server of its own, not the shared one: a test lists every role in one page,
// which other files' custom roles would overflow.
beforeAll(async () => {
  server = await startTestServer();
  const rest = restClient(server.url, server.token);
  org = (await rest("POST", "/iam/v2beta1/groups", { name: "json-shape" })).body;
  for (let i = 0; i < 40; i++)
    await rest("POST", `/iam/v2beta1/groups/${String(org["uid"])}`, { name: `child ${i}`, description: "x".repeat(20) });
});
afterAll(async () => {
  await server?.stop();
});

async function connect(
  method: string,
  message: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Buffer; headers: Headers }> {
  const res = await fetch(`${server.url}/${method}`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(message),
  });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), headers: res.headers };
}

const json = (b: Buffer): unknown => JSON.parse(b.toString("utf8"));

describe("one JSON shape", () => {
  it("GetGroup: Connect JSON is what REST renders, field for field", async () => {
    const uid = String(org["uid"]);
    const rest = await restClient(server.url, server.token)("GET", `/iam/v2beta1/groups/${uid}`);
    const viaConnect = await connect("platform.iam.v2beta1.GroupsService/GetGroup", { uid });
    expect(viaConnect.status).toBe(200);
    expect(json(viaConnect.body)).toEqual(rest.body);
    // The fields REST shows even when unset or empty.
    expect(Object.keys(rest.body)).toEqual(expect.arrayContaining(["uid", "name", "description", "verified", "createTime", "updateTime"]));
    expect(String(rest.body["createTime"])).toMatch(/\.\d{3}Z$/);
  });

  it("a list with its count, and messages left unset, render alike", async () => {
    const uid = String(org["uid"]);
    const rest = await restClient(server.url, server.token)("GET", `/iam/v2beta1/groups?uidp.children_of=${uid}&page_size=5`);
    const viaConnect = await connect("platform.iam.v2beta1.GroupsService/ListGroups", { uidp: { childrenOf: uid }, pageSize: 5 });
    // The page token carries the time it was issued (and is sealed), so it differs per call; nothing else does.
    const { nextPageToken: restToken, ...restRest } = rest.body;
    const { nextPageToken: connectToken, ...connectRest } = json(viaConnect.body) as JsonObject;
    expect(connectRest).toEqual(restRest);
    expect(typeof restToken === "string" && typeof connectToken === "string" && connectToken.length > 0).toBe(true);
    expect(rest.body["totalCount"]).toBe("40");

    const roles = await restClient(server.url, server.token)("GET", "/iam/v2beta1/roles");
    const rolesConnect = await connect("platform.iam.v2beta1.RolesService/ListRoles", {});
    expect(json(rolesConnect.body)).toEqual(roles.body);
  });

  it("is the same when the answer is compressed", async () => {
    const uid = String(org["uid"]);
    const rest = await restClient(server.url, server.token)("GET", `/iam/v2beta1/groups?uidp.children_of=${uid}&page_size=40`);
    const res = await fetch(`${server.url}/platform.iam.v2beta1.GroupsService/ListGroups`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json", "accept-encoding": "gzip" },
      body: JSON.stringify({ uidp: { childrenOf: uid }, pageSize: 40 }),
    });
    // fetch undoes the gzip itself; the length header must be that of the bytes sent.
    expect(res.headers.get("content-encoding")).toBe("gzip");
    expect(await res.json()).toEqual(rest.body);

    const raw = await new Promise<Buffer>((resolve, reject) => {
      void import("node:http").then(({ request }) => {
        const req = request(`${server.url}/platform.iam.v2beta1.GroupsService/ListGroups`, {
          method: "POST",
          headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json", "accept-encoding": "gzip" },
        });
        req.on("response", (r) => {
          const chunks: Buffer[] = [];
          r.on("data", (c: Buffer) => chunks.push(c));
          r.on("end", () => {
            const body = Buffer.concat(chunks);
            expect(Number(r.headers["content-length"])).toBe(body.length);
            resolve(gunzipSync(body));
          });
        });
        req.on("error", reject);
        req.end(JSON.stringify({ uidp: { childrenOf: uid }, pageSize: 40 }));
      });
    });
    expect(json(raw)).toEqual(rest.body);
  });

  it("compresses as the client allows, and only answers worth it", async () => {
    const uid = String(org["uid"]);
    const big = { uidp: { childrenOf: uid }, pageSize: 40 };
    const encodingFor = async (acceptEncoding: string, message: unknown = big) =>
      (await connect("platform.iam.v2beta1.GroupsService/ListGroups", message, { "accept-encoding": acceptEncoding })).headers.get(
        "content-encoding",
      );
    expect(await encodingFor("br")).toBe("br");
    expect(await encodingFor("gzip;q=0, br")).toBe("br");
    expect(await encodingFor("gzip;q=0")).toBeNull();
    expect(await encodingFor("identity")).toBeNull();
    // One small group is under the 1 KiB worth compressing.
    expect(await encodingFor("gzip", { uidp: { childrenOf: uid }, pageSize: 1 })).toBeNull();
  });

  it("leaves errors in Connect's own error shape", async () => {
    const res = await connect("platform.iam.v2beta1.GroupsService/GetGroup", { uid: `${String(org["uid"])}/0123456789abcdef` });
    expect(res.status).toBe(404);
    expect(json(res.body)).toMatchObject({ code: "not_found" });
  });
});
