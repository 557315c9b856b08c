import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { create, createFileRegistry, fromBinary, getExtension } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema, type FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "../../../gen/google/api/annotations_pb.js";
import { GroupsService } from "../../../gen/platform/iam/v2beta1/groups_pb.js";
import { registerHealth, registerReflection } from "./index.js";
import {
  reflect,
  type JsReflectionRequest,
  type JsReflectionResponse,
  type ReflectionVersion,
} from "../../../test/support/grpc/grpc-js-clients.js";
import { startH2cServer, type RunningServer } from "../../../test/support/grpc/h2c-server.js";

const GROUPS = "platform.iam.v2beta1.GroupsService";
const GROUPS_FILE = "platform/iam/v2beta1/groups.proto";
const HTTP_RULE_EXTENSION = 72295728; // google.api.http on google.protobuf.MethodOptions
const AUTHORIZATION_EXTENSION = 51001; // platform.common.v1.authorization on google.protobuf.MethodOptions
const EVENT_TYPE_EXTENSION = 51002; // platform.common.v1.event_type on google.protobuf.MethodOptions
const FIELD_BEHAVIOR_EXTENSION = 1052; // google.api.field_behavior on google.protobuf.FieldOptions
/** platform.common.v1.uid_kind (proto/platform/common/v1/uid_kind.proto). */
const UID_KIND_EXTENSION = 51003;

let server: RunningServer;
const shutdown = new AbortController();

beforeAll(async () => {
  server = await startH2cServer((router) => {
    router.service(GroupsService, {});
    registerReflection(router, [GroupsService]);
    // Registered after reflection on purpose: reflection must still list it.
    registerHealth(router, { status: async () => "SERVING" }, [GROUPS], shutdown.signal);
  });
});

afterAll(async () => {
  shutdown.abort();
  await server?.close();
});

function decode(res: JsReflectionResponse | undefined): FileDescriptorProto[] {
  expect(res?.error_response ?? null).toBeNull();
  const files = res?.file_descriptor_response?.file_descriptor_proto ?? [];
  return files.map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes));
}

function names(res: JsReflectionResponse | undefined): string[] {
  return decode(res).map((f) => f.name);
}

/** Orders files so that each comes after the files it imports, as createFileRegistry needs. */
function importsFirst(files: FileDescriptorProto[]): FileDescriptorProto[] {
  const byName = new Map(files.map((f) => [f.name, f]));
  const out: FileDescriptorProto[] = [];
  const visit = (f: FileDescriptorProto): void => {
    if (out.includes(f)) {
      return;
    }
    for (const dep of f.dependency) {
      const file = byName.get(dep);
      if (file === undefined) {
        throw new Error(`${f.name} imports ${dep}, which was not sent`);
      }
      visit(file);
    }
    out.push(f);
  };
  files.forEach(visit);
  return out;
}

async function one(version: ReflectionVersion, req: JsReflectionRequest): Promise<JsReflectionResponse> {
  const [res, ...rest] = await reflect(version, server.address, [req]);
  expect(rest).toHaveLength(0);
  if (res === undefined) {
    throw new Error("no response");
  }
  return res;
}

