import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";

export interface RunningServer {
  readonly port: number;
  /** "127.0.0.1:<port>", as grpc-js wants it. */
  readonly address: string;
  /** "http://127.0.0.1:<port>", as buf curl wants it. */
  readonly url: string;
  /** Closes the listener and every open session; resolves within about a second. */
  close(): Promise<void>;
}

/** Starts an HTTP/2 cleartext (prior knowledge) server on 127.0.0.1 and a free port. */
export async function startH2cServer(routes: (router: ConnectRouter) => void): Promise<RunningServer> {
  const server = http2.createServer(connectNodeAdapter({ routes }));
  // Clients (grpc-js) keep connections open; closing the listener alone would
  // wait for them, so sessions are tracked and destroyed on close.
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session: http2.ServerHttp2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    address: `127.0.0.1:${port}`,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        for (const session of sessions) {
          session.destroy();
        }
      }),
  };
}
