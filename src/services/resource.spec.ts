import { Egress } from "../egress/index.js";
import { EventHub } from "../events/index.js";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { create } from "@bufbuild/protobuf";
import { is } from "drizzle-orm";
import { getTableConfig, PgTable } from "drizzle-orm/pg-core";
import { beforeAll, describe, expect, it } from "vitest";
import { testEventRecorder } from "../../test/support/event-recorder.js";
import { migratedStorePerFile } from "../../test/support/fresh-store.js";
import { GroupSchema, GroupsService } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { TagSchema } from "../../gen/platform/registry/v2beta1/tags_pb.js";
import { SecretBox } from "../crypto/index.js";
import { schema, type DatabaseHandle } from "../db/index.js";
import { ListEngine } from "../list/index.js";
import type { ServiceContext } from "./context.js";
import { DEFAULT_EVENT_STREAM_LIMITS } from "./events/stream-limits.js";
import { API_SERVICES } from "./index.js";
import { standardMethodOf } from "../descriptors/index.js";
import { ResourceCatalog } from "./resource-catalog.js";
import { defineResource, resourceService } from "./resource.js";

const tablesDir = fileURLToPath(new URL("../db/tables/", import.meta.url));
const tableModules = await Promise.all(
  readdirSync(tablesDir)
    .filter((f) => f.endsWith(".ts") && !f.endsWith(".spec.ts"))
    .map((f) => import(pathToFileURL(join(tablesDir, f)).href) as Promise<Record<string, unknown>>),
);

let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));
let ctx: ServiceContext;

beforeAll(async () => {
  const secrets = new SecretBox(Buffer.alloc(32, 7));
  const clock = () => new Date("2026-01-01T00:00:00Z");
  ctx = {
    db: handle.db,
    list: await ListEngine.create(handle.db, secrets, clock),
    clock,
    secrets,
    events: testEventRecorder(clock),
    eventHub: new EventHub({
      db: handle.db,
      onError: (e) => {
        throw e;
      },
    }),
    egress: new Egress({ allowInsecure: false }),
    access: { visibilityNow: () => Promise.reject(new Error("no stream in these tests")) },
    eventStreams: DEFAULT_EVENT_STREAM_LIMITS,
    resources: new ResourceCatalog(API_SERVICES),
  };
});

describe("resource definitions", () => {
  it("every table whose rows live in a group either keeps the group from being deleted or goes with it", () => {
    // Role bindings are the group's access policy: deleting the group deletes them (docs/design.md, "Resources").
    const goesWithGroup = new Set<PgTable>([schema.roleBindings]);
    const registered = new Set(ctx.resources.groupContents().map((c) => c.table));
    // Every file drizzle-kit reads (drizzle.config.ts), not only those schema.ts re-exports.
    const tables = [...new Set(tableModules.flatMap((m) => Object.values(m).filter((v): v is PgTable => is(v, PgTable))))];
    const heldByGroups = tables.filter((table) =>
      getTableConfig(table).foreignKeys.some((fk) => {
        const ref = fk.reference();
        return ref.foreignTable === schema.groups && ref.columns.some((c) => c.name === "parent_uid");
      }),
    );
    expect(heldByGroups.length).toBeGreaterThan(5);
    for (const table of heldByGroups) {
      const name = getTableConfig(table).name;
      expect(
        registered.has(table) || goesWithGroup.has(table),
        `${name}: a group holding its rows must refuse deletion or delete them`,
      ).toBe(true);
    }
  });

  it("refuses at start a service with a method that is neither written nor derivable", () => {
    // A resource of another message: no method of GroupsService has its shape.
    const stranger = defineResource({
      kind: "stranger",
      table: schema.tags,
      schema: TagSchema,
      toMessage: () => create(TagSchema),
      validate: () => {},
      toColumns: () => ({}),
    });
    const service = resourceService(GroupsService, stranger);
    expect(() => service.implement(ctx)).toThrow(
      /platform\.iam\.v2beta1\.GroupsService\.\w+ is neither written nor derivable from the stranger resource/,
    );
  });

  it("derives every method the service's resource shape allows, and keeps the written ones", async () => {
    const written = async () => create(GroupSchema, { name: "written" });
    const impl = resourceService(GroupsService, (await import("./iam/groups.js")).groupResource, { getGroup: written }).build(ctx);
    expect(impl.getGroup).toBe(written);
    for (const m of GroupsService.methods) expect(typeof (impl as Record<string, unknown>)[m.localName], m.name).toBe("function");
  });
});

describe("resources as plain constants", () => {
  const refs = { unique: "7", role: "viewer", capabilities: ["groups.list"] };
  const withResource = API_SERVICES.filter((s) => s.resource !== undefined);

  it("every API service over a resource states it, and a Create taking the resource's message has an example", () => {
    expect(withResource.length).toBeGreaterThan(10);
    const lacking = withResource.filter((s) => {
      const body = s.service.methods
        .find((m) => standardMethodOf(m) === "Create")
        ?.input.fields.some((f) => f.fieldKind === "message" && f.message === s.resource!.schema);
      return body && !s.resource!.example;
    });
    expect(lacking.map((s) => s.service.typeName)).toEqual([]);
  });

  it("each example is a resource its own validation accepts", () => {
    for (const { service, resource } of withResource) {
      if (!resource!.example) continue;
      const message = create(resource!.schema, resource!.example(refs));
      expect(() => resource!.validate(message, ctx), service.typeName).not.toThrow();
    }
  });

  it("the hooks get their run-time dependencies from the context: a sink the context's egress guard refuses is refused", async () => {
    const { subscriptionResource } = await import("./events/subscriptions.js");
    const message = create(subscriptionResource.schema, { sink: "http://127.0.0.1/hook", types: ["platform."] });
    const strict = { ...ctx, egress: new Egress({ allowInsecure: false }) };
    const lax = { ...ctx, egress: new Egress({ allowInsecure: true }) };
    expect(() => subscriptionResource.validate(message, strict)).toThrow(/sink/);
    expect(() => subscriptionResource.validate(message, lax)).not.toThrow();
  });

  it("what a group may hold comes from the service index, whatever services were built", () => {
    const fresh = new ResourceCatalog(API_SERVICES);
    expect(fresh.groupContents().map((c) => c.label)).toEqual(ctx.resources.groupContents().map((c) => c.label));
    expect(fresh.groupContents().map((c) => c.label)).toContain("child groups");
    expect(new ResourceCatalog([]).groupContents()).toEqual([]);
  });
});
