import type { DescService } from "@bufbuild/protobuf";
import type { Command } from "commander";
import { API_SERVICE_DESCRIPTORS } from "../../../gen/api-index.js";
import { standardMethodOf } from "../../descriptors/index.js";
import type { CliIo } from "../io.js";
import { deriveResourceSpec, withOverride, type ResourceOverride } from "./derived-spec.js";
import { EVENTS_OVERRIDES } from "./events.js";
import { IAM_OVERRIDES } from "./iam.js";
import { REGISTRY_DESCRIPTION, REGISTRY_OVERRIDES } from "./registry.js";
import { registerResource, type ResourceSpec } from "./resource.js";

// Today's help order; a service not named here comes after these, by name.
const HELP_ORDER = [
  "platform.iam.v2beta1.GroupsService",
  "platform.iam.v2beta1.IdentitiesService",
  "platform.iam.v2beta1.RolesService",
  "platform.iam.v2beta1.RoleBindingsService",
  "platform.iam.v2beta1.RootRoleBindingsService",
  "platform.iam.v2beta1.IdentityProvidersService",
  "platform.iam.v2beta1.AccountAssociationsService",
  "platform.iam.v2beta1.GroupInvitesService",
  "platform.registry.v2beta1.ReposService",
  "platform.registry.v2beta1.TagsService",
];
const rank = (s: DescService) => {
  const at = HELP_ORDER.indexOf(s.typeName);
  return at === -1 ? HELP_ORDER.length : at;
};

// Services with commands of their own (advisories.ts adds import to them).
const OWN_COMMANDS = new Set(["platform.vulnerabilities.v2beta1.AdvisoriesService"]);

/**
 * The resource services that get `platformctl <area> <resource> …` commands:
 * every v2beta1 service of the API with a List and a Get (gen/api-index.ts,
 * generated from the protos, so a new resource needs no line here).
 * Descriptors only: importing src/services would load the server.
 */
export const RESOURCE_SERVICES: readonly DescService[] = API_SERVICE_DESCRIPTORS.filter(
  (s) =>
    s.typeName.includes(".v2beta1.") &&
    !OWN_COMMANDS.has(s.typeName) &&
    s.methods.some((m) => standardMethodOf(m) === "List") &&
    s.methods.some((m) => standardMethodOf(m) === "Get"),
).sort((a, b) => rank(a) - rank(b) || a.typeName.localeCompare(b.typeName));

/** By service type name. A service without an entry gets the derived commands as they are. */
export const OVERRIDES: Readonly<Record<string, ResourceOverride>> = { ...IAM_OVERRIDES, ...REGISTRY_OVERRIDES, ...EVENTS_OVERRIDES };

const AREA_DESCRIPTIONS: Readonly<Record<string, string>> = { registry: REGISTRY_DESCRIPTION };

/** The specs with the project's overrides, made once: a process that builds the program again (the tests run the CLI in-process) does not derive them again. */
const specs = new Map<DescService, ResourceSpec>();

/** A service's commands: derived, then overridden. */
export function resourceSpec(service: DescService, overrides: Readonly<Record<string, ResourceOverride>> = OVERRIDES): ResourceSpec {
  const derive = () => withOverride(deriveResourceSpec(service), overrides[service.typeName]);
  if (overrides !== OVERRIDES) return derive();
  let spec = specs.get(service);
  if (!spec) specs.set(service, (spec = derive()));
  return spec;
}

/**
 * Adds `<area> <resource> list|get|…` for each service; the area is the first
 * segment of its REST path (`/iam/v2beta1/groups` → `iam`), described by
 * AREA_DESCRIPTIONS or else by the list of its resources.
 */
export function registerResources(
  program: Command,
  io: CliIo,
  services: readonly DescService[] = RESOURCE_SERVICES,
  overrides: Readonly<Record<string, ResourceOverride>> = OVERRIDES,
): void {
  const areas = new Map<string, ResourceSpec[]>();
  for (const service of services) {
    const spec = resourceSpec(service, overrides);
    const area = spec.path.split("/")[1]!;
    areas.set(area, [...(areas.get(area) ?? []), spec]);
  }
  for (const [area, specs] of areas) {
    const cmd = program.command(area).description(AREA_DESCRIPTIONS[area] ?? specs.map((s) => s.command.replace(/-/g, " ")).join(", "));
    for (const spec of specs) registerResource(cmd, spec, io);
  }
}
