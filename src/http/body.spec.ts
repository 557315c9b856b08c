import type { IncomingHttpHeaders } from "node:http";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { BodyReadError, BodyTooLargeError, readBody } from "./body.js";

function request(headers: IncomingHttpHeaders = {}): PassThrough & { headers: IncomingHttpHeaders } {
  return Object.assign(new PassThrough(), { headers });
}

describe("readBody", () => {
  it("collects the chunks of a body within the limit", async () => {
    const req = request();
    const body = readBody(req, 10);
    req.write("abc");
    req.write("defg");
    req.end("hij");
    expect(new TextDecoder().decode(await body)).toBe("abcdefghij");
  });

  it("returns an empty body", async () => {
    const req = request();
    const body = readBody(req, 10);
    req.end();
    expect((await body).byteLength).toBe(0);
  });

  it("refuses a declared Content-Length over the limit without reading", async () => {
    const req = request({ "content-length": "11" });
    await expect(readBody(req, 10)).rejects.toBeInstanceOf(BodyTooLargeError);
    expect(req.readableFlowing).toBeNull(); // nobody started reading
  });

  it("stops reading as soon as the limit is passed, and leaves the stream paused", async () => {
    const req = request();
    const body = readBody(req, 10);
    req.write("123456");
    req.write("789012");
    await expect(body).rejects.toBeInstanceOf(BodyTooLargeError);
    expect(req.isPaused()).toBe(true);
    expect(req.listenerCount("data")).toBe(0);
    req.write("more that nobody reads");
    expect(req.listenerCount("data")).toBe(0);
  });

  it("fails with BodyReadError when the client goes away mid-body", async () => {
    const req = request();
    const body = readBody(req, 100);
    req.write("partial");
    req.destroy();
    await expect(body).rejects.toBeInstanceOf(BodyReadError);
  });

  it("fails with BodyReadError on a stream error", async () => {
    const req = request();
    const body = readBody(req, 100);
    req.destroy(new Error("reset"));
    await expect(body).rejects.toBeInstanceOf(BodyReadError);
  });
});
