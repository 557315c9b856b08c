import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { Health } from "../../../gen/health/v1/health_pb.js";
import { GroupsService } from "../../../gen/platform/iam/v2beta1/groups_pb.js";
import { DescriptorIndex } from "./descriptor-index.js";

function index(): DescriptorIndex {
  const idx = new DescriptorIndex();
  idx.addService(GroupsService);
  idx.addService(Health);
  return idx;
}

describe("DescriptorIndex", () => {
  it("lists the added services, sorted", () => {
    expect(index().services()).toEqual(["grpc.health.v1.Health", "platform.iam.v2beta1.GroupsService"]);
  });

  it.each([
    ["platform.iam.v2beta1.GroupsService", "platform/iam/v2beta1/groups.proto"],
    ["platform.iam.v2beta1.GroupsService.UpdateGroup", "platform/iam/v2beta1/groups.proto"],
    [".platform.iam.v2beta1.Group", "platform/iam/v2beta1/groups.proto"],
    ["grpc.health.v1.HealthCheckResponse.ServingStatus", "health/v1/health.proto"],
    ["grpc.health.v1.HealthCheckResponse.NOT_SERVING", "health/v1/health.proto"],
    ["grpc.health.v1.HealthListResponse.StatusesEntry", "health/v1/health.proto"],
    ["google.api.http", "google/api/annotations.proto"],
    ["google.api.HttpRule.pattern", "google/api/http.proto"],
    ["google.protobuf.FieldMask", "google/protobuf/field_mask.proto"],
    ["google.protobuf.MethodOptions", "google/protobuf/descriptor.proto"],
  ])("finds %s in %s", (symbol, file) => {
    expect(index().fileContainingSymbol(symbol)).toBe(file);
  });

  it.each([
    "grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING", // values are scoped beside their enum
    "platform.iam.v2beta1",
    "platform.iam.v2beta1.Nope",
    "",
  ])("does not find %j", (symbol) => {
    expect(index().fileContainingSymbol(symbol)).toBeUndefined();
  });

  it("serializes a file first, then its imports breadth first, each once", () => {
    const files = index().fileWithImports("platform/iam/v2beta1/groups.proto");
    expect(files.map((f) => f.name)).toEqual([
      "platform/iam/v2beta1/groups.proto",
      "google/api/annotations.proto",
      "google/api/field_behavior.proto",
      "google/protobuf/empty.proto",
      "google/protobuf/field_mask.proto",
      "google/protobuf/timestamp.proto",
      "platform/common/v1/authorization.proto",
      "platform/common/v1/events.proto",
      "platform/common/v1/uid_kind.proto",
      "platform/common/v1/uidp.proto",
      "google/api/http.proto",
      "google/protobuf/descriptor.proto",
    ]);
    for (const file of files) {
      expect(fromBinary(FileDescriptorProtoSchema, file.bytes).name).toBe(file.name);
    }
  });

  it("leaves out skipped imports but never the file asked for", () => {
    const skip = new Set(["platform/iam/v2beta1/groups.proto", "google/api/annotations.proto"]);
    const names = index()
      .fileWithImports("platform/iam/v2beta1/groups.proto", skip)
      .map((f) => f.name);
    expect(names[0]).toBe("platform/iam/v2beta1/groups.proto");
    expect(names).not.toContain("google/api/annotations.proto");
    // Imports reached only through a skipped file are still walked.
    expect(names).toContain("google/api/http.proto");
  });

  it("returns nothing for an unknown file", () => {
    expect(index().hasFile("nope.proto")).toBe(false);
    expect(index().fileWithImports("nope.proto")).toEqual([]);
  });

  it("knows extensions by extendee and number", () => {
    const idx = index();
    expect(idx.fileContainingExtension("google.protobuf.MethodOptions", 72295728)).toBe("google/api/annotations.proto");
    expect(idx.fileContainingExtension(".google.protobuf.FieldOptions", 1052)).toBe("google/api/field_behavior.proto");
    expect(idx.fileContainingExtension("google.protobuf.FieldOptions", 1)).toBeUndefined();
    expect(idx.fileContainingExtension("google.protobuf.MethodOptions", 51001)).toBe("platform/common/v1/authorization.proto");
    expect(idx.fileContainingExtension("google.protobuf.MethodOptions", 51002)).toBe("platform/common/v1/events.proto");
    expect(idx.extensionNumbersOf("google.protobuf.MethodOptions")).toEqual([51001, 51002, 72295728]);
    expect(idx.extensionNumbersOf("platform.iam.v2beta1.Group")).toEqual([]);
    expect(idx.extensionNumbersOf("platform.iam.v2beta1.GroupsService")).toBeUndefined();
  });
});
