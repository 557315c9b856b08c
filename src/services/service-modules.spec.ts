import type { DescService } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { API_SERVICE_DESCRIPTORS } from "../../gen/api-index.js";
import { EventsService } from "../../gen/platform/events/v2beta1/events_pb.js";
import { GroupInvitesService } from "../../gen/platform/iam/v2beta1/group_invites_pb.js";
import { GroupsService } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { API_SERVICES } from "./index.js";
import { implementationModule, loadImplementations } from "./service-modules.js";
import { V1_API_SERVICES } from "./v1/index.js";

// The API services are found by a convention from their proto files, not listed by hand
// (docs/contributing.md, "Adding a resource").

/** A descriptor of a service that is not in the protos, named as if it were in `file`. */
const pretend = (file: string, name: string) =>
  ({ typeName: `platform.x.v2beta1.${name}`, name, file: { name: file } }) as unknown as DescService;

describe("implementationModule", () => {
  it("names the module and export by the proto file and the service", () => {
    expect(implementationModule(GroupInvitesService)).toEqual({ path: "./iam/group-invites.js", exportName: "groupInvitesService" });
    expect(implementationModule(EventsService)).toEqual({ path: "./events/events.js", exportName: "eventsService" });
  });

  it("refuses a proto file outside platform/<domain>/<version>/", () => {
    expect(() => implementationModule(pretend("other/things", "ThingsService"))).toThrow(
      /is not platform\/<domain>\/<version>\/<name>\.proto/,
    );
  });
});

describe("loadImplementations", () => {
  it("lists the protos' services in the generated index's order, then the v1 ones", () => {
    const v1 = new Set(V1_API_SERVICES.map((s) => s.service));
    expect(API_SERVICES.map((s) => s.service)).toEqual([...API_SERVICE_DESCRIPTORS.filter((s) => !v1.has(s)), ...v1]);
  });

  it("fails loudly, naming the file, when a service's module is missing", async () => {
    await expect(loadImplementations([pretend("platform/iam/v2beta1/no_such_things", "NoSuchThingsService")])).rejects.toThrow(
      /platform\.x\.v2beta1\.NoSuchThingsService has no implementation: cannot load src\/services\/iam\/no-such-things\.ts/,
    );
  });

  it("fails loudly when the module does not export the service under its conventional name", async () => {
    await expect(loadImplementations([pretend("platform/iam/v2beta1/groups", "GroupiesService")])).rejects.toThrow(
      "src/services/iam/groups.ts must export groupiesService, the ApiService of platform.x.v2beta1.GroupiesService",
    );
  });

  it("fails loudly when the conventional export implements another service", async () => {
    await expect(loadImplementations([pretend("platform/iam/v2beta1/groups", "GroupsService")])).rejects.toThrow(
      "src/services/iam/groups.ts must export groupsService, the ApiService of platform.x.v2beta1.GroupsService",
    );
    await expect(loadImplementations([GroupsService], async () => ({ groupsService: { service: GroupsService } }))).rejects.toThrow(
      /must export groupsService/,
    );
  });
});
