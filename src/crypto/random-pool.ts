import { randomFillSync } from "node:crypto";

// Uids and event ids take 8 to 20 random bytes each, several per write; one call into OpenSSL
// for each cost as much as the write's SQL building in a profile of creates. They are cut from
// a pool that one call refills, as node does for randomUUID. The bytes are the same CSPRNG's;
// each is handed out once and the pool never leaves the process.

const POOL_SIZE = 4_096;
const pool = Buffer.alloc(POOL_SIZE);
let offset = POOL_SIZE;

/** `n` (at most 256) fresh random bytes, as lowercase hex. */
export function randomHex(n: number): string {
  return take(n).toString("hex");
}

/** 8 fresh random bytes as an unsigned 64-bit integer. */
export function randomUint64(): bigint {
  return take(8).readBigUInt64BE();
}

function take(n: number): Buffer {
  if (!Number.isInteger(n) || n < 1 || n > 256) throw new RangeError(`random pool: ${n} bytes is not 1 to 256`);
  if (offset + n > POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = pool.subarray(offset, offset + n);
  offset += n;
  return bytes;
}
