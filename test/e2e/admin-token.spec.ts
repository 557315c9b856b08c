import { readdir, readFile, stat, chmod } from "node:fs/promises";
import { dirname } from "node:path";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { restClient } from "../support/clients.js";
import { startTestServer, type TestServer } from "../support/server.js";

// The bootstrap admin token file (docs/operations.md, "Admin token") stays valid while
// the server runs: once half of its hour has passed (on the server's clock,
// here a test clock moved by hand), a fresh token replaces it atomically,
// still mode 0600.

const MINUTE = 60_000;

let server: TestServer;
let path: string;

beforeAll(async () => {
  // The file is looked at every 20 ms instead of every minute.
  server = await startTestServer({}, { adminTokenCheckMs: 20 });
  path = server.app.adminTokenPath!;
});
afterAll(async () => {
  await server?.stop();
});

const fileToken = async () => (await readFile(path, "utf8")).trim();
const mode = async () => (await stat(path)).mode & 0o777;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits (real time) until the file holds a token other than `old`. */
async function renewedFrom(old: string): Promise<string> {
  for (let waited = 0; waited < 5000; waited += 20) {
    const now = await fileToken();
    if (now !== old) return now;
    await sleep(20);
  }
  throw new Error("the admin token was not renewed");
}

const groupsWith = (token: string) => restClient(server.url, token)("GET", "/iam/v2beta1/groups");

describe("admin token renewal", () => {
  it("is written at start, 0600, holding the token the server started with", async () => {
    expect(await fileToken()).toBe(server.token);
    expect(await mode()).toBe(0o600);
  });

  it("is kept while more than half of its lifetime is left, renewed after that, and the new token works", async () => {
    const first = await fileToken();
    server.clock.advance(20 * MINUTE);
    await sleep(200);
    expect(await fileToken()).toBe(first);

    // Someone loosened the file: the renewal replaces it with a private one.
    await chmod(path, 0o644);
    server.clock.advance(11 * MINUTE);
    const second = await renewedFrom(first);
    expect(await mode()).toBe(0o600);
    const claims = decodeJwt(second);
    expect(claims.sub).toBe(decodeJwt(first).sub);
    expect(claims.exp! * 1000 - server.clock.now().getTime()).toBeGreaterThan(59 * MINUTE);
    expect((await groupsWith(second)).status).toBe(200);

    // An hour after start the first token has expired; the file's is renewed again and still works.
    server.clock.advance(31 * MINUTE);
    const third = await renewedFrom(second);
    expect((await groupsWith(first)).status).toBe(401);
    expect((await groupsWith(third)).status).toBe(200);
    // The atomic write leaves nothing behind but the file itself (and what else lives in the data dir).
    expect((await readdir(dirname(path))).filter((f) => f.includes("admin-token"))).toEqual(["admin-token"]);
  });
});
