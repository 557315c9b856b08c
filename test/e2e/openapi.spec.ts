import { readFileSync } from "node:fs";
import http from "node:http";
import { Validator } from "@seriousme/openapi-schema-validator";
// ajv comes with the OpenAPI validator; here it checks real answers against the document's schemas.
import { Ajv2020 } from "ajv/dist/2020.js";
import { beforeAll, describe, expect, it } from "vitest";
import { RouteTable } from "../../src/rest/route-table.js";
import { API_SERVICES } from "../../src/services/index.js";
import { restClient, type JsonObject, type RestClient } from "../support/clients.js";
import type { TestServer } from "../support/server.js";
import { sharedServer } from "../support/shared-server.js";

// GET /openapi.json (src/rest/openapi.ts, src/server/api-docs.ts): a valid
// OpenAPI 3.1 document with every REST route of the transcoder, whose
// schemas match what the server really answers.

let server: TestServer;
let call: RestClient;
let doc: JsonObject;
let ajv: Ajv2020;

type Operation = JsonObject & { parameters: JsonObject[]; responses: Record<string, JsonObject>; operationId: string };

function operation(path: string, method: string): Operation {
  const item = (doc["paths"] as Record<string, Record<string, Operation>>)[path];
  const op = item?.[method];
  if (op === undefined) throw new Error(`no ${method.toUpperCase()} ${path} in the document`);
  return op;
}

function schema(name: string): JsonObject {
  const s = ((doc["components"] as JsonObject)["schemas"] as Record<string, JsonObject>)[name];
  if (s === undefined) throw new Error(`no schema ${name}`);
  return s;
}

/** Asserts that `value` is valid against a component schema of the document. */
function expectMatches(value: unknown, name: string): void {
  const validate = ajv.getSchema(`openapi#/components/schemas/${name}`);
  if (validate === undefined) throw new Error(`no schema ${name}`);
  const valid = validate(value);
  expect(valid, `${name}: ${JSON.stringify(validate.errors)}\n${JSON.stringify(value)}`).toBe(true);
}

/** A path template with its parameters unnamed: OpenAPI 3.1 treats two such equal templates as one. */
function shape(path: string): string {
  return path.replace(/\{[^}]*\}/g, "{}");
}

