import { readFileSync } from "node:fs";
import type { DescService } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { API_IMPLEMENTATIONS } from "../../gen/api-implementations.js";
import { API_SERVICE_DESCRIPTORS } from "../../gen/api-index.js";
import { EventsService } from "../../gen/platform/events/v2beta1/events_pb.js";
import { GroupInvitesService } from "../../gen/platform/iam/v2beta1/group_invites_pb.js";
import { implementationOf } from "../../tools/api-implementation-module.mjs";
import { API_SERVICES } from "./index.js";
import { V1_API_SERVICES } from "./v1/index.js";

// The API services are found by a convention from their proto files, not listed by hand
// (docs/contributing.md, "Adding a resource"): tools/protoc-gen-api-index.mjs writes
// gen/api-implementations.ts from it.

/** A descriptor of a service that is not in the protos, named as if it were in `file`. */
const pretend = (file: string, name: string) =>
  ({ typeName: `platform.x.v2beta1.${name}`, name, file: { name: file } }) as unknown as DescService;

describe("the implementation convention", () => {
  it("names the module and export by the proto file and the service", () => {
    expect(implementationOf(GroupInvitesService)).toEqual({
      path: "../src/services/iam/group-invites.js",
      exportName: "groupInvitesService",
    });
    expect(implementationOf(EventsService)).toEqual({ path: "../src/services/events/events.js", exportName: "eventsService" });
  });

  it("refuses a proto file outside platform/<domain>/<version>/", () => {
    expect(() => implementationOf(pretend("other/things", "ThingsService"))).toThrow(/is not platform\/<domain>\/<version>\/<name>\.proto/);
  });
});

describe("gen/api-implementations.ts", () => {
  const v1 = new Set(V1_API_SERVICES.map((s) => s.service));
  const implemented = API_SERVICE_DESCRIPTORS.filter((s) => !v1.has(s));

  it("imports each service outside v1 from the module its proto file names", () => {
    const text = readFileSync(new URL("../../gen/api-implementations.ts", import.meta.url), "utf8");
    for (const service of implemented) {
      const { path, exportName } = implementationOf(service);
      expect(text, service.typeName).toContain(`import { ${exportName} } from "${path}";`);
    }
  });

  it("holds, at each place, the implementation of the service at that place in the generated index", () => {
    expect(API_IMPLEMENTATIONS.map((s) => s.service)).toEqual(implemented);
  });

  it("comes first in API_SERVICES, then the v1 services", () => {
    expect(API_SERVICES.map((s) => s.service)).toEqual([...implemented, ...v1]);
  });
});
