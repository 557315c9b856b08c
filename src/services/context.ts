import type { StreamAccess } from "../authz/index.js";
import type { SecretBox } from "../crypto/index.js";
import type { Database } from "../db/index.js";
import type { Egress } from "../egress/index.js";
import type { EventHub, EventRecorder } from "../events/index.js";
import type { ListEngine } from "../list/index.js";
import type { EventStreamLimits } from "./events/stream-limits.js";
import type { ResourceCatalog } from "./resource-catalog.js";

/** What every service implementation is built from (wired in src/server/app.ts). */
export interface ServiceContext {
  db: Database;
  list: ListEngine;
  clock: () => Date;
  /** Seals secrets the services store (identity providers' client secrets). */
  secrets: SecretBox;
  /** Records each change's event in the change's transaction. */
  events: EventRecorder;
  /** Announces recorded events to this replica's watchers. */
  eventHub: EventHub;
  /** The egress guard webhooks are delivered through (sinks are checked against its rule). */
  egress: Egress;
  /** Checks a stream's caller again while the stream runs (WatchEvents). */
  access: StreamAccess;
  /** The resources this server serves, filled as their services are built (what a group may hold). */
  resources: ResourceCatalog;
  /** The caps on open WatchEvents streams (docs/operations.md, "Configuration"). */
  eventStreams: EventStreamLimits;
}