/** A request with the path sent exactly as written (fetch would normalise `..`). */
function rawRequest(method: string, path: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

beforeAll(async () => {
  server = await sharedServer();
  call = restClient(server.url, server.token);
  const res = await fetch(`${server.url}/openapi.json`);
  expect(res.status).toBe(200);
  doc = (await res.json()) as JsonObject;
  // Unknown formats (int64, uint64, …) are annotations here, as in OpenAPI.
  ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  ajv.addSchema({ $id: "openapi", components: doc["components"] } as object);
});

describe("GET /openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    expect(doc["openapi"]).toBe("3.1.0");
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    if (!result.valid) console.error(JSON.stringify(result.errors, null, 2));
    expect(result.valid).toBe(true);
  });

  it("is JSON, cacheable, and answers a conditional GET with 304", async () => {
    const res = await fetch(`${server.url}/openapi.json`);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.headers.get("cache-control")).toMatch(/^public, max-age=\d+$/);
    const etag = res.headers.get("etag");
    expect(etag).toMatch(/^".+"$/);
    await res.arrayBuffer();
    const again = await fetch(`${server.url}/openapi.json`, { headers: { "if-none-match": etag ?? "" } });
    expect(again.status).toBe(304);
    const head = await fetch(`${server.url}/openapi.json`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
  });

  it("has the package version, bearer security and a tag per service", () => {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
    expect((doc["info"] as JsonObject)["version"]).toBe(pkg.version);
    const schemes = (doc["components"] as JsonObject)["securitySchemes"] as JsonObject;
    expect(schemes["bearer"]).toMatchObject({ type: "http", scheme: "bearer" });
    // The CLI's command as it is (`auth login`), not an older spelling.
    expect((schemes["bearer"] as JsonObject)["description"]).toContain("`platformctl auth login`");
    expect(doc["security"]).toEqual([{ bearer: [] }]);
    const tags = (doc["tags"] as JsonObject[]).map((t) => t["name"]);
    expect(tags).toContain("platform.iam.v2beta1.GroupsService");
    expect(operation("/iam/v2beta1/groups", "get")["tags"]).toEqual(["platform.iam.v2beta1.GroupsService"]);
  });

  it("describes every REST route of the transcoder, and nothing else", () => {
    // The routes as the transcoder compiles them; the OpenAPI path is the rule's template without
    // the `=pattern` parts, its parameter names being the path shape's (below).
    const table = new RouteTable(
      API_SERVICES.map((s) => s.service),
      "test",
    );
    expect(table.routes.length).toBeGreaterThan(50);
    const byShape = new Map(Object.keys(doc["paths"] as JsonObject).map((p) => [shape(p), p]));
    const expected = new Set<string>();
    for (const route of table.routes) {
      const source = route.template.source.replace(/\{([^}=]+)(=[^}]*)?\}/g, "{$1}");
      const path = byShape.get(shape(source)) ?? source;
      const method = route.httpMethod.toLowerCase();
      expected.add(`${method} ${path}`);
      const op = operation(path, method);
      // The RPC name, maybe after an older version's prefix, maybe before an additional binding's suffix.
      expect(op.operationId, `${method} ${path}`).toMatch(new RegExp(`^(v\\d\\w*_)?${route.method.name}([A-Z]\\w*)?$`));
      const pathParams = op.parameters.filter((p) => p["in"] === "path");
      expect(pathParams.length, `${method} ${path}`).toBe(route.template.variables.length);
      route.pathBindings.forEach((b, i) => {
        expect(pathParams[i]?.["description"], `${method} ${path}`).toContain(`Sets the request's \`${b.jsonPath}\`.`);
      });
      expect(op["requestBody"] !== undefined, `${method} ${path} body`).toBe(route.body.kind !== "none");
    }
    const documented = Object.entries(doc["paths"] as Record<string, JsonObject>).flatMap(([path, item]) =>
      Object.keys(item).map((m) => `${m} ${path}`),
    );
    expect(new Set(documented)).toEqual(expected);
    const ids = documented.map((d) => {
      const [m = "", p = ""] = d.split(" ");
      return operation(p, m).operationId;
    });
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("has no two path templates that differ only in their parameters' names (OpenAPI 3.1)", () => {
    const paths = Object.keys(doc["paths"] as JsonObject);
    const shapes = new Map<string, string[]>();
    for (const p of paths) shapes.set(shape(p), [...(shapes.get(shape(p)) ?? []), p]);
    const collisions = [...shapes.values()].filter((same) => same.length > 1);
    expect(collisions).toEqual([]);
    // Every template expression is one path parameter of every operation, and nothing else is.
    for (const [path, item] of Object.entries(doc["paths"] as Record<string, Record<string, Operation>>)) {
      const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      expect(new Set(names).size, path).toBe(names.length);
      for (const [method, op] of Object.entries(item)) {
        const params = op.parameters.filter((p) => p["in"] === "path");
        expect(
          params.map((p) => p["name"]),
          `${method} ${path}`,
        ).toEqual(names);
        expect(params.every((p) => p["required"] === true)).toBe(true);
      }
    }
    // The one resource's routes share one template, named after the Get.
    const groups = (doc["paths"] as Record<string, JsonObject>)["/iam/v2beta1/groups/{uid}"];
    expect(Object.keys(groups ?? {}).sort()).toEqual(["delete", "get", "patch", "post"]);
    expect(Object.keys((doc["paths"] as Record<string, JsonObject>)["/iam/v1/groups/{id}"] ?? {}).sort()).toEqual([
      "delete",
      "patch",
      "post",
      "put",
    ]);
  });

  it("names operations after their RPCs, and additional bindings after what differs", () => {
    expect(operation("/iam/v2beta1/groups/{uid}", "post").operationId).toBe("CreateGroup");
    expect(operation("/iam/v2beta1/groups", "post").operationId).toBe("CreateGroupWithoutParent");
    expect(operation("/iam/v2beta1/groups/{uid}", "get").operationId).toBe("GetGroup");
    expect(operation("/iam/v2beta1/groups/{uid}", "patch").operationId).toBe("UpdateGroup");
    expect(operation("/iam/v2beta1/roleBindings/{parent}:batchCreate", "post").operationId).toBe("BatchCreateRoleBindings");
    // v1 declares the same RPC names: its ids carry the version.
    expect(operation("/iam/v1/groups/{id}", "post").operationId).toBe("v1_CreateGroup");
    expect(operation("/iam/v1/groups", "post").operationId).toBe("v1_CreateGroupWithoutParent");
    expect(operation("/iam/v1/groups/{id}", "put").operationId).toBe("v1_UpdateGroup");
    expect(operation("/iam/v1/groups/{id}", "patch").operationId).toBe("v1_UpdateGroupViaPatch");
    // The binding each operation has is in its parameter's description.
    const param = (path: string, method: string): unknown =>
      operation(path, method).parameters.find((p) => p["in"] === "path")?.["description"];
    expect(param("/iam/v2beta1/groups/{uid}", "post")).toMatch(/^Sets the request's `parent`\. May hold `\/`.*%2F/);
    expect(param("/iam/v2beta1/groups/{uid}", "patch")).toMatch(/^Sets the request's `group\.uid`\./);
    expect(param("/iam/v2beta1/rootRoleBindings/{uid}", "get")).toBe("Sets the request's `uid`.");
  });

  it("lists the query parameters the binder accepts on GET /iam/v2beta1/groups", () => {
    const names = operation("/iam/v2beta1/groups", "get")
      .parameters.filter((p) => p["in"] === "query")
      .map((p) => p["name"]);
    for (const name of [
      "uidp.descendants_of",
      "uidp.children_of",
      "uidp.ancestors_of",
      "uidp.in_root",
      "uidp.ids",
      "name",
      "page_size",
      "page_token",
      "order_by",
      "skip",
    ]) {
      expect(names).toContain(name);
    }
    const ids = operation("/iam/v2beta1/groups", "get").parameters.find((p) => p["name"] === "uidp.ids");
    expect(ids?.["schema"]).toEqual({ type: "array", items: { type: "string" } });
    // Path-bound and body-bound fields are not query parameters.
    const patch = operation("/iam/v2beta1/groups/{uid}", "patch");
    expect(patch.parameters.map((p) => `${p["in"]} ${p["name"]}`)).toEqual(["path uid", "query update_mask"]);
  });

  it("describes the events and subscriptions routes (docs/events.md)", () => {
    const list = operation("/events/v2beta1/events", "get");
    expect(list.operationId).toBe("ListEvents");
    const query = list.parameters.filter((p) => p["in"] === "query").map((p) => p["name"]);
    for (const name of [
      "uidp.in_root",
      "uidp.children_of",
      "type",
      "type_prefix",
      "subject",
      "actor",
      "since",
      "until",
      "page_size",
      "page_token",
      "order_by",
      "skip",
    ]) {
      expect(query).toContain(name);
    }
    // WatchEvents streams: it has no REST route.
    expect(JSON.stringify(doc["paths"])).not.toContain("WatchEvents");
    expect(operation("/events/v2beta1/subscriptions", "get").operationId).toBe("ListSubscriptions");
    expect(operation("/events/v2beta1/subscriptions/{uid}", "post").operationId).toBe("CreateSubscription");
    for (const method of ["get", "delete", "patch"]) operation("/events/v2beta1/subscriptions/{uid}", method);
    // The secret is in the Subscription schema (the create answer carries it), but optional: no other answer has it.
    const subscription = schema("platform.events.v2beta1.Subscription");
    expect(Object.keys(subscription["properties"] as JsonObject)).toContain("secret");
    expect(subscription["required"]).not.toContain("secret");
  });

  it("has the Group fields a REST GET really returns, every one required", async () => {
    const created = await call("POST", "/iam/v2beta1/groups", { name: "openapi-doc", description: "schema check" });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const got = await call("GET", `/iam/v2beta1/groups/${String(created.body["uid"])}`);
    expect(got.status).toBe(200);
    const group = schema("platform.iam.v2beta1.Group");
    expect(Object.keys(group["properties"] as JsonObject).sort()).toEqual(Object.keys(got.body).sort());
    expect([...(group["required"] as string[])].sort()).toEqual(Object.keys(got.body).sort());
    expectMatches(got.body, "platform.iam.v2beta1.Group");
    expectMatches(created.body, "platform.iam.v2beta1.Group");

    // 64-bit counts are strings, as rendered.
    const list = await call("GET", "/iam/v2beta1/groups?page_size=5");
    expect(typeof list.body["totalCount"]).toBe("string");
    expectMatches(list.body, "platform.iam.v2beta1.ListGroupsResponse");
    expect(Object.keys(list.body).sort()).toEqual(
      Object.keys(schema("platform.iam.v2beta1.ListGroupsResponse")["properties"] as JsonObject).sort(),
    );

    // Hydrated references and unset messages (`null`) too: a role binding and a group invite.
    const org = String(created.body["uid"]);
    const identity = await call("POST", `/iam/v2beta1/identities/${org}`, {
      name: "openapi-ci",
      claimMatch: { issuer: "https://token.actions.githubusercontent.com", subject: "repo:acme/app:ref:refs/heads/main" },
    });
    expect(identity.status, JSON.stringify(identity.body)).toBe(200);
    expectMatches(identity.body, "platform.iam.v2beta1.Identity");
    const binding = await call("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: identity.body["uid"], roleUid: "viewer" });
    expect(binding.status, JSON.stringify(binding.body)).toBe(200);
    expectMatches(binding.body, "platform.iam.v2beta1.RoleBinding");
    const invite = await call("POST", `/iam/v2beta1/groupInvites/${org}`, { roleUid: "viewer", email: "ada@example.com", ttl: "3600s" });
    expect(invite.status, JSON.stringify(invite.body)).toBe(200);
    expect(invite.body["redeemTime"]).toBeNull();
    expectMatches(invite.body, "platform.iam.v2beta1.GroupInvite");
  });

  it("describes errors as google.rpc.Status, and real errors match it", async () => {
    const responses = (doc["components"] as JsonObject)["responses"] as Record<string, JsonObject>;
    for (const [path, item] of Object.entries(doc["paths"] as Record<string, Record<string, Operation>>)) {
      for (const [method, op] of Object.entries(item)) {
        for (const status of ["400", "401", "403", "404", "default"]) {
          const ref = String(op.responses[status]?.["$ref"] ?? "");
          expect(ref, `${method} ${path} ${status}`).toMatch(/^#\/components\/responses\/\w+$/);
          const response = responses[ref.slice("#/components/responses/".length)];
          expect(response?.["content"], `${method} ${path} ${status}`).toEqual({
            "application/json": { schema: { $ref: "#/components/schemas/google.rpc.Status" } },
          });
        }
      }
    }
    // A limit (RESOURCE_EXHAUSTED, 429) is reached only by writes.
    for (const item of Object.values(doc["paths"] as Record<string, Record<string, Operation>>)) {
      for (const [method, op] of Object.entries(item)) {
        expect(op.responses["429"]?.["$ref"]).toBe(method === "get" ? undefined : "#/components/responses/ResourceExhausted");
      }
    }
    expect(Object.keys(schema("google.rpc.Status")["properties"] as JsonObject).sort()).toEqual(["code", "details", "message"]);

    const missing = await call("GET", `/iam/v2beta1/groups/${"0".repeat(40)}`);
    expect(missing.status).toBe(404);
    expectMatches(missing.body, "google.rpc.Status");
    const anonymous = await restClient(server.url, undefined)("GET", "/iam/v2beta1/groups");
    expect(anonymous.status).toBe(401);
    expectMatches(anonymous.body, "google.rpc.Status");
  });
});

describe("odd requests for the document and the docs", () => {
  it("answers other methods on /openapi.json as on the other plain routes, never 500", async () => {
    for (const method of ["POST", "PUT", "DELETE", "PATCH"]) {
      const doc = await fetch(`${server.url}/openapi.json`, { method });
      const health = await fetch(`${server.url}/healthz`, { method });
      expect(doc.status, method).toBe(health.status);
      expect(doc.status, method).toBeGreaterThanOrEqual(400);
      expect(doc.status, method).toBeLessThan(500);
      const body = (await doc.json()) as JsonObject;
      expect(typeof body["code"]).toBe("number");
      await health.arrayBuffer();
    }
  });

  it("serves only its own files under /docs: no traversal, no NUL, no other package file", async () => {
    for (const path of [
      "/docs/../../package.json",
      "/docs/../package.json",
      "/docs/%2e%2e/%2e%2e/package.json",
      "/docs/..%2f..%2fpackage.json",
      "/docs/%00",
      "/docs/swagger-ui-bundle.js%00",
      "/docs/index.html",
      "/docs/swagger-ui.css.map",
      "/docs/package.json",
      "/docs/init.js/",
    ]) {
      const res = await rawRequest("GET", path);
      expect(res.status, path).toBe(404);
      expect(res.body, path).not.toContain('"version"');
    }
  });

  it("serves the page with a strict Content-Security-Policy and the assets with their types", async () => {
    const page = await fetch(`${server.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe");
    const html = await page.text();
    expect(html).not.toMatch(/<script>(?!<\/script>)/); // no inline script
    expect(html).toContain('src="/docs/init.js"');

    const types: Record<string, string> = {
      "/docs/swagger-ui-bundle.js": "text/javascript; charset=utf-8",
      "/docs/swagger-ui.css": "text/css; charset=utf-8",
      "/docs/init.js": "text/javascript; charset=utf-8",
      "/docs/favicon-32x32.png": "image/png",
    };
    for (const [path, type] of Object.entries(types)) {
      const res = await fetch(`${server.url}${path}`);
      expect(res.status, path).toBe(200);
      expect(res.headers.get("content-type"), path).toBe(type);
      expect(res.headers.get("x-content-type-options"), path).toBe("nosniff");
      expect((await res.arrayBuffer()).byteLength, path).toBeGreaterThan(0);
    }
    const init = await (await fetch(`${server.url}/docs/init.js`)).text();
    expect(init).toContain('url: "/openapi.json"');
    expect(init).toContain("validatorUrl: null");
    const head = await rawRequest("HEAD", "/docs/swagger-ui-bundle.js");
    expect(head.status).toBe(200);
    expect(Number(head.headers["content-length"])).toBeGreaterThan(100_000);
    expect(head.body).toBe("");
  });
});
