import type { PgTable } from "drizzle-orm/pg-core";
import type { GroupContent } from "../db/index.js";
import { groupContentOf, type AnyResource } from "./resource-definition.js";

/**
 * The resources one server serves, from its service index at start (each API service's
 * `resource`): what a group can hold that keeps it from being deleted comes from here, not from a
 * module global, so it is exactly the set of services this server runs.
 */
export class ResourceCatalog {
  private readonly contents: readonly GroupContent[];

  constructor(services: readonly { resource?: AnyResource | undefined }[] = []) {
    const byTable = new Map<PgTable, GroupContent>();
    for (const { resource } of services) {
      const content = resource && groupContentOf(resource);
      if (content && !byTable.has(content.table)) byTable.set(content.table, content);
    }
    this.contents = [...byTable.values()];
  }

  /** Every resource that keeps a group from being deleted, in the order of the services. */
  groupContents(): readonly GroupContent[] {
    return this.contents;
  }
}
