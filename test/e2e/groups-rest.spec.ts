import { beforeAll, describe, expect, it } from "vitest";
import { restClient, type JsonObject, type RestResponse, type RestClient } from "../support/clients.js";
import type { TestServer } from "../support/server.js";
import { sharedServerAsAdmin } from "../support/shared-server.js";

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const ROOT_UID = /^[0-9a-f]{40}$/;

let server: TestServer;
let call: RestClient;
beforeAll(async () => ({ server, call } = await sharedServerAsAdmin()));

function details(res: RestResponse): JsonObject[] {
  return res.body["details"] as JsonObject[];
}
function detail(res: RestResponse, type: string): JsonObject | undefined {
  return details(res).find((d) => d["@type"] === `type.googleapis.com/google.rpc.${type}`);
}

async function createGroup(body: JsonObject, parent?: string): Promise<JsonObject> {
  const res = await call("POST", parent ? `/iam/v2beta1/groups/${parent}` : "/iam/v2beta1/groups", body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

async function listAll(query: string, pageSize: number): Promise<{ names: string[]; pages: RestResponse[] }> {
  const names: string[] = [];
  const pages: RestResponse[] = [];
  let token = "";
  for (let i = 0; i < 50; i++) {
    const res = await call(
      "GET",
      `/iam/v2beta1/groups?${query}&page_size=${pageSize}${token ? `&page_token=${encodeURIComponent(token)}` : ""}`,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    pages.push(res);
    names.push(...(res.body["groups"] as JsonObject[]).map((g) => g["name"] as string));
    token = res.body["nextPageToken"] as string;
    if (!token) break;
  }
  return { names, pages };
}

describe("groups over REST", () => {
  it("creates a root group with the spec's shape", async () => {
    const g = await createGroup({ name: "acme", description: "the org" });
    expect(g["uid"]).toMatch(ROOT_UID);
    expect(g).toMatchObject({ name: "acme", description: "the org", resourceLimits: {}, verified: false });
    expect(g["createTime"]).toMatch(TIMESTAMP);
    expect(g["updateTime"]).toBe(g["createTime"]);
  });

  it("creates a child group whose uid extends the parent's", async () => {
    const root = await createGroup({ name: "parent-org" });
    const child = await createGroup({ name: "team a" }, root["uid"] as string);
    expect(child["uid"]).toMatch(new RegExp(`^${root["uid"]}/[0-9a-f]{16}$`));
    const grandchild = await createGroup({ name: "sub.team_1-x" }, child["uid"] as string);
    expect(grandchild["uid"]).toMatch(new RegExp(`^${child["uid"]}/[0-9a-f]{16}$`));
    const got = await call("GET", `/iam/v2beta1/groups/${grandchild["uid"]}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(grandchild);
  });

  it("takes a child's uid with its slash percent-encoded (%2F), as generated clients send it", async () => {
    const root = await createGroup({ name: "encoded-org" });
    const enc = (uid: unknown): string => encodeURIComponent(String(uid));
    const child = await createGroup({ name: "team-enc" }, enc(root["uid"]));
    expect(child["uid"]).toMatch(new RegExp(`^${root["uid"]}/[0-9a-f]{16}$`));
    expect(enc(child["uid"])).toContain("%2F");
    const grandchild = await createGroup({ name: "sub-enc" }, enc(child["uid"]));
    const got = await call("GET", `/iam/v2beta1/groups/${enc(grandchild["uid"])}`);
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect(got.body).toEqual(grandchild);
    // Lower-case %2f and a mix with a plain slash are the same uid.
    const mixed = String(grandchild["uid"]).replace("/", "%2f");
    expect((await call("GET", `/iam/v2beta1/groups/${mixed}`)).body).toEqual(grandchild);
    const patched = await call("PATCH", `/iam/v2beta1/groups/${enc(child["uid"])}`, { description: "patched" });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body["description"]).toBe("patched");
    expect((await call("DELETE", `/iam/v2beta1/groups/${enc(grandchild["uid"])}`)).status).toBe(200);
    expect((await call("GET", `/iam/v2beta1/groups/${grandchild["uid"]}`)).status).toBe(404);
  });

  it("ignores output-only fields in a create body", async () => {
    const g = await createGroup({ name: "sneaky", verified: true, uid: "abc", createTime: "2001-01-01T00:00:00Z" });
    expect(g["verified"]).toBe(false);
    expect(g["uid"]).toMatch(ROOT_UID);
    expect(g["createTime"]).not.toBe("2001-01-01T00:00:00.000Z");
  });

  it.each([
    ["upper case", { name: "Acme" }],
    ["a forbidden character", { name: "acme!" }],
  ])("rejects %s with INVALID_ARGUMENT on name", async (_label, body) => {
    const res = await call("POST", "/iam/v2beta1/groups", body);
    expect(res.status).toBe(400);
    expect(res.body["code"]).toBe(3);
    expect(res.body["message"]).toBe("Invalid argument: name: must match the pattern ^[a-z0-9 ._-]{1,}$");
    expect(detail(res, "BadRequest")).toEqual({
      "@type": "type.googleapis.com/google.rpc.BadRequest",
      fieldViolations: [{ field: "name", description: "must match the pattern ^[a-z0-9 ._-]{1,}$" }],
    });
    expect(detail(res, "ErrorInfo")).toMatchObject({ reason: "INVALID_ARGUMENT", domain: "iam.localhost" });
  });

  it.each([
    ["an empty body", {}],
    ["an empty name", { name: "" }],
  ])("rejects %s with a REQUIRED violation on name that still states the pattern", async (_label, body) => {
    const res = await call("POST", "/iam/v2beta1/groups", body);
    expect(res.status).toBe(400);
    expect(res.body["message"]).toBe("Invalid argument: name: is required and must match the pattern ^[a-z0-9 ._-]{1,}$");
    expect(detail(res, "BadRequest")).toEqual({
      "@type": "type.googleapis.com/google.rpc.BadRequest",
      fieldViolations: [{ field: "name", description: "is required and must match the pattern ^[a-z0-9 ._-]{1,}$", reason: "REQUIRED" }],
    });
    expect(detail(res, "ErrorInfo")).toMatchObject({ reason: "INVALID_ARGUMENT", domain: "iam.localhost" });
  });

  it("answers an empty required field of another resource (a role's name) with a REQUIRED violation too", async () => {
    const org = await call("POST", "/iam/v2beta1/groups", { name: "required-org" });
    const res = await call("POST", `/iam/v2beta1/roles/${org.body["uid"] as string}`, { capabilities: ["groups.list"] });
    expect(res.status).toBe(400);
    expect(res.body["message"]).toBe("Invalid argument: name: is required");
    expect(detail(res, "BadRequest")).toEqual({
      "@type": "type.googleapis.com/google.rpc.BadRequest",
      fieldViolations: [{ field: "name", description: "is required", reason: "REQUIRED" }],
    });
  });

  it("returns NOT_FOUND with ResourceInfo for a missing group", async () => {
    const res = await call("GET", `/iam/v2beta1/groups/${"0".repeat(40)}`);
    expect(res.status).toBe(404);
    expect(res.body["code"]).toBe(5);
    expect(detail(res, "ResourceInfo")).toMatchObject({ resourceType: "group", resourceName: "0".repeat(40) });
    expect(detail(res, "ErrorInfo")).toMatchObject({ reason: "NOT_FOUND" });
  });

  it("creating under a missing parent is NOT_FOUND", async () => {
    const res = await call("POST", `/iam/v2beta1/groups/${"1".repeat(40)}`, { name: "orphan" });
    expect(res.status).toBe(404);
    expect(res.body["code"]).toBe(5);
  });

  it("refuses a duplicate sibling name with ALREADY_EXISTS", async () => {
    const root = await createGroup({ name: "dups" });
    await createGroup({ name: "same" }, root["uid"] as string);
    const res = await call("POST", `/iam/v2beta1/groups/${root["uid"]}`, { name: "same" });
    expect(res.status).toBe(409);
    expect(res.body["code"]).toBe(6);
  });

  describe("listing", () => {
    let root: JsonObject;
    const names = ["delta", "alpha", "echo", "charlie", "bravo", "golf", "foxtrot"];
    const created: JsonObject[] = [];

    beforeAll(async () => {
      root = await createGroup({ name: "list-root" });
      for (const name of names) {
        created.push(await createGroup({ name }, root["uid"] as string));
        // distinct create_time values, so ordering by time is meaningful
        server.clock.advance(1000);
      }
      // a grandchild, inside descendants_of but not children_of
      await createGroup({ name: "alphabet" }, created[1]!["uid"] as string);
    });

    it("returns the list envelope", async () => {
      const res = await call("GET", `/iam/v2beta1/groups?uidp.children_of=${root["uid"]}`);
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(["groups", "nextPageToken", "skipped", "totalCount"]);
      expect(res.body["totalCount"]).toBe("7");
      expect(res.body["skipped"]).toBe(0);
      expect(res.body["nextPageToken"]).toBe("");
      expect((res.body["groups"] as JsonObject[]).map((g) => g["uid"])).toEqual(created.map((g) => g["uid"] as string).sort());
    });

    it.each([
      ["name", [...names].sort()],
      ["name desc", [...names].sort().reverse()],
      ["name%20asc", [...names].sort()],
      ["created_at desc", [...names].reverse()],
      ["create_time", names],
      ["update_time desc", [...names].reverse()],
      ["updated_at", names],
    ])("pages in order %s across cursors with a stable total", async (orderBy, expected) => {
      const { names: got, pages } = await listAll(`uidp.children_of=${root["uid"]}&order_by=${orderBy}`, 3);
      expect(got).toEqual(expected);
      expect(pages).toHaveLength(3);
      for (const p of pages) expect(p.body["totalCount"]).toBe("7");
      expect(pages[2]!.body["nextPageToken"]).toBe("");
    });

    it("orders by uid by default", async () => {
      const { names: got } = await listAll(`uidp.children_of=${root["uid"]}`, 2);
      const byUid = [...created].sort((a, b) => ((a["uid"] as string) < (b["uid"] as string) ? -1 : 1));
      expect(got).toEqual(byUid.map((g) => g["name"]));
    });

    it("skips N results and reports skipped", async () => {
      const res = await call("GET", `/iam/v2beta1/groups?uidp.children_of=${root["uid"]}&order_by=name&page_size=3&skip=5`);
      expect(res.status).toBe(200);
      expect((res.body["groups"] as JsonObject[]).map((g) => g["name"])).toEqual(["foxtrot", "golf"]);
      expect(res.body["skipped"]).toBe(5);
      expect(res.body["totalCount"]).toBe("7");
      expect(res.body["nextPageToken"]).toBe("");
    });

    it("applies skip after the cursor position", async () => {
      const first = await call("GET", `/iam/v2beta1/groups?uidp.children_of=${root["uid"]}&order_by=name&page_size=2`);
      const token = first.body["nextPageToken"] as string;
      const res = await call(
        "GET",
        `/iam/v2beta1/groups?uidp.children_of=${root["uid"]}&order_by=name&page_size=2&skip=2&page_token=${encodeURIComponent(token)}`,
      );
      expect((res.body["groups"] as JsonObject[]).map((g) => g["name"])).toEqual(["echo", "foxtrot"]);
      expect(res.body["skipped"]).toBe(2);
    });

    it("filters by exact name", async () => {
      const res = await call("GET", `/iam/v2beta1/groups?uidp.descendants_of=${root["uid"]}&name=alpha`);
      expect((res.body["groups"] as JsonObject[]).map((g) => g["name"])).toEqual(["alpha"]);
      expect(res.body["totalCount"]).toBe("1");
    });

    it("scopes by descendants_of, children_of, ancestors_of, in_root and ids", async () => {
      const q = async (query: string) =>
        ((await call("GET", `/iam/v2beta1/groups?${query}&order_by=name&page_size=200`)).body["groups"] as JsonObject[]).map(
          (g) => g["name"],
        );
      expect(await q(`uidp.descendants_of=${root["uid"]}`)).toEqual([...names, "alphabet"].sort());
      expect(await q(`uidp.descendantsOf=${root["uid"]}`)).toEqual([...names, "alphabet"].sort());
      expect(await q(`uidp.children_of=${root["uid"]}`)).toEqual([...names].sort());
      const grandchild = (await call("GET", `/iam/v2beta1/groups?uidp.descendants_of=${root["uid"]}&name=alphabet`)).body[
        "groups"
      ] as JsonObject[];
      expect(await q(`uidp.ancestors_of=${grandchild[0]!["uid"]}`)).toEqual(["alpha", "list-root"]);
      expect(await q(`uidp.in_root=${root["uid"]}`)).toEqual([...names, "alphabet", "list-root"].sort());
      expect(await q(`uidp.ids=${created[0]!["uid"]}&uidp.ids=${created[2]!["uid"]}`)).toEqual(["delta", "echo"]);
    });

    it("restarts from the beginning with an expired page token, without error", async () => {
      const first = await call("GET", `/iam/v2beta1/groups?uidp.children_of=${root["uid"]}&order_by=name&page_size=2`);
      const token = first.body["nextPageToken"] as string;
      expect(token).not.toBe("");
      server.clock.advance(3 * 24 * 3600 * 1000 + 60_000);
      call = restClient(server.url, await server.renewToken());
      const again = await call(
        "GET",
        `/iam/v2beta1/groups?uidp.children_of=${root["uid"]}&order_by=name&page_size=2&page_token=${encodeURIComponent(token)}`,
      );
      expect(again.status).toBe(200);
      expect(again.body["groups"]).toEqual(first.body["groups"]);
      expect(again.body["totalCount"]).toBe("7");
    });

    it("refuses a tampered page token and one reused with another order", async () => {
      const first = await call("GET", `/iam/v2beta1/groups?uidp.children_of=${root["uid"]}&order_by=name&page_size=2`);
      const token = first.body["nextPageToken"] as string;
      const [body, sig] = token.split(".");
      const forged = Buffer.from(
        Buffer.from(body!, "base64url")
          .toString()
          .replace(/"n":"7"/, '"n":"99"'),
      ).toString("base64url");
      for (const bad of [`${forged}.${sig}`, "garbage", `${body}.AAAA`]) {
        const res = await call(
          "GET",
          `/iam/v2beta1/groups?uidp.children_of=${root["uid"]}&order_by=name&page_size=2&page_token=${encodeURIComponent(bad)}`,
        );
        expect(res.status).toBe(400);
        expect(res.body["code"]).toBe(3);
        expect(detail(res, "BadRequest")!["fieldViolations"]).toEqual([expect.objectContaining({ field: "page_token" })]);
      }
      const other = await call(
        "GET",
        `/iam/v2beta1/groups?uidp.children_of=${root["uid"]}&order_by=name%20desc&page_token=${encodeURIComponent(token)}`,
      );
      expect(other.status).toBe(400);
      expect(detail(other, "BadRequest")!["fieldViolations"]).toEqual([expect.objectContaining({ field: "page_token" })]);
    });

    it.each([
      ["page_size=-1", "page_size"],
      ["skip=-2", "skip"],
      ["order_by=colour", "order_by"],
      ["order_by=name%20sideways", "order_by"],
    ])("rejects %s as INVALID_ARGUMENT on %s", async (query, field) => {
      const res = await call("GET", `/iam/v2beta1/groups?${query}`);
      expect(res.status).toBe(400);
      expect(res.body["code"]).toBe(3);
      expect(detail(res, "BadRequest")!["fieldViolations"]).toEqual([expect.objectContaining({ field })]);
    });
  });

  it("lowers page_size above 200 to 200 and defaults to 50", async () => {
    const root = await createGroup({ name: "big" });
    const uids: string[] = [];
    for (let batch = 0; batch < 21; batch++) {
      const made = await Promise.all(
        Array.from({ length: 10 }, (_, i) => createGroup({ name: `g${batch * 10 + i}` }, root["uid"] as string)),
      );
      uids.push(...made.map((g) => g["uid"] as string));
    }
    const big = await call("GET", `/iam/v2beta1/groups?uidp.children_of=${root["uid"]}&page_size=500`);
    expect((big.body["groups"] as JsonObject[]).length).toBe(200);
    expect(big.body["totalCount"]).toBe("210");
    expect(big.body["nextPageToken"]).not.toBe("");
    const dflt = await call("GET", `/iam/v2beta1/groups?uidp.children_of=${root["uid"]}`);
    expect((dflt.body["groups"] as JsonObject[]).length).toBe(50);
  });

  describe("update", () => {
    it("without updateMask changes exactly the fields present in the body", async () => {
      const g = await createGroup({ name: "upd-a", description: "keep me" });
      server.clock.advance(1000);
      const res = await call("PATCH", `/iam/v2beta1/groups/${g["uid"]}`, { resourceLimits: { repositories: 5 } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ name: "upd-a", description: "keep me", resourceLimits: { repositories: 5 } });
      expect(res.body["updateTime"]).not.toBe(g["updateTime"]);
      expect(res.body["createTime"]).toBe(g["createTime"]);
    });

    it("accepts a GET response echoed back with changes, ignoring its output-only fields", async () => {
      const g = await createGroup({ name: "upd-echo", description: "before" });
      const res = await call("PATCH", `/iam/v2beta1/groups/${g["uid"]}`, { ...g, description: "after", verified: true });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({
        uid: g["uid"],
        name: "upd-echo",
        description: "after",
        verified: false,
        createTime: g["createTime"],
      });
    });

    it("treats a field present with an empty value as a change", async () => {
      const g = await createGroup({ name: "upd-b", description: "to clear" });
      const res = await call("PATCH", `/iam/v2beta1/groups/${g["uid"]}`, { description: "" });
      expect(res.body).toMatchObject({ name: "upd-b", description: "" });
    });

    it("with updateMask changes exactly the named fields and ignores the rest", async () => {
      const g = await createGroup({ name: "upd-c", description: "old" });
      const res = await call("PATCH", `/iam/v2beta1/groups/${g["uid"]}?updateMask=description`, { name: "renamed", description: "new" });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ name: "upd-c", description: "new" });
      const cleared = await call("PATCH", `/iam/v2beta1/groups/${g["uid"]}?update_mask=description,resource_limits`, {});
      expect(cleared.body).toMatchObject({ name: "upd-c", description: "", resourceLimits: {} });
    });

    it("with updateMask=* replaces every writable field", async () => {
      const g = await createGroup({ name: "upd-d", description: "gone" });
      const res = await call("PATCH", `/iam/v2beta1/groups/${g["uid"]}?updateMask=*`, { name: "upd-d2" });
      expect(res.body).toMatchObject({ name: "upd-d2", description: "", verified: false });
    });

    it("refuses a negative resource limit", async () => {
      const g = await createGroup({ name: "upd-limits" });
      const res = await call("PATCH", `/iam/v2beta1/groups/${g["uid"]}`, { resourceLimits: { repositories: -1 } });
      expect(res.status).toBe(400);
      expect(detail(res, "BadRequest")!["fieldViolations"]).toEqual([
        { field: "resource_limits[repositories]", description: "must not be negative" },
      ]);
    });

    it("validates the result and the mask", async () => {
      const g = await createGroup({ name: "upd-e" });
      const bad = await call("PATCH", `/iam/v2beta1/groups/${g["uid"]}`, { name: "NOPE" });
      expect(bad.status).toBe(400);
      expect(detail(bad, "BadRequest")!["fieldViolations"]).toEqual([expect.objectContaining({ field: "name" })]);
      for (const mask of ["colour", "verified", "create_time", "uid"]) {
        const res = await call("PATCH", `/iam/v2beta1/groups/${g["uid"]}?updateMask=${mask}`, { name: "x" });
        expect(res.status, mask).toBe(400);
        expect(detail(res, "BadRequest")!["fieldViolations"]).toEqual([expect.objectContaining({ field: "update_mask" })]);
      }
      const missing = await call("PATCH", `/iam/v2beta1/groups/${"2".repeat(40)}`, { name: "x" });
      expect(missing.status).toBe(404);
    });
  });

  describe("delete", () => {
    it("refuses a group that still holds a child group with RESOURCE_NOT_EMPTY", async () => {
      const root = await createGroup({ name: "del-root" });
      const child = await createGroup({ name: "kid" }, root["uid"] as string);
      const res = await call("DELETE", `/iam/v2beta1/groups/${root["uid"]}`);
      expect(res.status).toBe(400);
      expect(res.body["code"]).toBe(9);
      expect(res.body["message"]).toMatch(/^Precondition failed: /);
      expect(detail(res, "PreconditionFailure")!["violations"]).toEqual([expect.objectContaining({ type: "RESOURCE_NOT_EMPTY" })]);
      expect(detail(res, "ErrorInfo")).toMatchObject({ reason: "FAILED_PRECONDITION", domain: "iam.localhost" });

      const delChild = await call("DELETE", `/iam/v2beta1/groups/${child["uid"]}`);
      expect(delChild.status).toBe(200);
      expect(delChild.body).toEqual({});
      expect((await call("DELETE", `/iam/v2beta1/groups/${root["uid"]}`)).status).toBe(200);
      expect((await call("GET", `/iam/v2beta1/groups/${root["uid"]}`)).status).toBe(404);
      expect((await call("DELETE", `/iam/v2beta1/groups/${root["uid"]}`)).status).toBe(404);
    });

    it("never leaves an orphan when a create races the delete", async () => {
      for (let round = 0; round < 5; round++) {
        const root = await createGroup({ name: `race-${round}` });
        const [del, made] = await Promise.all([
          call("DELETE", `/iam/v2beta1/groups/${root["uid"]}`),
          call("POST", `/iam/v2beta1/groups/${root["uid"]}`, { name: "late" }),
        ]);
        const rootGone = (await call("GET", `/iam/v2beta1/groups/${root["uid"]}`)).status === 404;
        if (made.status === 200) {
          // the child exists, so the delete must have failed and the root must still be there
          expect(del.status).not.toBe(200);
          expect(del.body["code"]).toBe(9);
          expect(rootGone).toBe(false);
        } else {
          expect(made.status).toBe(404);
          expect(made.body["code"]).toBe(5);
          expect(del.status).toBe(200);
          expect(rootGone).toBe(true);
        }
      }
    });
  });

  describe("bad requests", () => {
    it("answers malformed JSON, unknown fields and wrong types with INVALID_ARGUMENT", async () => {
      for (const body of ['{"name": ', '{"name": "ok", "colour": 1}', '{"name": 5}', "[]"]) {
        const res = await call("POST", "/iam/v2beta1/groups", body);
        expect(res.status, body).toBe(400);
        expect(res.body["code"]).toBe(3);
      }
    });

    it("refuses an oversized body", async () => {
      const res = await call("POST", "/iam/v2beta1/groups", { name: "big", description: "x".repeat(2 * 1024 * 1024) });
      expect(res.status).toBe(400);
      expect(res.body["code"]).toBe(3);
    });

    it("answers an unknown path with 404 and a known path with the wrong method with 405", async () => {
      const unknown = await call("GET", "/iam/v2beta1/nothing-here");
      expect(unknown.status).toBe(404);
      expect(unknown.body["code"]).toBe(5);
      const wrong = await call("PUT", "/iam/v2beta1/groups");
      expect(wrong.status).toBe(405);
      expect(wrong.body["code"]).toBe(12);
    });
  });
});
