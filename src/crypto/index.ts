export { SecretBox, SecretBoxError, SECRET_BOX_KEY_BYTES } from "./secret-box.js";
export { decodeMasterKey, loadMasterKey, MASTER_KEY_FILE, type LoadedMasterKey } from "./master-key.js";
export { ensurePrivateDir } from "./private-dir.js";
export { randomHex, randomUint64 } from "./random-pool.js";
