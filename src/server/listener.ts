import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { Duplex } from "node:stream";
import type { NodeRequest, NodeResponse } from "../http/types.js";

export type RequestHandler = (req: NodeRequest, res: NodeResponse) => void;

export interface ListenOptions {
  host: string;
  port: number;
  tls?: { cert: Buffer; key: Buffer } | undefined;
  /**
   * headersMs: from connect (or the end of the previous request) to complete
   * headers, the first-bytes sniffing and the TLS handshake included;
   * requestMs: to receive a whole HTTP/1.1 request; idleMs: a connection or
   * HTTP/2 session with no traffic. Slow or idle clients cannot hold sockets.
   */
  timeouts: { headersMs: number; requestMs: number; idleMs: number };
}

/** A bound port that serves HTTP/1.1, h2c and (with TLS) h2/http1.1 by ALPN. */
export interface Listener {
  readonly port: number;
  /** Starts dispatching connections (they wait, paused, until then). */
  serve(handler: RequestHandler): void;
  /**
   * Stops accepting, lets in-flight requests finish for up to graceMs, then closes everything.
   * Resolves to whether they all finished (false: some were cut off).
   */
  close(graceMs: number): Promise<boolean>;
}

/**
 * Streams one HTTP/2 connection may have open at once, advertised in its SETTINGS (Node's default
 * is unlimited); why 100, and what it bounds before authentication: docs/security.md, "Connections".
 */
export const MAX_CONCURRENT_STREAMS = 100;

const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/**
 * Decides from a cleartext connection's first bytes whether it speaks HTTP/2
 * with prior knowledge (the client preface) or HTTP/1.1, then hands the
 * socket, bytes included, to the matching server.
 */
function sniff(socket: net.Socket, deadlineMs: number, onH2: (s: Duplex) => void, onH1: (s: Duplex) => void): void {
  let seen = Buffer.alloc(0);
  // A client that never sends enough bytes to tell is dropped.
  const deadline = setTimeout(() => socket.destroy(), deadlineMs);
  socket.once("close", () => clearTimeout(deadline));
  const onData = (chunk: Buffer) => {
    seen = Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, H2_PREFACE.length);
    const isPrefix = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
    if (isPrefix && n < H2_PREFACE.length) return; // need more bytes to tell
    clearTimeout(deadline);
    socket.off("data", onData);
    socket.pause();
    socket.unshift(seen);
    (isPrefix ? onH2 : onH1)(socket);
  };
  socket.on("data", onData);
  socket.resume();
}

export async function bind(opts: ListenOptions): Promise<Listener> {
  let dispatch: ((socket: net.Socket) => void) | undefined;
  const waiting: net.Socket[] = [];
  const sessions = new Set<http2.ServerHttp2Session>();
  let inflight = 0;
  let draining = false;
  let stopH1Timers = () => {};
  const idleWaiters: (() => void)[] = [];
  // Dropped at close: Node (20) does not clear a destroyed HTTP/2 session's idle timer, which
  // keeps the session, its server and so this handler (and all it reaches: the application, its
  // store) alive until the timer fires, idleMs later (docs/design.md, "Protocols and the one port").
  let served: RequestHandler | undefined;

  // Tracked here because the HTTP servers never listen themselves, so their
  // own connection tracking (closeAllConnections) never starts.
  const sockets = new Set<net.Socket>();
  const tcp = net.createServer({ pauseOnConnect: true, noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    if (dispatch) dispatch(socket);
    else waiting.push(socket);
  });
  await new Promise<void>((resolve, reject) => {
    tcp.once("error", reject);
    tcp.listen(opts.port, opts.host, () => resolve());
  });
  const address = tcp.address() as net.AddressInfo;

  return {
    port: address.port,
    serve(inner) {
      served = inner;
      // Counting requests ourselves: the HTTP servers never listen (sockets
      // are handed to them), so their close() cannot wait for in-flight work.
      const handler: RequestHandler = (req, res) => {
        inflight++;
        res.once("close", () => {
          inflight--;
          if (inflight === 0) for (const done of idleWaiters.splice(0)) done();
        });
        if (req.httpVersionMajor === 1) {
          if (draining) res.setHeader("connection", "close");
          else closeIfAnsweredEarly(req as http.IncomingMessage, res as http.ServerResponse);
        }
        if (served) served(req, res);
        else res.destroy();
      };
      const { headersMs, requestMs, idleMs } = opts.timeouts;
      const h1 = http.createServer(
        {
          keepAliveTimeout: 5_000,
          headersTimeout: headersMs,
          requestTimeout: requestMs,
          connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(headersMs / 2))),
        },
        handler,
      );
      // Node enforces headersTimeout/requestTimeout from a timer it starts on
      // "listening"; this server never listens (sockets are handed to it).
      h1.emit("listening");
      stopH1Timers = () => h1.close(() => {});
      const guard = (socket: net.Socket) => {
        socket.setTimeout(idleMs, () => socket.destroy());
        return socket;
      };
      if (opts.tls) {
        // ALPN picks h2 or http/1.1; the secure server speaks both.
        const h2 = http2.createSecureServer(
          {
            cert: opts.tls.cert,
            key: opts.tls.key,
            allowHTTP1: true,
            handshakeTimeout: headersMs,
            settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS },
          },
          handler,
        );
        h2.setTimeout(idleMs);
        h2.on("session", (s) => trackSession(sessions, s));
        dispatch = (socket) => h2.emit("connection", guard(socket));
      } else {
        const h2 = http2.createServer({ settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS } }, handler);
        // Sessions with no frames for idleMs are closed.
        h2.setTimeout(idleMs);
        h2.on("session", (s) => trackSession(sessions, s));
        dispatch = (socket) =>
          sniff(
            guard(socket),
            headersMs,
            (s) => h2.emit("connection", s),
            (s) => {
              h1.emit("connection", s);
              // http.Server does not resume a socket it did not accept itself.
              s.resume();
            },
          );
      }
      for (const s of waiting.splice(0)) dispatch(s);
    },
    async close(graceMs) {
      draining = true;
      const closed = new Promise<void>((resolve) => tcp.close(() => resolve()));
      // GOAWAY: no new streams; running ones finish.
      for (const s of sessions) s.close();
      const idle = inflight === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve));
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
      await Promise.race([idle, deadline]);
      clearTimeout(timer);
      const drained = inflight === 0;
      for (const s of sessions) s.destroy();
      for (const s of sockets) s.destroy();
      stopH1Timers();
      served = undefined;
      await closed;
      return drained;
    },
  };
}

/**
 * An HTTP/1.1 response that starts before its request's body has arrived
 * in full (too large, refused early) ends the connection: the handler may
 * stop reading, and the unread rest of the body must not be taken for the
 * next request on it.
 */
function closeIfAnsweredEarly(req: http.IncomingMessage, res: http.ServerResponse): void {
  const length = req.headers["content-length"];
  if (req.headers["transfer-encoding"] === undefined && (length === undefined || length === "0")) return; // no body
  const writeHead = res.writeHead;
  res.writeHead = function (this: http.ServerResponse, ...args: Parameters<typeof writeHead>) {
    if (!req.complete && !this.headersSent) this.setHeader("connection", "close");
    return writeHead.apply(this, args);
  } as typeof writeHead;
}

function trackSession(sessions: Set<http2.ServerHttp2Session>, session: http2.ServerHttp2Session): void {
  sessions.add(session);
  session.once("close", () => sessions.delete(session));
  session.on("error", () => session.destroy());
}
