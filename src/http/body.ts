import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`request body exceeds ${limit} bytes`);
    this.name = "BodyTooLargeError";
  }
}

/** The client went away, or the stream failed, before the body was complete. */
export class BodyReadError extends Error {
  constructor(cause: unknown) {
    super("request body could not be read", { cause });
    this.name = "BodyReadError";
  }
}

/**
 * Reads a request body of at most `limit` bytes. A declared Content-Length
 * over the limit is refused before reading anything; otherwise reading stops
 * (and the stream is paused, not destroyed, so the response can still be
 * written) as soon as the limit is passed. Never holds more than `limit`
 * bytes plus one chunk.
 */
export function readBody(req: Readable & { headers: IncomingHttpHeaders }, limit: number): Promise<Uint8Array> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > limit) {
    return Promise.reject(new BodyTooLargeError(limit));
  }
  if (req.readableEnded) return Promise.resolve(new Uint8Array(0));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = (): void => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
    };
    const onData = (chunk: Buffer | string): void => {
      const buf = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      size += buf.byteLength;
      if (size > limit) {
        cleanup();
        req.pause();
        chunks.length = 0;
        reject(new BodyTooLargeError(limit));
        return;
      }
      chunks.push(buf);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onError = (err: unknown): void => {
      cleanup();
      reject(new BodyReadError(err));
    };
    const onClose = (): void => {
      // "close" before "end": the client aborted mid-body.
      cleanup();
      reject(new BodyReadError(new Error("request closed before its body ended")));
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}
