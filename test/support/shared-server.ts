import { restClient, type RestClient } from "./clients.js";
import { SHARED_STORE_PREFIX_VARIABLE } from "./database.js";
import { startTestServer, type TestServer } from "./server.js";

// One default-config server per test worker, for the e2e files that need
// nothing else (every test makes its own organization, so they do not meet).
// A file that needs its own configuration, or asserts on server-wide rows
// (every role, the admin-token file, all stored secrets), starts its own.
// vitest.config.ts runs the test files on worker threads without isolation,
// so this module and its server outlive each file. Nobody stops it: the
// worker's end does, and the global setup (shared-server-setup.ts) removes
// its directory and database.

/** Renew the admin token when it has less than this left on the server's clock. */
const TOKEN_MARGIN_MS = 15 * 60 * 1000;

// Kept on globalThis, not in a module variable: a file that resets the module registry
// (vi.resetModules, src/services/service-coverage.spec.ts) makes later files load this module
// again, and a module variable would then start a second server and lose the first.
const SHARED = Symbol.for("platform-api.test.shared-server");
const slot = globalThis as { [SHARED]?: Promise<TestServer> };

async function start(): Promise<TestServer> {
  const storePrefix = process.env[SHARED_STORE_PREFIX_VARIABLE];
  if (!storePrefix)
    throw new Error(`sharedServer() needs the global setup of vitest.config.ts (${SHARED_STORE_PREFIX_VARIABLE} is not set)`);
  const server = await startTestServer({}, { storePrefix });
  server.stop = () => Promise.reject(new Error("the shared server is not stopped by a test file: its worker's end stops it"));
  return server;
}

function tokenExpiryMs(token: string): number {
  const payload = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString()) as { exp?: number };
  return (payload.exp ?? 0) * 1000;
}

/** This worker's shared server, started on first use, with an admin token valid for a while on its clock. */
export async function sharedServer(): Promise<TestServer> {
  // A failed start is not kept, so the next file tries again rather than failing on the same error.
  slot[SHARED] ??= start().catch((error: unknown) => {
    slot[SHARED] = undefined;
    throw error;
  });
  const server = await slot[SHARED];
  // The clock only moves forward, and an earlier file may have moved it past the token's expiry.
  if (tokenExpiryMs(server.token) - server.clock.now().getTime() < TOKEN_MARGIN_MS) await server.renewToken();
  return server;
}

/** This worker's shared server and a REST client that calls it as its administrator. */
export async function sharedServerAsAdmin(): Promise<{ server: TestServer; call: RestClient }> {
  const server = await sharedServer();
  return { server, call: restClient(server.url, server.token) };
}