describe.each<ReflectionVersion>(["v1", "v1alpha"])("grpc.reflection.%s over grpc-js", (version) => {
  it("lists every registered service, itself and the health service included", async () => {
    const res = await one(version, { host: "example", list_services: "*" });
    expect(res.message_response).toBe("list_services_response");
    const services = res.list_services_response?.service.map((s) => s.name);
    expect(services).toEqual(
      expect.arrayContaining([
        GROUPS,
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
        "grpc.health.v1.Health",
      ]),
    );
    expect(res.valid_host).toBe("example");
    expect(res.original_request).toMatchObject({ host: "example", list_services: "*" });
  });

  it("answers file_containing_symbol for a service with the file and its transitive imports", async () => {
    const files = names(await one(version, { file_containing_symbol: GROUPS }));
    expect(files[0]).toBe(GROUPS_FILE);
    expect(files).toEqual(
      expect.arrayContaining([
        "google/api/annotations.proto",
        "google/api/http.proto",
        "google/api/field_behavior.proto",
        "google/protobuf/descriptor.proto",
        "google/protobuf/timestamp.proto",
        "google/protobuf/field_mask.proto",
        "google/protobuf/empty.proto",
        "platform/common/v1/uidp.proto",
      ]),
    );
    expect(new Set(files).size).toBe(files.length);
  });

  it.each([
    ["a message", "platform.iam.v2beta1.Group"],
    ["a method", `${GROUPS}.ListGroups`],
    ["a map entry", "platform.iam.v2beta1.Group.ResourceLimitsEntry"],
    ["a field", "platform.iam.v2beta1.Group.create_time"],
  ])("answers file_containing_symbol for %s", async (_, symbol) => {
    expect(names(await one(version, { file_containing_symbol: symbol }))[0]).toBe(GROUPS_FILE);
  });

  it.each([
    ["a nested enum", "grpc.health.v1.HealthCheckResponse.ServingStatus"],
    ["an enum value (scoped beside its enum)", "grpc.health.v1.HealthCheckResponse.SERVING"],
    ["a well-known type", "google.protobuf.Timestamp"],
  ])("answers file_containing_symbol for %s", async (_, symbol) => {
    const files = names(await one(version, { file_containing_symbol: symbol }));
    expect(files[0]).toBe(symbol.startsWith("google") ? "google/protobuf/timestamp.proto" : "health/v1/health.proto");
  });

  it("answers an unknown symbol or file with error_response NOT_FOUND and keeps the stream going", async () => {
    const [unknown, known, missingFile] = await reflect(version, server.address, [
      { file_containing_symbol: "platform.iam.v2beta1.Nope" },
      { file_containing_symbol: GROUPS },
      { file_by_filename: "nope.proto" },
    ]);
    expect(unknown?.message_response).toBe("error_response");
    expect(unknown?.error_response?.error_code).toBe(5);
    expect(unknown?.error_response?.error_message).toContain("platform.iam.v2beta1.Nope");
    expect(unknown?.original_request).toMatchObject({ file_containing_symbol: "platform.iam.v2beta1.Nope" });
    expect(names(known)[0]).toBe(GROUPS_FILE);
    expect(missingFile?.error_response?.error_code).toBe(5);
  });

  it("answers file_by_filename", async () => {
    expect(names(await one(version, { file_by_filename: "google/protobuf/timestamp.proto" }))).toEqual(["google/protobuf/timestamp.proto"]);
    const files = names(await one(version, { file_by_filename: GROUPS_FILE }));
    expect(files[0]).toBe(GROUPS_FILE);
    expect(files).toContain("google/api/annotations.proto");
  });

  it("sends each file once per stream, but always the one asked for", async () => {
    const [first, second, third] = await reflect(version, server.address, [
      { file_containing_symbol: GROUPS },
      { file_containing_symbol: "platform.iam.v2beta1.Group" },
      { file_by_filename: "google/protobuf/timestamp.proto" },
    ]);
    expect(names(first).length).toBeGreaterThan(5);
    expect(names(second)).toEqual([GROUPS_FILE]);
    expect(names(third)).toEqual(["google/protobuf/timestamp.proto"]);
  });

  it("answers the extension queries", async () => {
    const [byExtension, numbers, fieldNumbers, noExtensions, unknownType, unknownExtension] = await reflect(version, server.address, [
      {
        file_containing_extension: {
          containing_type: "google.protobuf.MethodOptions",
          extension_number: HTTP_RULE_EXTENSION,
        },
      },
      { all_extension_numbers_of_type: "google.protobuf.MethodOptions" },
      { all_extension_numbers_of_type: "google.protobuf.FieldOptions" },
      { all_extension_numbers_of_type: "platform.iam.v2beta1.Group" },
      { all_extension_numbers_of_type: "platform.iam.v2beta1.Nope" },
      { file_containing_extension: { containing_type: "google.protobuf.MethodOptions", extension_number: 1 } },
    ]);
    expect(names(byExtension)[0]).toBe("google/api/annotations.proto");
    expect(numbers?.all_extension_numbers_response).toEqual({
      base_type_name: "google.protobuf.MethodOptions",
      extension_number: [AUTHORIZATION_EXTENSION, EVENT_TYPE_EXTENSION, HTTP_RULE_EXTENSION],
    });
    expect(fieldNumbers?.all_extension_numbers_response?.extension_number).toEqual([FIELD_BEHAVIOR_EXTENSION, UID_KIND_EXTENSION]);
    expect(noExtensions?.all_extension_numbers_response?.extension_number).toEqual([]);
    expect(unknownType?.error_response?.error_code).toBe(5);
    expect(unknownExtension?.error_response?.error_code).toBe(5);
  });

  it("emits descriptors complete enough to rebuild the schema, options included", async () => {
    const files = decode(await one(version, { file_containing_symbol: GROUPS }));
    // createFileRegistry resolves every type reference, so a missing or
    // inconsistent file fails here.
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: importsFirst(files) }));
    const service = registry.getService(GROUPS);
    const list = service?.methods.find((m) => m.name === "ListGroups");
    expect(list?.input.typeName).toBe("platform.iam.v2beta1.ListGroupsRequest");
    expect(list?.proto.options && getExtension(list.proto.options, http).pattern.case).toBe("get");
    const group = registry.getMessage("platform.iam.v2beta1.Group");
    expect(group?.fields.find((f) => f.name === "create_time")?.jsonName).toBe("createTime");
  });
});

interface ProcessResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

const buf = fileURLToPath(new URL("../../../node_modules/.bin/buf", import.meta.url));

function bufCurl(args: string[]): Promise<ProcessResult> {
  return new Promise((resolve) => {
    execFile(buf, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", ...args], { timeout: 20_000 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === "number" ? err.code : null;
      resolve({ code, stdout, stderr });
    });
  });
}

describe("the buf CLI", () => {
  it.each(["grpc-v1", "grpc-v1alpha"])("lists the services over %s", async (protocol) => {
    const res = await bufCurl(["--reflect-protocol", protocol, "--list-services", server.url]);
    expect(res.stderr).toBe("");
    expect(res.code).toBe(0);
    const services = res.stdout.trim().split("\n");
    expect(services).toContain(GROUPS);
    expect(services).toContain("grpc.health.v1.Health");
  });

  it("lists every method, which needs the whole descriptor graph", async () => {
    const res = await bufCurl(["--list-methods", server.url]);
    expect(res.stderr).toBe("");
    expect(res.code).toBe(0);
    const methods = res.stdout.trim().split("\n");
    expect(methods).toContain(`${GROUPS}/ListGroups`);
    expect(methods).toContain("grpc.health.v1.Health/Watch");
    expect(methods).toContain("grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo");
  });

  it("calls a method whose schema it learned by reflection", async () => {
    const res = await bufCurl(["-d", "{}", `${server.url}/grpc.health.v1.Health/Check`]);
    expect(res.stderr).toBe("");
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({ status: "SERVING" });
  });

  it("builds requests for a method annotated with google.api options", async () => {
    // GroupsService is registered without an implementation: reaching
    // "unimplemented" proves buf resolved and encoded the request.
    const res = await bufCurl(["-d", '{"pageSize": 1}', `${server.url}/${GROUPS}/ListGroups`]);
    expect(res.stderr).toContain("unimplemented");
    expect(res.code).not.toBe(0);
  });
});
