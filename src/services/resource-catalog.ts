import type { PgTable } from "drizzle-orm/pg-core";
import type { GroupContent } from "../db/index.js";

/**
 * The resources one server serves, as their services are built at start (`resourceService`):
 * what a group can hold that keeps it from being deleted comes from here, not from a module
 * global, so it is exactly the set of services this server runs.
 */
export class ResourceCatalog {
  private readonly contents = new Map<PgTable, GroupContent>();

  add(def: { groupContent?: GroupContent | undefined }): void {
    if (def.groupContent && !this.contents.has(def.groupContent.table)) this.contents.set(def.groupContent.table, def.groupContent);
  }

  /** Every resource that keeps a group from being deleted, in the order its service was built. */
  groupContents(): readonly GroupContent[] {
    return [...this.contents.values()];
  }
}
