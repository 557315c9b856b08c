/** Reads a response body, failing once it passes `maxBytes`, so a huge answer cannot tie up the server. */
export async function readBodyLimited(res: Response, url: string, maxBytes: number): Promise<Buffer> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > maxBytes) throw new Error(`${url} is larger than ${maxBytes} bytes`);
  const reader = res.body?.getReader();
  if (!reader) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new Error(`${url} is larger than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** Fetches JSON with a deadline and a size cap, so a slow or huge answer cannot tie up the server. */
export async function fetchJsonLimited(url: string, opts: { timeoutMs: number; maxBytes: number }): Promise<unknown> {
  const res = await fetch(url, {
    signal: AbortSignal.timeout(opts.timeoutMs),
    redirect: "error",
    headers: { accept: "application/json" },
  });
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  if (!res.body) throw new Error(`${url} has no body`);
  return JSON.parse((await readBodyLimited(res, url, opts.maxBytes)).toString("utf8")) as unknown;
}
