import type { SecretBox } from "../crypto/index.js";
import type { Database } from "../db/index.js";
import type { ListEngine } from "../list/index.js";

/** What every service implementation is built from (wired in src/server/app.ts). */
export interface ServiceContext {
  db: Database;
  list: ListEngine;
  clock: () => Date;
  /** Seals secrets the services store (identity providers' client secrets). */
  secrets: SecretBox;
}
