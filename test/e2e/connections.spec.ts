import http2 from "node:http2";
import net from "node:net";
import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, it } from "vitest";
import { CreateGroupRequestSchema } from "../../gen/platform/iam/v2beta1/groups_pb.js";
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

/**
 * Connects and sends `bytes`, `perTick` at a time every `everyMs`; resolves when the server closes the
 * socket, with what was sent by then.
 */
function trickle(bytes: string, everyMs: number, perTick = 1): Promise<{ sent: number; elapsedMs: number; answer: string }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = net.connect(server.app.port, "127.0.0.1");
    let sent = 0;
    let answer = "";
    const timer = setInterval(() => {
      if (sent >= bytes.length) return;
      const chunk = bytes.slice(sent, sent + perTick);
      socket.write(chunk);
      sent += chunk.length;
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
    // The 22 bytes go in one write: sent a byte at a time, a loaded machine's timers had not sent
    // them all before the server's 600 ms were up.
    const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n";
    const [silent, partial] = await Promise.all([trickle("", 100), trickle(preface, 5, preface.length)]);
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

// An anonymous caller cannot make the server hold request bodies: a body that may be larger than
// 64 KiB is read only once the bearer token in the headers is valid, and a connection has at most
// 100 streams open (docs/security.md, "Connections").
describe("HTTP/2 streams and bodies before authentication", () => {
  let open: TestServer;
  beforeAll(async () => {
    open = await startTestServer();
  });
  afterAll(async () => {
    await open?.stop();
  });

  const MIB = Buffer.alloc(1024 * 1024, 0x20);
  const CREATE_GROUP = "/platform.iam.v2beta1.GroupsService/CreateGroup";

  /**
   * Opens a POST whose body is never sent (no DATA frame, no END_STREAM): resolves with the
   * answer's headers, which must therefore come before any of the body.
   */
  function unsentBody(
    session: http2.ClientHttp2Session,
    headers: http2.OutgoingHttpHeaders,
  ): Promise<http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader> {
    return new Promise((resolve, reject) => {
      const stream = session.request({ ":method": "POST", ...headers }, { endStream: false });
      stream.on("response", (h) => resolve(h));
      stream.on("error", reject);
      stream.resume();
    });
  }

  /** unsentBody for gRPC: resolves with the trailers, where the status is. */
  function unsentGrpcBody(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders): Promise<http2.IncomingHttpHeaders> {
    return new Promise((resolve, reject) => {
      const stream = session.request({ ":method": "POST", ...headers }, { endStream: false });
      stream.on("trailers", (t) => resolve(t));
      stream.on("error", reject);
      stream.resume();
    });
  }

  /** A gRPC / gRPC-Web message envelope; `compressed` sets its flag (the bytes are gzip). */
  function envelope(message: Uint8Array, compressed: boolean): Buffer {
    const out = Buffer.alloc(5 + message.byteLength);
    out[0] = compressed ? 1 : 0;
    out.writeUInt32BE(message.byteLength, 1);
    out.set(message, 5);
    return out;
  }

  /** Many empty sub-messages, small on the wire once gzipped: what a decoder spends its time on. */
  const MANY_EMPTY_JSON = Buffer.from(`{"documents":[${Array(20_000).fill("{}").join(",")}]}`);

  interface Answer {
    headers: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader;
    trailers: http2.IncomingHttpHeaders;
    /** Whether the client had sent the body when the answer's headers came. */
    bodySent: boolean;
  }

  /**
   * Opens a POST declaring `body`'s (small) length and holds the body back: a server that answers
   * from the headers alone answers before it is sent. One that waits for it gets it after a while
   * (so that the test ends either way), and the answer then reports bodySent.
   */
  function heldBody(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body: Buffer): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const stream = session.request({ ":method": "POST", "content-length": String(body.length), ...headers }, { endStream: false });
      let bodySent = false;
      let answer: Omit<Answer, "trailers"> | undefined;
      const sendLate = setTimeout(() => {
        bodySent = true;
        stream.end(body);
      }, 2_000);
      stream.on("response", (h) => {
        clearTimeout(sendLate);
        answer = { headers: h, bodySent };
      });
      let trailers: http2.IncomingHttpHeaders = {};
      stream.on("trailers", (t) => (trailers = t));
      stream.on("close", () => (answer ? resolve({ ...answer, trailers }) : reject(new Error("no answer"))));
      stream.on("error", () => {});
      stream.resume();
    });
  }

  /** Sends `body` whole and reads the answer (status, trailers, body text). */
  function send(
    session: http2.ClientHttp2Session,
    headers: http2.OutgoingHttpHeaders,
    body: Buffer,
  ): Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders; text: string }> {
    return new Promise((resolve, reject) => {
      const stream = session.request({ ":method": "POST", "content-length": String(body.length), ...headers });
      let answer: http2.IncomingHttpHeaders = {};
      let trailers: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      stream.on("response", (h) => (answer = h));
      stream.on("trailers", (t) => (trailers = t));
      stream.on("data", (d: Buffer) => chunks.push(d));
      stream.on("end", () => resolve({ headers: answer, trailers, text: Buffer.concat(chunks).toString() }));
      stream.on("error", reject);
      stream.end(body);
    });
  }

  it("advertises at most 100 concurrent streams in its SETTINGS", async ({ expect }) => {
    const session = http2.connect(open.url);
    try {
      const settings = await new Promise<http2.Settings>((resolve) => session.once("remoteSettings", resolve));
      expect(settings.maxConcurrentStreams).toBe(100);
    } finally {
      session.close();
    }
  });

  it("refuses an anonymous or badly authenticated body of unknown or large length before any of it is sent, on REST, Connect and gRPC", async ({
    expect,
  }) => {
    const session = http2.connect(open.url);
    try {
      for (const authorization of [undefined, "Bearer not-a-token"]) {
        const auth = authorization ? { authorization } : {};
        const rest = await unsentBody(session, { ":path": "/iam/v2beta1/groups", "content-type": "application/json", ...auth });
        expect(rest[":status"]).toBe(401);
        const connect = await unsentBody(session, {
          ":path": CREATE_GROUP,
          "content-type": "application/json",
          "content-length": String(MIB.length),
          ...auth,
        });
        expect(connect[":status"]).toBe(401);
        const grpc = await unsentGrpcBody(session, { ":path": CREATE_GROUP, "content-type": "application/grpc", te: "trailers", ...auth });
        expect(grpc["grpc-status"]).toBe("16");
        const grpcWeb = await unsentBody(session, { ":path": CREATE_GROUP, "content-type": "application/grpc-web+proto", ...auth });
        expect(grpcWeb[":status"]).toBe(200);
        expect(grpcWeb["grpc-status"]).toBe("16");
      }
    } finally {
      session.close();
    }
  });

  it("answers 150 unfinished anonymous 1 MiB POSTs on one connection with 401, having let through at most a flow-control window of each", async ({
    expect,
  }) => {
    // The client's own memory bound (10 MB by default) would stop it queueing 150 MiB.
    const session = http2.connect(open.url, { maxSessionMemory: 1000 });
    session.on("error", () => {});
    try {
      const answers = await Promise.all(
        Array.from(
          { length: 150 },
          () =>
            new Promise<{ status: number; closed: Promise<void> }>((resolve, reject) => {
              const stream = session.request(
                { ":method": "POST", ":path": "/iam/v2beta1/groups", "content-type": "application/json" },
                { endStream: false },
              );
              const closed = new Promise<void>((done) => stream.once("close", () => done()));
              stream.on("response", (h) => resolve({ status: Number(h[":status"]), closed }));
              stream.on("error", reject);
              stream.resume();
              // Sent as far as the server's flow control lets it; never finished.
              stream.write(MIB);
            }),
        ),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(150).fill(401));
      // Each stream is ended by the server once answered (RST_STREAM NO_ERROR): nothing more is sent on it.
      await Promise.all(answers.map((a) => a.closed));
      // What went out: at most the 64 KiB window of each stream (the server never read on), not 150 MiB.
      expect(session.socket.bytesWritten).toBeLessThan(150 * 80 * 1024);
    } finally {
      session.destroy();
    }
    expect((await fetch(`${open.url}/healthz`)).status).toBe(200);
  });

  it("refuses an anonymous or badly authenticated gzip-compressed small body before any of it is sent, on Connect, gRPC and gRPC-Web", async ({
    expect,
  }) => {
    const json = gzipSync(MANY_EMPTY_JSON);
    const proto = envelope(
      gzipSync(toBinary(CreateGroupRequestSchema, create(CreateGroupRequestSchema, { group: { name: "x".repeat(60_000) } }))),
      true,
    );
    expect(json.length).toBeLessThan(2048);
    const session = http2.connect(open.url);
    try {
      for (const authorization of [undefined, "Bearer not-a-token"]) {
        const auth = authorization ? { authorization } : {};
        const connect = await heldBody(
          session,
          { ":path": CREATE_GROUP, "content-type": "application/json", "content-encoding": "gzip", ...auth },
          json,
        );
        expect(connect.bodySent).toBe(false);
        expect(connect.headers[":status"]).toBe(401);
        const grpc = await heldBody(
          session,
          { ":path": CREATE_GROUP, "content-type": "application/grpc", "grpc-encoding": "gzip", te: "trailers", ...auth },
          proto,
        );
        expect(grpc.bodySent).toBe(false);
        expect(grpc.trailers["grpc-status"]).toBe("16");
        const grpcWeb = await heldBody(
          session,
          { ":path": CREATE_GROUP, "content-type": "application/grpc-web+proto", "grpc-encoding": "gzip", ...auth },
          proto,
        );
        expect(grpcWeb.bodySent).toBe(false);
        expect(grpcWeb.headers["grpc-status"]).toBe("16");
      }
    } finally {
      session.close();
    }
  });

  it("refuses an anonymous small uncompressed body before any of it is sent, on REST, Connect, gRPC and gRPC-Web", async ({ expect }) => {
    const proto = envelope(toBinary(CreateGroupRequestSchema, create(CreateGroupRequestSchema, { group: { name: "small" } })), false);
    const session = http2.connect(open.url);
    try {
      const rest = await heldBody(session, { ":path": "/iam/v2beta1/groups", "content-type": "application/json" }, MANY_EMPTY_JSON);
      expect(rest.bodySent).toBe(false);
      expect(rest.headers[":status"]).toBe(401);
      const connect = await heldBody(
        session,
        { ":path": CREATE_GROUP, "content-type": "application/json" },
        Buffer.from('{"group":{"name":"small"}}'),
      );
      expect(connect.bodySent).toBe(false);
      expect(connect.headers[":status"]).toBe(401);
      const grpc = await heldBody(session, { ":path": CREATE_GROUP, "content-type": "application/grpc", te: "trailers" }, proto);
      expect(grpc.bodySent).toBe(false);
      expect(grpc.trailers["grpc-status"]).toBe("16");
      const grpcWeb = await heldBody(session, { ":path": CREATE_GROUP, "content-type": "application/grpc-web+proto" }, proto);
      expect(grpcWeb.bodySent).toBe(false);
      expect(grpcWeb.headers["grpc-status"]).toBe("16");
    } finally {
      session.close();
    }
  });

  it("refuses an anonymous gzip-compressed small Connect body over HTTP/1.1 before it is sent", async ({ expect }) => {
    const json = gzipSync(MANY_EMPTY_JSON);
    const answer = await new Promise<{ text: string; bodySent: boolean }>((resolve, reject) => {
      let sent = false;
      let bodySent = false;
      let text = "";
      const socket = net.connect(open.app.port, "127.0.0.1", () => {
        socket.write(
          `POST ${CREATE_GROUP} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\ncontent-length: ${json.length}\r\n\r\n`,
        );
      });
      // Held back; sent after a while only if no answer came, so that the test ends either way.
      const sendLate = setTimeout(() => {
        sent = true;
        socket.write(json);
      }, 2_000);
      socket.once("data", () => {
        clearTimeout(sendLate);
        bodySent = sent;
      });
      socket.on("data", (d: Buffer) => (text += d.toString()));
      socket.on("close", () => resolve({ text, bodySent }));
      socket.on("error", reject);
      setTimeout(() => socket.destroy(), 10_000);
    });
    expect(answer.bodySent).toBe(false);
    expect(answer.text).toMatch(/^HTTP\/1\.1 401/);
  });

  it("refuses an anonymous Connect streaming call before its body is sent, as connect-es would: HTTP 200 and an end-stream error", async ({
    expect,
  }) => {
    const request = Buffer.from("{}");
    const body = Buffer.concat([Buffer.from([0, 0, 0, 0, request.length]), request]);
    const session = http2.connect(open.url);
    try {
      const stream = session.request(
        {
          ":method": "POST",
          ":path": "/platform.events.v2beta1.EventsService/WatchEvents",
          "content-type": "application/connect+json",
          "connect-protocol-version": "1",
          "content-length": String(body.length),
        },
        { endStream: false },
      );
      const answer = await new Promise<{ headers: http2.IncomingHttpHeaders; text: Buffer; bodySent: boolean }>((resolve, reject) => {
        let sent = false;
        let bodySent = false;
        let headers: http2.IncomingHttpHeaders = {};
        const chunks: Buffer[] = [];
        const sendLate = setTimeout(() => {
          sent = true;
          stream.end(body);
        }, 2_000);
        stream.on("response", (h) => {
          clearTimeout(sendLate);
          bodySent = sent;
          headers = h;
        });
        stream.on("data", (d: Buffer) => chunks.push(d));
        stream.on("close", () => resolve({ headers, text: Buffer.concat(chunks), bodySent }));
        stream.on("error", reject);
      });
      expect(answer.bodySent).toBe(false);
      expect(answer.headers[":status"]).toBe(200);
      expect(answer.headers["content-type"]).toBe("application/connect+json");
      // One envelope, flagged end-stream (2), carrying the error.
      expect(answer.text[0]).toBe(2);
      const end = JSON.parse(answer.text.subarray(5, 5 + answer.text.readUInt32BE(1)).toString()) as {
        error: { code: string; details?: unknown[] };
      };
      expect(end.error.code).toBe("unauthenticated");
      expect(end.error.details?.length).toBeGreaterThan(0);
    } finally {
      session.close();
    }
  });

  it("reads and decompresses the body of a caller with a valid token: gzip Connect and gRPC creates", async ({ expect }) => {
    const session = http2.connect(open.url);
    const auth = { authorization: `Bearer ${open.token}` };
    try {
      const connect = await send(
        session,
        { ":path": CREATE_GROUP, "content-type": "application/json", "content-encoding": "gzip", ...auth },
        gzipSync('{"group":{"name":"gzip connect"}}'),
      );
      expect(connect.headers[":status"]).toBe(200);
      expect(connect.text).toContain('"name":"gzip connect"');
      const message = toBinary(CreateGroupRequestSchema, create(CreateGroupRequestSchema, { group: { name: "gzip grpc" } }));
      const grpc = await send(
        session,
        { ":path": CREATE_GROUP, "content-type": "application/grpc", "grpc-encoding": "gzip", te: "trailers", ...auth },
        envelope(gzipSync(message), true),
      );
      expect(grpc.trailers["grpc-status"]).toBe("0");
      expect(grpc.text).toContain("gzip grpc");
    } finally {
      session.close();
    }
  });

  it("stops decompressing a valid caller's body at the 1 MiB message limit: RESOURCE_EXHAUSTED", async ({ expect }) => {
    // 2 MiB of spaces after the JSON object, a few KiB once gzipped.
    const bomb = gzipSync(Buffer.concat([Buffer.from('{"group":{"name":"bomb"}}'), Buffer.alloc(2 * 1024 * 1024, 0x20)]));
    expect(bomb.length).toBeLessThan(16 * 1024);
    const session = http2.connect(open.url);
    try {
      const connect = await send(
        session,
        { ":path": CREATE_GROUP, "content-type": "application/json", "content-encoding": "gzip", authorization: `Bearer ${open.token}` },
        bomb,
      );
      expect(connect.headers[":status"]).toBe(429);
      expect(JSON.parse(connect.text)).toMatchObject({ code: "resource_exhausted" });
    } finally {
      session.close();
    }
  });

  it("refuses an anonymous HTTP/1.1 upload that declares a large length before it is sent, and closes the connection", async ({
    expect,
  }) => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(open.app.port, "127.0.0.1", () => {
        socket.write(
          `POST /iam/v2beta1/groups HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: ${MIB.length}\r\n\r\n`,
        );
      });
      let text = "";
      socket.on("data", (d: Buffer) => (text += d.toString()));
      socket.on("close", () => resolve(text));
      socket.on("error", reject);
      setTimeout(() => socket.destroy(), 10_000);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 401/);
    expect(answer.toLowerCase()).toContain("connection: close");
  });

  it("reads the body of a caller with a valid token, whatever its length: an HTTP/2 REST create without content-length", async ({
    expect,
  }) => {
    const session = http2.connect(open.url);
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": "/iam/v2beta1/groups",
          "content-type": "application/json",
          authorization: `Bearer ${open.token}`,
        });
        stream.on("response", (h) => resolve(Number(h[":status"])));
        stream.on("error", reject);
        stream.resume();
        stream.end(JSON.stringify({ name: "read after authentication" }));
      });
      expect(status).toBe(200);
    } finally {
      session.close();
    }
  });

  it("still answers an anonymous gRPC health check, whose body has no declared length", async ({ expect }) => {
    const session = http2.connect(open.url);
    try {
      const headers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
        const stream = session.request({
          ":method": "POST",
          ":path": "/grpc.health.v1.Health/Check",
          "content-type": "application/grpc",
          te: "trailers",
        });
        stream.on("trailers", (t) => resolve(t));
        stream.on("error", reject);
        stream.resume();
        // An empty HealthCheckRequest: one uncompressed envelope of length 0.
        stream.end(Buffer.from([0, 0, 0, 0, 0]));
      });
      expect(headers["grpc-status"]).toBe("0");
    } finally {
      session.close();
    }
  });
});
