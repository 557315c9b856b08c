import type { DescService } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it, vi } from "vitest";
import { API_SERVICE_DESCRIPTORS } from "../../gen/api-index.js";
import { ThingService } from "../../gen/resttest/v1/kitchen_sink_pb.js";
import type { ApiService } from "./api-service.js";
import { API_SERVICES } from "./index.js";
import { assertEveryServiceImplemented } from "./service-coverage.js";

// Every service the protos define is implemented, and nothing else (docs/design.md, "Tokens and
// access"); the check runs when src/services/index.ts loads, so at start.

const stub = (service: DescService): ApiService => ({
  service,
  build: () => ({}),
  implement: () => ({ service, impl: {}, register: () => undefined }),
});

describe("assertEveryServiceImplemented", () => {
  it("accepts the server's services against the generated index", () => {
    expect(() => assertEveryServiceImplemented(API_SERVICE_DESCRIPTORS, API_SERVICES)).not.toThrow();
    expect(API_SERVICES.map((s) => s.service.typeName).sort()).toEqual(API_SERVICE_DESCRIPTORS.map((s) => s.typeName).sort());
  });

  it("names a proto service without an implementation", () => {
    const [first, ...rest] = API_SERVICES;
    expect(() => assertEveryServiceImplemented(API_SERVICE_DESCRIPTORS, rest)).toThrow(`no implementation for ${first!.service.typeName}`);
  });

  it("names an implementation of a service not in proto/platform, and one implemented twice", () => {
    expect(() => assertEveryServiceImplemented(API_SERVICE_DESCRIPTORS, [...API_SERVICES, stub(ThingService)])).toThrow(
      `not in proto/platform: ${ThingService.typeName}`,
    );
    expect(() => assertEveryServiceImplemented(API_SERVICE_DESCRIPTORS, [...API_SERVICES, API_SERVICES[0]!])).toThrow(
      `implemented twice: ${API_SERVICES[0]!.service.typeName}`,
    );
  });
});

describe("src/services/index.ts", () => {
  // A service as if proto/platform/things/v2beta1/things.proto declared it, with no module to implement it.
  const unimplemented = {
    ...ThingService,
    typeName: "platform.things.v2beta1.ThingsService",
    name: "ThingsService",
    file: { name: "platform/things/v2beta1/things" },
  };

  afterEach(() => {
    vi.doUnmock("../../gen/api-index.js");
    vi.resetModules();
  });

  it("refuses to load when the protos have a service it does not implement", async () => {
    vi.resetModules();
    vi.doMock("../../gen/api-index.js", async (importOriginal) => {
      const original = await importOriginal<typeof import("../../gen/api-index.js")>();
      return { ...original, API_SERVICE_DESCRIPTORS: [...original.API_SERVICE_DESCRIPTORS, unimplemented] };
    });
    // Not `rejects`: on a regression vitest would print the whole module it loaded.
    const error = await import("./index.js").then(
      () => "loaded",
      (e: unknown) => String(e),
    );
    expect(error).toContain("API_SERVICES does not match the protos");
    expect(error).toContain("platform.things.v2beta1.ThingsService");
  });
});
