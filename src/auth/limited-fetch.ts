/** Fetches JSON with a deadline and a size cap, so a slow or huge answer cannot tie up the server. */
export async function fetchJsonLimited(url: string, opts: { timeoutMs: number; maxBytes: number }): Promise<unknown> {
  const res = await fetch(url, {
    signal: AbortSignal.timeout(opts.timeoutMs),
    redirect: "error",
    headers: { accept: "application/json" },
  });
  if (res.status !== 200) throw new Error(`${url} answered ${res.status}`);
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > opts.maxBytes) throw new Error(`${url} is larger than ${opts.maxBytes} bytes`);
  const reader = res.body?.getReader();
  if (!reader) throw new Error(`${url} has no body`);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > opts.maxBytes) {
      await reader.cancel();
      throw new Error(`${url} is larger than ${opts.maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
}
