import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/**
 * A webhook receiver on loopback: records every POST and answers what
 * `answer` says (200 by default; a status, or "hang" to never answer).
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  answer: (r: Received, n: number) => number | "hang" = () => 200;
  private readonly server: Server;
  private waiters: (() => void)[] = [];
  private readonly sockets = new Set<Socket>();
  /** Connections made to it so far. */
  connectionsMade = 0;

  private constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const r = { headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), at: Date.now() };
        this.received.push(r);
        const status = this.answer(r, this.received.length);
        for (const w of this.waiters.splice(0)) w();
        if (status === "hang") return;
        res.writeHead(status).end();
      });
    });
    // Connections stay open as long as the sender keeps them (Node's default closes them after 5 s
    // idle), so that a test sees what the sender does with them.
    this.server.keepAliveTimeout = 60_000;
    this.server.on("connection", (socket: Socket) => {
      this.connectionsMade++;
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
    });
  }

  /** Connections open now. */
  get openConnections(): number {
    return this.sockets.size;
  }

  static async start(): Promise<WebhookReceiver> {
    const r = new WebhookReceiver();
    await new Promise<void>((resolve) => r.server.listen(0, "127.0.0.1", resolve));
    return r;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  /** Resolves once `predicate` holds for what was received; rejects after `timeoutMs`. */
  async until(predicate: (received: Received[]) => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.received)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`the receiver did not get what was expected within ${timeoutMs} ms (got ${this.received.length})`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
