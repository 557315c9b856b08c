export { openDatabase, queryRows, type Database, type DatabaseHandle, type Executor, type Transaction } from "./client.js";
export * as schema from "./schema.js";
export { newRootUid, newChildUid, parentOf } from "./uid.js";
export { isUniqueViolation, isForeignKeyViolation } from "./pg-errors.js";
export { groupContents } from "./group-contents.js";
