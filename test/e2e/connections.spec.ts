import http2 from "node:http2";
import net from "node:net";
import { afterAll, beforeAll, describe, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";

// Slow and idle clients cannot hold sockets: header, request and idle
// timeouts apply from the first byte, through the HTTP/1.1-or-HTTP/2
// sniffing, to HTTP/2 sessions.

let server: TestServer;

beforeAll(async () => {
  // Short, so the tests wait little; long enough that a loaded machine still sends a whole request in time.
  server = await startTestServer({
    PLATFORM_HEADERS_TIMEOUT_MS: "600",
    PLATFORM_REQUEST_TIMEOUT_MS: "1200",
    PLATFORM_IDLE_TIMEOUT_MS: "800",
  });
});
afterAll(async () => {
  await server?.stop();
});

/** Connects and sends `bytes` one at a time every `everyMs`; resolves when the server closes the socket, with what was sent by then. */
function trickle(bytes: string, everyMs: number): Promise<{ sent: number; elapsedMs: number; answer: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = net.connect(server.app.port, "127.0.0.1");
    let sent = 0;
    let answer = "";
    const timer = setInterval(() => {
      if (sent < bytes.length) socket.write(bytes[sent++]!);
    }, everyMs);
    // A bound for the test itself: the server must have closed long before.
    const limit = setTimeout(() => {
      clearInterval(timer);
      socket.destroy();
      reject(new Error(`still open after ${sent} bytes`));
    }, 15_000);
    socket.on("data", (d: Buffer) => (answer += d.toString()));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearInterval(timer);
      clearTimeout(limit);
      resolve({ sent, elapsedMs: performance.now() - started, answer });
    });
  });
}

// Concurrent: each test holds its own sockets and spends its time waiting for a timeout.
describe.concurrent("connection timeouts", () => {
  it("disconnects an HTTP/1.1 client that sends its headers a byte at a time", async ({ expect }) => {
    const request = `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ${"a".repeat(200)}\r\n\r\n`;
    const result = await trickle(request, 100);
    expect(result.sent).toBeLessThan(request.length);
    expect(result.elapsedMs).toBeLessThan(5_000);
    expect(result.answer === "" || result.answer.startsWith("HTTP/1.1 408")).toBe(true);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it("disconnects a client that never says whether it speaks HTTP/1.1 or HTTP/2", async ({ expect }) => {
    // Silent, and 22 of the HTTP/2 preface's 24 bytes, which keep the sniffer waiting for more: neither waits forever.
    const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n";
    const [silent, partial] = await Promise.all([trickle("", 100), trickle(preface, 5)]);
    expect(silent.elapsedMs).toBeLessThan(5_000);
    expect(partial.sent).toBe(preface.length);
    expect(partial.elapsedMs).toBeLessThan(5_000);
  });

  it("closes an idle HTTP/2 session", async ({ expect }) => {
    const session = http2.connect(server.url);
    const started = performance.now();
    const closed = new Promise<number>((resolve) => session.on("close", () => resolve(performance.now() - started)));
    session.on("error", () => {});
    const elapsed = await Promise.race([closed, new Promise<number>((resolve) => setTimeout(() => resolve(Infinity), 10_000))]);
    session.destroy();
    expect(elapsed).toBeLessThan(6_000);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it("still serves ordinary HTTP/1.1 and HTTP/2 requests", async ({ expect }) => {
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const session = http2.connect(server.url);
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = session.request({ ":path": "/healthz" });
        req.on("response", (h) => resolve(Number(h[":status"])));
        req.on("error", reject);
        // Read to the end: an unread stream stays open after close(), and with it the session.
        req.resume();
        req.end();
      });
      expect(status).toBe(200);
    } finally {
      session.close();
    }
  });
});
