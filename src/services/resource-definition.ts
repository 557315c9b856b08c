import type { DescMessage, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import { getTableColumns } from "drizzle-orm";
import type { PgColumn, PgTable } from "drizzle-orm/pg-core";
import type { SecretBox } from "../crypto/index.js";
import { columnKey, type Executor, type GroupContent, type Transaction } from "../db/index.js";
import type { Egress } from "../egress/index.js";
import type { ChangeCall, EventRecorder } from "../events/index.js";
import type { ExtraFilters, ListSource } from "../list/index.js";

// A resource as its service file states it, and what the machinery derives from it
// (docs/design.md, "Resources").

/** What a definition's hooks may use at run time: handed to them by the store, from the services' context. */
export interface ResourceDeps {
  /** Seals what a row keeps secret (an identity provider's client secret). */
  secrets: SecretBox;
  /** The guard outbound requests go through (a subscription's sink must be a URL it would send to). */
  egress: Egress;
}

/**
 * What a test supplies so that an example is valid where it is created: a suffix that makes
 * names unique, and a role (and its capabilities) its creator may hand out in the parent group.
 */
export interface ExampleRefs {
  unique: string;
  role: string;
  capabilities: readonly string[];
}

/**
 * Runs inside a delete's transaction, after the row lock: checks, and rows that go with the
 * deleted one (whose events it records with `deleting.events`, for `deleting.call`).
 */
export type BeforeDelete<T extends PgTable> = (
  tx: Transaction,
  row: T["$inferSelect"],
  deleting: { call: ChangeCall; events: EventRecorder; groupContents: readonly GroupContent[] },
) => Promise<void>;

/** One resource, as its service file states it: a plain constant, the only description of it. */
export interface Resource<T extends PgTable, Desc extends DescMessage> {
  /** Singular noun for errors: "group", "identity". */
  kind: string;
  table: T;
  schema: Desc;
  /** The uid column (default: the table's `uid`). */
  uid?: PgColumn;
  toMessage(row: T["$inferSelect"], deps: ResourceDeps): MessageShape<Desc>;
  /** Checks a message about to be stored (after create defaults or an update); throws INVALID_ARGUMENT. */
  validate(message: MessageShape<Desc>, deps: ResourceDeps): void;
  /** The writable columns of a message (used by create and update). */
  toColumns(message: MessageShape<Desc>, deps: ResourceDeps): Partial<T["$inferInsert"]>;
  /** ALREADY_EXISTS description for a unique-constraint collision. */
  duplicate?: (message: MessageShape<Desc>) => string;
  /** NOT_FOUND kind for a foreign-key failure on insert ("group" when the parent is missing). */
  missingReference?: string;
  /** The group a row's events belong to (default: the row itself for groups, else its parent, null for global rows). */
  eventGroup?: (row: T["$inferSelect"]) => string | null;
  /** Fills fields that live in other tables (a repo's active tags, a binding's identity), for a whole page at once. */
  decorate?: ((db: Executor, messages: MessageShape<Desc>[]) => Promise<MessageShape<Desc>[]>) | undefined;
  /** How the List engine reads the table, where it differs from the defaults its columns give (listSourceOf). */
  list?: Partial<ListSource<T>>;
  /** Filters of the List request beyond scope and name (validated; throw INVALID_ARGUMENT). */
  listFilters?: (req: never) => ExtraFilters;
  /** The uid of a new row in `parent` (default: a fresh child uid under the parent's path). */
  newUid?: (parent: string) => string;
  /** Runs inside the delete's transaction, after the row lock: checks and dependent rows. */
  beforeDelete?: BeforeDelete<T>;
  /** The error for a delete that a foreign key refused (rows referencing it appeared meanwhile). */
  stillReferenced?: (uid: string) => unknown;
  /**
   * Rows live in a group, and a group holding any cannot be deleted: the plural noun its refusal
   * names ("repos"). Omit for rows that go with their group (role bindings) or live in no group.
   */
  groupContent?: string;
  /** A valid Create's resource (the authorization matrix makes one per organization); no effect beyond its row. */
  example?: (refs: ExampleRefs) => MessageInitShape<Desc>;
}

/** A resource of any table and message, where only the shared fields are read. */
// biome-ignore lint/suspicious/noExplicitAny: a list of resources of different tables and messages.
export type AnyResource = Resource<any, any>;

/** A typed identity: the table and message given infer the types of the hooks. */
export function defineResource<T extends PgTable, Desc extends DescMessage>(resource: Resource<T, Desc>): Resource<T, Desc> {
  return resource;
}

function columnsOf(table: PgTable): Record<string, PgColumn | undefined> {
  return getTableColumns(table) as Record<string, PgColumn | undefined>;
}

/** The uid column: stated, or the table's `uid`. */
export function uidColumnOf(resource: AnyResource): PgColumn {
  const uid = resource.uid ?? columnsOf(resource.table)["uid"];
  if (!uid) throw new Error(`${resource.kind}: its table has no uid column`);
  return uid;
}

/** How the List engine reads the resource: defaults from the table's columns, then what the definition states. */
export function listSourceOf<T extends PgTable>(resource: Resource<T, DescMessage>): ListSource<T> {
  const columns = columnsOf(resource.table);
  const sortable: ListSource<T>["sortable"] = {};
  if (columns["name"]) sortable.name = columns["name"];
  if (columns["createTime"]) sortable.create_time = columns["createTime"];
  if (columns["updateTime"]) sortable.update_time = columns["updateTime"];
  return {
    table: resource.table,
    uid: uidColumnOf(resource),
    parentUid: columns["parentUid"],
    isGroup: false,
    name: columns["name"],
    sortable,
    ...resource.list,
  };
}

/** The group a row's events belong to: stated, or the row itself for groups, else its parent (null for global rows). */
export function eventGroupOf<T extends PgTable>(resource: Resource<T, DescMessage>): (row: T["$inferSelect"]) => string | null {
  if (resource.eventGroup) return resource.eventGroup;
  const list = listSourceOf(resource);
  const uidKey = columnKey(resource.table, list.uid);
  const parentKey = list.parentUid ? columnKey(resource.table, list.parentUid) : undefined;
  return (row) => {
    const r = row as Record<string, unknown>;
    if (list.isGroup) return String(r[uidKey]);
    return parentKey ? ((r[parentKey] as string | null) ?? null) : null;
  };
}

/** What a group holding the resource's rows cannot be deleted for, if anything. */
export function groupContentOf(resource: AnyResource): GroupContent | undefined {
  if (!resource.groupContent) return undefined;
  const parentUid = listSourceOf(resource).parentUid;
  if (!parentUid) throw new Error(`${resource.kind}: a group content needs a parentUid column`);
  return { label: resource.groupContent, table: resource.table, parentUid };
}
