import type { JsonObject as ProtoJsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import grpc from "@grpc/grpc-js";
import { beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  AdvisoriesService,
  ImportAdvisoriesResponse_Outcome as Outcome,
} from "../../gen/platform/vulnerabilities/v2beta1/advisories_pb.js";
import { connectClient, grpcStatusDetails, type JsonObject, type JsonValue, type Protocol, type RestClient } from "../support/clients.js";
import { grpcSuite } from "../support/grpc-suite.js";
import { connectFailure } from "../support/connect-failure.js";
import { ok as okBody, restDetail } from "../support/rest-iam.js";
import type { TestServer } from "../support/server.js";
import { sharedServerAsAdmin } from "../support/shared-server.js";

let server: TestServer;
let call: RestClient;
beforeAll(async () => ({ server, call } = await sharedServerAsAdmin()));

const ok = (method: string, path: string, body?: unknown) => okBody(call(method, path, body));

const importDocs = (...documents: JsonValue[]) => call("POST", "/vulnerabilities/v2beta1/advisories:import", { documents });
async function imported(...documents: JsonObject[]): Promise<string[]> {
  const res = await importDocs(...documents);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return (res.body["results"] as JsonObject[]).map((r) => r["outcome"] as string);
}
const get = (uid: string) => ok("GET", `/vulnerabilities/v2beta1/advisories/${encodeURIComponent(uid)}`);
async function list(query: string): Promise<string[]> {
  const res = await ok("GET", `/vulnerabilities/v2beta1/advisories?${query}`);
  return (res["advisories"] as JsonObject[]).map((a) => a["advisoryId"] as string);
}

/** A GitHub-advisory-shaped OSV document. */
function ghsa(id: string, modified: string, extra: JsonObject = {}): JsonObject {
  return {
    schema_version: "1.6.0",
    id,
    modified,
    published: "2021-12-10T00:40:56Z",
    aliases: ["CVE-2021-44228"],
    summary: "Remote code injection in Log4j",
    details: "Apache Log4j2 JNDI features do not protect against attacker controlled LDAP endpoints.",
    severity: [{ type: "CVSS_V3", score: "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:C/C:H/I:H/A:H" }],
    affected: [
      {
        package: { ecosystem: "Maven", name: "org.apache.logging.log4j:log4j-core" },
        ranges: [
          { type: "ECOSYSTEM", events: [{ introduced: "2.13.0" }, { fixed: "2.15.0" }] },
          { type: "ECOSYSTEM", events: [{ introduced: "2.0-beta9" }, { fixed: "2.12.2" }] },
        ],
      },
      { package: { ecosystem: "Maven", name: "org.ops4j.pax.logging:pax-logging-log4j2" }, versions: ["1.11.9"] },
    ],
    database_specific: { artifact: { name: "cgr.dev/acme/log4j-app", type: "oci" }, cwe_ids: ["CWE-502"] },
    ...extra,
  };
}

/** A CVE-shaped OSV document (a distro record). */
function cve(id: string, modified: string, extra: JsonObject = {}): JsonObject {
  return {
    id,
    modified,
    published: "2023-03-29T17:15:21.150Z",
    aliases: ["GHSA-rxwq-x6h5-x525"],
    details: "Malicious code was discovered in the upstream tarballs of xz.",
    severity: [{ type: "CVSS_V4", score: "CVSS:4.0/AV:N/AC:L/AT:P/PR:N/UI:N/VC:H/VI:H/VA:H/SC:H/SI:H/SA:H" }],
    affected: [
      {
        package: { ecosystem: "Debian:12", name: "xz-utils" },
        ranges: [{ type: "ECOSYSTEM", events: [{ introduced: "0" }, { fixed: "5.6.1+really5.4.5-1" }] }],
      },
    ],
    ...extra,
  };
}

describe("advisories over REST", () => {
  it("imports OSV documents and maps their fields", async () => {
    const res = await importDocs(ghsa("GHSA-jfh8-c2jp-5v3q", "2024-03-01T10:00:00.123456Z"), cve("CVE-2024-3094", "2024-04-01T00:00:00Z"));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      results: [
        { index: 0, advisoryId: "GHSA-jfh8-c2jp-5v3q", uid: "GHSA-jfh8-c2jp-5v3q", outcome: "OUTCOME_CREATED" },
        { index: 1, advisoryId: "CVE-2024-3094", uid: "CVE-2024-3094", outcome: "OUTCOME_CREATED" },
      ],
    });
    const a = await get("GHSA-jfh8-c2jp-5v3q");
    expect(a).toEqual({
      uid: "GHSA-jfh8-c2jp-5v3q",
      advisoryId: "GHSA-jfh8-c2jp-5v3q",
      aliases: ["CVE-2021-44228"],
      artifactName: "cgr.dev/acme/log4j-app",
      artifactType: "oci",
      componentName: "org.apache.logging.log4j:log4j-core",
      componentType: "Maven",
      severities: [{ type: "CVSS_V3", score: "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:C/C:H/I:H/A:H" }],
      events: [
        { type: "detection", createTime: "2021-12-10T00:40:56.000Z", author: "osv-import", fixedVersion: "" },
        { type: "fixed", createTime: "2024-03-01T10:00:00.123456Z", author: "osv-import", fixedVersion: "2.15.0" },
        { type: "fixed", createTime: "2024-03-01T10:00:00.123456Z", author: "osv-import", fixedVersion: "2.12.2" },
      ],
      summary: "Remote code injection in Log4j",
      details: "Apache Log4j2 JNDI features do not protect against attacker controlled LDAP endpoints.",
      published: "2021-12-10T00:40:56.000Z",
      modified: "2024-03-01T10:00:00.123456Z",
      createTime: a["createTime"],
      updateTime: a["createTime"],
      deleteTime: null,
    });
    expect(a["createTime"]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    const c = await get("CVE-2024-3094");
    expect(c).toMatchObject({
      componentName: "xz-utils",
      componentType: "Debian:12",
      artifactName: "",
      summary: "",
      published: "2023-03-29T17:15:21.150Z",
    });
  });

  it("is idempotent: the same document again changes nothing, not even updateTime", async () => {
    const doc = cve("CVE-2020-0001", "2024-05-05T05:05:05Z");
    expect(await imported(doc)).toEqual(["OUTCOME_CREATED"]);
    const before = await get("CVE-2020-0001");
    server.clock.advance(60_000);
    expect(await imported(doc, doc)).toEqual(["OUTCOME_UNCHANGED", "OUTCOME_UNCHANGED"]);
    // even when the rest of the document differs: `modified` decides
    expect(await imported({ ...doc, summary: "edited without bumping modified" })).toEqual(["OUTCOME_UNCHANGED"]);
    expect(await get("CVE-2020-0001")).toEqual(before);
  });

  it("replaces an advisory with a newer document and skips an older one", async () => {
    expect(await imported(ghsa("GHSA-aaaa-bbbb-cccc", "2024-01-01T00:00:00Z"))).toEqual(["OUTCOME_CREATED"]);
    const first = await get("GHSA-aaaa-bbbb-cccc");
    server.clock.advance(60_000);
    const newer = ghsa("GHSA-aaaa-bbbb-cccc", "2024-02-01T00:00:00Z", {
      summary: "revised",
      aliases: ["CVE-2021-44228", "CVE-2021-45046"],
    });
    expect(await imported(newer)).toEqual(["OUTCOME_UPDATED"]);
    const second = await get("GHSA-aaaa-bbbb-cccc");
    expect(second).toMatchObject({
      summary: "revised",
      aliases: ["CVE-2021-44228", "CVE-2021-45046"],
      modified: "2024-02-01T00:00:00.000Z",
    });
    expect(second["createTime"]).toBe(first["createTime"]);
    expect(second["updateTime"]).not.toBe(first["updateTime"]);

    server.clock.advance(60_000);
    expect(await imported(ghsa("GHSA-aaaa-bbbb-cccc", "2023-12-31T23:59:59Z", { summary: "stale" }))).toEqual(["OUTCOME_SKIPPED_OLDER"]);
    expect(await get("GHSA-aaaa-bbbb-cccc")).toEqual(second);
  });

  it("orders documents by `modified` to the nanosecond, within one call too", async () => {
    const at = (ns: string, summary: string) => cve("CVE-2023-0002", `2024-06-01T00:00:00.${ns}Z`, { summary });
    expect(await imported(at("000000001", "one"), at("000000002", "two"), at("000000001", "back"), at("000000002", "again"))).toEqual([
      "OUTCOME_CREATED",
      "OUTCOME_UPDATED",
      "OUTCOME_SKIPPED_OLDER",
      "OUTCOME_UNCHANGED",
    ]);
    expect(await get("CVE-2023-0002")).toMatchObject({ summary: "two", modified: "2024-06-01T00:00:00.000000002Z" });
    // an offset is the same instant as its UTC form
    expect(await imported(cve("CVE-2023-0002", "2024-06-01T02:00:00.000000002+02:00"))).toEqual(["OUTCOME_UNCHANGED"]);
  });

  it("derives a hashed uid for an id that is not one URL-safe segment", async () => {
    const res = await importDocs(cve("RHSA-2024:1234", "2024-01-01T00:00:00Z"), cve("ODD/ID_1", "2024-01-01T00:00:00Z"));
    const [rhsa, odd] = res.body["results"] as JsonObject[];
    expect(rhsa!["uid"]).toMatch(/^osv_[0-9a-f]{32}$/);
    expect(odd!["uid"]).toMatch(/^osv_[0-9a-f]{32}$/);
    expect(rhsa!["uid"]).not.toBe(odd!["uid"]);
    expect(await get(rhsa!["uid"] as string)).toMatchObject({ advisoryId: "RHSA-2024:1234", uid: rhsa!["uid"] });
    // the same id maps to the same uid on the next import
    expect(((await importDocs(cve("RHSA-2024:1234", "2024-01-01T00:00:00Z"))).body["results"] as JsonObject[])[0]).toMatchObject({
      uid: rhsa!["uid"],
      outcome: "OUTCOME_UNCHANGED",
    });
  });

  it("records a withdrawn advisory as deleted: hidden from lists unless showDeleted", async () => {
    await imported(cve("CVE-2019-9999", "2024-01-01T00:00:00Z", { aliases: ["GHSA-with-draw-n000"], withdrawn: "2024-01-02T00:00:00Z" }));
    const a = await get("CVE-2019-9999");
    expect(a["deleteTime"]).toBe("2024-01-02T00:00:00.000Z");
    expect((a["events"] as JsonObject[]).map((e) => e["type"])).toEqual(["detection", "fixed", "withdrawn"]);
    expect(await list("alias=GHSA-with-draw-n000")).toEqual([]);
    expect(await list("alias=GHSA-with-draw-n000&showDeleted=true")).toEqual(["CVE-2019-9999"]);
    // a newer document without `withdrawn` brings it back
    await imported(cve("CVE-2019-9999", "2024-02-01T00:00:00Z", { aliases: ["GHSA-with-draw-n000"] }));
    expect(await list("alias=GHSA-with-draw-n000")).toEqual(["CVE-2019-9999"]);
    expect((await get("CVE-2019-9999"))["deleteTime"]).toBeNull();
  });

  describe("listing", () => {
    beforeAll(async () => {
      const shared = { aliases: ["CVE-2022-1111"] };
      await imported(
        ghsa("GHSA-list-0001-aaaa", "2024-01-01T00:00:00Z", shared),
        ghsa("GHSA-list-0002-bbbb", "2024-01-01T00:00:00Z", {
          ...shared,
          database_specific: { artifact: { name: "cgr.dev/acme/other", type: "oci" } },
        }),
        cve("CVE-2022-1111", "2024-01-01T00:00:00Z", {
          aliases: ["GHSA-list-0001-aaaa"],
          affected: [{ package: { ecosystem: "npm", name: "left-pad" } }],
        }),
        ghsa("GHSA-list-0003-cccc", "2024-01-01T00:00:00Z", shared),
      );
    });

    it("filters by alias (containment), across pages with a stable total", async () => {
      const first = await ok("GET", "/vulnerabilities/v2beta1/advisories?alias=CVE-2022-1111&order_by=name&page_size=2");
      expect(first["totalCount"]).toBe("3");
      const second = await ok(
        "GET",
        `/vulnerabilities/v2beta1/advisories?alias=CVE-2022-1111&order_by=name&page_size=2&page_token=${encodeURIComponent(first["nextPageToken"] as string)}`,
      );
      expect(second).toMatchObject({ totalCount: "3", nextPageToken: "" });
      expect([...(first["advisories"] as JsonObject[]), ...(second["advisories"] as JsonObject[])].map((a) => a["advisoryId"])).toEqual([
        "GHSA-list-0001-aaaa",
        "GHSA-list-0002-bbbb",
        "GHSA-list-0003-cccc",
      ]);
      expect(await list("alias=GHSA-list-0001-aaaa")).toEqual(["CVE-2022-1111"]);
      expect(await list("alias=CVE-0000-0000")).toEqual([]);
    });

    it("filters by component, artifact, advisory id, name and uidp.ids", async () => {
      expect(await list("componentName=left-pad")).toEqual(["CVE-2022-1111"]);
      expect(await list("component_name=left-pad&alias=nothing")).toEqual([]);
      expect(await list("artifactName=cgr.dev/acme/other")).toEqual(["GHSA-list-0002-bbbb"]);
      expect(await list("artifact_name=cgr.dev/acme/log4j-app&alias=CVE-2022-1111&order_by=name%20desc")).toEqual([
        "GHSA-list-0003-cccc",
        "GHSA-list-0001-aaaa",
      ]);
      expect(await list("advisoryId=GHSA-list-0003-cccc")).toEqual(["GHSA-list-0003-cccc"]);
      expect(await list("name=CVE-2022-1111")).toEqual(["CVE-2022-1111"]);
      expect(await list("uidp.ids=GHSA-list-0001-aaaa&uidp.ids=CVE-2022-1111&order_by=name")).toEqual([
        "CVE-2022-1111",
        "GHSA-list-0001-aaaa",
      ]);
    });

    it("refuses group scopes: advisories are global", async () => {
      const res = await call("GET", `/vulnerabilities/v2beta1/advisories?uidp.children_of=${"a".repeat(40)}`);
      expect(res.status).toBe(400);
      expect(restDetail(res, "BadRequest")).toMatchObject({ fieldViolations: [{ field: "uidp" }] });
      expect(restDetail(res, "ErrorInfo")).toMatchObject({ reason: "INVALID_ARGUMENT", domain: "vulnerabilities.localhost" });
    });
  });

  describe("bad documents", () => {
    it.each<[string, JsonValue[], string, string]>([
      ["a missing id", [{ modified: "2024-01-01T00:00:00Z" }], "documents[0].id", "is required"],
      ["a non-string id", [{ id: 7, modified: "2024-01-01T00:00:00Z" }], "documents[0].id", "must be a string"],
      [
        "a missing modified",
        [cve("CVE-2000-0001", "2024-01-01T00:00:00Z"), { id: "CVE-2000-0002" }],
        "documents[1].modified",
        "is required",
      ],
      [
        "a malformed modified",
        [{ id: "CVE-2000-0003", modified: "yesterday" }],
        "documents[0].modified",
        "must be an RFC 3339 timestamp such as 2024-01-02T15:04:05Z",
      ],
      [
        "a malformed published",
        [{ id: "CVE-2000-0004", modified: "2024-01-01T00:00:00Z", published: "2024-13-01" }],
        "documents[0].published",
        "must be an RFC 3339 timestamp such as 2024-01-02T15:04:05Z",
      ],
      [
        "aliases that are not an array",
        [{ id: "CVE-2000-0005", modified: "2024-01-01T00:00:00Z", aliases: "CVE-1" }],
        "documents[0].aliases",
        "must be a JSON array",
      ],
      [
        "an alias that is not a string",
        [{ id: "CVE-2000-0006", modified: "2024-01-01T00:00:00Z", aliases: ["ok", 5] }],
        "documents[0].aliases[1]",
        "must be a string",
      ],
      [
        "a severity without a score",
        [{ id: "CVE-2000-0007", modified: "2024-01-01T00:00:00Z", severity: [{ type: "CVSS_V3" }] }],
        "documents[0].severity[0].score",
        "is required",
      ],
      [
        "a package name that is not a string",
        [{ id: "CVE-2000-0008", modified: "2024-01-01T00:00:00Z", affected: [{ package: { name: 1 } }] }],
        "documents[0].affected[0].package.name",
        "must be a string",
      ],
      [
        "a range event that is not an object",
        [{ id: "CVE-2000-0009", modified: "2024-01-01T00:00:00Z", affected: [{ ranges: [{ events: ["x"] }] }] }],
        "documents[0].affected[0].ranges[0].events[0]",
        "must be a JSON object",
      ],
      [
        "an artifact that is not an object",
        [{ id: "CVE-2000-0010", modified: "2024-01-01T00:00:00Z", database_specific: { artifact: "x" } }],
        "documents[0].database_specific.artifact",
        "must be a JSON object",
      ],
      [
        "an id over 255 characters",
        [{ id: "X".repeat(256), modified: "2024-01-01T00:00:00Z" }],
        "documents[0].id",
        "must be at most 255 characters",
      ],
      [
        "more than 100 aliases",
        [{ id: "CVE-2000-0012", modified: "2024-01-01T00:00:00Z", aliases: Array.from({ length: 101 }, (_, i) => `A-${i}`) }],
        "documents[0].aliases",
        "at most 100 aliases",
      ],
      [
        "a summary over 4096 characters",
        [{ id: "CVE-2000-0013", modified: "2024-01-01T00:00:00Z", summary: "s".repeat(4097) }],
        "documents[0].summary",
        "must be at most 4096 characters",
      ],
      // An indexed name of multi-byte characters could overflow PostgreSQL's index entry: refused by bytes.
      [
        "a package name over 2000 bytes",
        [{ id: "CVE-2000-0015", modified: "2024-01-01T00:00:00Z", affected: [{ package: { name: "€".repeat(700), ecosystem: "npm" } }] }],
        "documents[0].affected[0].package.name",
        "must be at most 2000 bytes in UTF-8",
      ],
      [
        "affected that is not an array",
        [{ id: "CVE-2000-0014", modified: "2024-01-01T00:00:00Z", affected: {} }],
        "documents[0].affected",
        "must be a JSON array",
      ],
      ["no documents", [], "documents", "must hold at least one OSV document"],
      ["a document that is not an object", ["CVE-2000-0011"], "documents[0]", "must be a JSON object"],
    ])("rejects %s with INVALID_ARGUMENT naming the field", async (_label, documents, field, description) => {
      const res = await importDocs(...documents);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body["code"]).toBe(3);
      expect(res.body["message"]).toBe(`Invalid argument: ${field}: ${description}`);
      // A missing field is a REQUIRED violation (docs/design.md, "Errors").
      const reason = description === "is required" ? { reason: "REQUIRED" } : {};
      expect(restDetail(res, "BadRequest")!["fieldViolations"]).toContainEqual({ field, description, ...reason });
      expect(restDetail(res, "ErrorInfo")).toMatchObject({ reason: "INVALID_ARGUMENT", domain: "vulnerabilities.localhost" });
    });

    it("names every bad field and writes nothing from a batch with a bad document", async () => {
      const res = await importDocs(
        cve("CVE-2001-0001", "2024-01-01T00:00:00Z"),
        { summary: "no id" },
        { id: "CVE-2001-0003", modified: "soon" },
      );
      expect(res.status).toBe(400);
      expect(restDetail(res, "BadRequest")!["fieldViolations"]).toEqual([
        { field: "documents[1].id", description: "is required", reason: "REQUIRED" },
        { field: "documents[1].modified", description: "is required", reason: "REQUIRED" },
        { field: "documents[2].modified", description: "must be an RFC 3339 timestamp such as 2024-01-02T15:04:05Z" },
      ]);
      expect((await call("GET", "/vulnerabilities/v2beta1/advisories/CVE-2001-0001")).status).toBe(404);
    });

    it("caps a call at 1000 documents", async () => {
      const docs = Array.from({ length: 1001 }, (_, i): JsonObject => ({ id: `C-${i}`, modified: "2024-01-01T00:00:00Z" }));
      const res = await importDocs(...docs);
      expect(res.status).toBe(400);
      // The request check caps every repeated field at 1,000 entries before the service looks.
      expect(res.body["message"]).toBe("Invalid argument: documents: must have at most 1000 entries");
      expect(await imported(...docs.slice(0, 1000))).toHaveLength(1000);
      expect((await ok("GET", "/vulnerabilities/v2beta1/advisories?uidp.ids=C-0&uidp.ids=C-999"))["totalCount"]).toBe("2");
    });
  });

  it("answers a missing advisory with NOT_FOUND", async () => {
    const res = await call("GET", "/vulnerabilities/v2beta1/advisories/CVE-1999-0000");
    expect(res.status).toBe(404);
    expect(restDetail(res, "ResourceInfo")).toMatchObject({ resourceType: "advisory", resourceName: "CVE-1999-0000" });
    expect(restDetail(res, "ErrorInfo")).toMatchObject({ reason: "NOT_FOUND", domain: "vulnerabilities.localhost" });
  });
});

