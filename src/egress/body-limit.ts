import type { ReadableStream } from "node:stream/web";
import { EgressError } from "./egress-error.js";

/**
 * Reads a whole response body, failing once it passes `maxBytes`: a declared
 * content-length is checked first, then the bytes as they stream in (after
 * decompression, so a compressed bomb stops at the cap too).
 */
export async function readBodyLimited(
  res: { headers: { get(name: string): string | null }; body: ReadableStream<Uint8Array> | null },
  what: string,
  maxBytes: number,
): Promise<Buffer> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  const tooLarge = () => new EgressError("too_large", `${what} is larger than ${maxBytes} bytes`);
  if (declared > maxBytes) {
    await res.body?.cancel();
    throw tooLarge();
  }
  if (!res.body) return Buffer.alloc(0);
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
