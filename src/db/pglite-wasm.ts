// PGlite's WASM build, compiled with the embedded store's shared_buffers (docs/design.md, "Storage").
//
// PGlite 0.3 starts PostgreSQL with settings compiled into its WASM as command-line options
// (`-c shared_buffers=128MB`, …). Command-line settings outrank postgresql.conf and ALTER SYSTEM,
// and 0.3 takes no start parameters, so the one way to change shared_buffers is that option's
// text. PostgreSQL's shared memory is allocated and zeroed in the WASM's linear memory at start:
// 128MB of buffers made 150 MiB of the process resident before the first query, for a store whose
// data is a few MiB. Pages the buffers do not hold are read from the data directory's files, which
// the OS caches outside the process.
import { readFile } from "node:fs/promises";
import type { PGliteOptions } from "@electric-sql/pglite";

type WasmModule = NonNullable<PGliteOptions["wasmModule"]>;
// Node has WebAssembly; this project's type libraries (no DOM) only name its types.
const { WebAssembly: wasm } = globalThis as unknown as { WebAssembly: { compile(bytes: Uint8Array): Promise<WasmModule> } };

/**
 * The embedded store's shared_buffers. The bench's store (13,000 groups, 14 MiB of tables and
 * indexes) reads and lists at the same CPU time per request with 8MB as with 16MB, 10 MiB less.
 */
export const SHARED_BUFFERS = "8MB";

// The option as PGlite 0.3's build holds it: a NUL-terminated C string in the WASM's data.
const COMPILED_IN = "shared_buffers=128MB\0";

/**
 * Rewrites the compiled-in shared_buffers option of PGlite's WASM `bytes` in place to `value`
 * (same length or shorter: the string is padded with NULs, so no offset in the binary moves).
 * Returns false, leaving `bytes` as they were, unless the option is there exactly once.
 */
export function setSharedBuffers(bytes: Uint8Array, value: string): boolean {
  if (!/^\d+[kMG]B$/.test(value)) throw new Error(`shared_buffers: "${value}" is not a size such as 8MB`);
  const option = Buffer.from(`shared_buffers=${value}`);
  if (option.length >= COMPILED_IN.length) throw new Error(`shared_buffers: "${value}" is longer than the compiled-in 128MB`);
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const at = buffer.indexOf(COMPILED_IN, 0, "latin1");
  if (at < 0 || buffer.indexOf(COMPILED_IN, at + 1, "latin1") >= 0) return false;
  buffer.fill(0, at, at + COMPILED_IN.length);
  option.copy(buffer, at);
  return true;
}

/** Where PGlite's own loader finds its WASM: beside its entry module. */
const wasmUrl = (): URL => new URL("pglite.wasm", import.meta.resolve("@electric-sql/pglite"));

/**
 * PGlite's WASM compiled with `sharedBuffers`, for PGlite's `wasmModule` option. A build that does
 * not hold the option as expected (another PGlite version) is compiled as it is and runs with its
 * 128MB: `pglite-thread.spec.ts` checks what the store runs with.
 */
export async function compilePglite(sharedBuffers = SHARED_BUFFERS): Promise<WasmModule> {
  const bytes = await readFile(wasmUrl());
  if (!setSharedBuffers(bytes, sharedBuffers)) {
    // Loud, not fatal: the store works, with 150 MiB more resident (docs/operations.md).
    process.emitWarning(
      `PGlite's WASM does not hold its shared_buffers option as expected: the embedded store runs with PGlite's own (128MB), not ${sharedBuffers}`,
    );
  }
  return wasm.compile(bytes);
}