/**
 * A JSON object as google.protobuf.Struct in proto-loader's object form
 * (the well-known types come from protobufjs with camelCase names).
 */
type ProtoValue =
  | { stringValue: string }
  | { numberValue: number }
  | { boolValue: boolean }
  | { nullValue: 0 }
  | { listValue: { values: ProtoValue[] } }
  | { structValue: ProtoStruct };
type ProtoStruct = { fields: Record<string, ProtoValue> };
function toValue(v: JsonValue): ProtoValue {
  if (v === null) return { nullValue: 0 };
  if (typeof v === "string") return { stringValue: v };
  if (typeof v === "number") return { numberValue: v };
  if (typeof v === "boolean") return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(toValue) } };
  return { structValue: toStruct(v) };
}
function toStruct(o: JsonObject): ProtoStruct {
  return { fields: Object.fromEntries(Object.entries(o).map(([k, v]) => [k, toValue(v)])) };
}

describe("advisories over gRPC (@grpc/grpc-js)", () => {
  const { rpc, failure } = grpcSuite(
    () => server,
    "platform.vulnerabilities.v2beta1.AdvisoriesService",
    "platform/vulnerabilities/v2beta1/advisories.proto",
  );

  it("imports Struct documents idempotently, gets and lists by alias", async () => {
    const doc = toStruct(ghsa("GHSA-grpc-0000-0001", "2024-01-01T00:00:00Z", { aliases: ["CVE-2030-0001"] }));
    const first = await rpc<{ results: { uid: string; outcome: string | number }[] }>("ImportAdvisories", { documents: [doc] });
    expect(first.results).toEqual([expect.objectContaining({ uid: "GHSA-grpc-0000-0001", outcome: Outcome.CREATED })]);
    const again = await rpc<{ results: { outcome: number }[] }>("ImportAdvisories", { documents: [doc] });
    expect(again.results[0]!.outcome).toBe(Outcome.UNCHANGED);
    const got = await rpc<{ advisory_id: string; component_name: string; severities: { type: string }[] }>("GetAdvisory", {
      uid: "GHSA-grpc-0000-0001",
    });
    expect(got).toMatchObject({
      advisory_id: "GHSA-grpc-0000-0001",
      component_name: "org.apache.logging.log4j:log4j-core",
      severities: [{ type: "CVSS_V3" }],
    });
    const listed = await rpc<{ advisories: { uid: string }[]; total_count: string }>("ListAdvisories", { alias: "CVE-2030-0001" });
    expect(listed.advisories.map((a) => a.uid)).toEqual(["GHSA-grpc-0000-0001"]);
    expect(listed.total_count).toBe("1");
  });

  it("sends INVALID_ARGUMENT naming the document field in grpc-status-details-bin", async () => {
    const err = await failure(rpc("ImportAdvisories", { documents: [toStruct({ modified: "2024-01-01T00:00:00Z" })] }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    const status = grpcStatusDetails(err);
    expect(status.message).toBe("Invalid argument: documents[0].id: is required");
    expect(status.details[1]!.value).toMatchObject({ reason: "INVALID_ARGUMENT", domain: "vulnerabilities.localhost" });
  });
});

describe.each<Protocol>(["connect", "grpc-web", "grpc"])("advisories over %s (Connect client)", (protocol) => {
  it("imports, replaces with a newer document, and filters", async () => {
    const client = connectClient(AdvisoriesService, server.url, server.token, protocol);
    const id = { connect: "CVE-2031-1001", "grpc-web": "CVE-2031-1002", grpc: "CVE-2031-1003" }[protocol];
    const doc = (modified: string): ProtoJsonObject => cve(id, modified, { aliases: [`GHSA-${protocol}`] });
    const created = await client.importAdvisories({ documents: [doc("2024-01-01T00:00:00Z")] });
    expect(created.results.map((r) => r.outcome)).toEqual([Outcome.CREATED]);
    const outcomes = await client.importAdvisories({
      documents: [doc("2024-01-01T00:00:00Z"), doc("2024-03-01T00:00:00Z"), doc("2024-02-01T00:00:00Z")],
    });
    expect(outcomes.results.map((r) => r.outcome)).toEqual([Outcome.UNCHANGED, Outcome.UPDATED, Outcome.SKIPPED_OLDER]);
    const got = await client.getAdvisory({ uid: id });
    expect(got.modified?.seconds).toBe(BigInt(Date.parse("2024-03-01T00:00:00Z") / 1000));
    const listed = await client.listAdvisories({ alias: `GHSA-${protocol}`, componentName: "xz-utils" });
    expect(listed.advisories.map((a) => a.uid)).toEqual([id]);

    const err = await connectFailure(client.importAdvisories({ documents: [{ id: "CVE-2031-9999", modified: 5 }] }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations).toEqual([
      expect.objectContaining({ field: "documents[0].modified", description: "must be a string" }),
    ]);
    expect(err.findDetails(ErrorInfoSchema)[0]).toMatchObject({ domain: "vulnerabilities.localhost" });
  });
});
