export {
  openDatabase,
  POSTGRES_POOL_SIZE,
  queryRows,
  type Database,
  type DatabaseHandle,
  type Executor,
  type Transaction,
} from "./client.js";
export { PgliteThread } from "./pglite-thread.js";
export * as schema from "./schema.js";
export { syncBuiltInRoles, type BuiltInRolesSync } from "./built-in-roles.js";
export {
  newRootUid,
  newChildUid,
  newRootBindingUid,
  parentOf,
  organizationOf,
  groupAndAncestors,
  uidDepth,
  uidProblem,
  UID_SHAPES,
  MAX_GROUP_DEPTH,
  MAX_UID_SEGMENTS,
  MAX_UID_LENGTH,
  isAnyUid,
  type UidKind,
} from "./uid.js";
export { groupContents, type GroupContent } from "./group-contents.js";
export { loadSealedSetting, settingContext } from "./sealed-setting.js";
export { clientSecretContext, openClientSecret, sealClientSecret, sealPlaintextClientSecrets } from "./client-secrets.js";
export { columnKey, MAX_NAME_LENGTH } from "./columns.js";
export { inPieces } from "./pieces.js";
export { DirectoryInUseError, lockDirectory, type DirectoryLock, type LockHolder } from "./directory-lock.js";
export { findInviteByCode, findRedeemableInvite, inviteCodeHash, markInviteRedeemed } from "./invite-codes.js";
export { knownRow, lockedInsertPart } from "./known-insert.js";
export { runCompiled, type CompiledStatement } from "./compiled.js";
export { rowReader, valuesStatement, type RowReader, type ValuesStatement } from "./table-rows.js";
export { PgliteUpkeep, type PgliteUpkeepOptions } from "./pglite-upkeep.js";
