import { status as GrpcStatus, type ClientReadableStream, type ServiceError } from "@grpc/grpc-js";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../../gen/platform/iam/v2beta1/groups_pb.js";
import { registerHealth, type HealthSource, type ServingStatus } from "./index.js";
import { HealthClient, type JsHealthResponse } from "../../../test/support/grpc/grpc-js-clients.js";
import { startH2cServer, type RunningServer } from "../../../test/support/grpc/h2c-server.js";

const GROUPS = "platform.iam.v2beta1.GroupsService";
const POLL_MS = 20;
const WAIT_MS = 3000;

/** A source the test flips by hand, counting how often it is asked. */
class FakeSource implements HealthSource {
  current: ServingStatus | Error = "SERVING";
  calls = 0;
  async status(): Promise<ServingStatus> {
    this.calls++;
    if (this.current instanceof Error) {
      throw this.current;
    }
    return this.current;
  }
}

/** Collects a Watch stream's messages and lets a test wait for the next ones. */
class WatchRecorder {
  readonly messages: string[] = [];
  ended: Promise<ServiceError | "ok">;

  constructor(readonly call: ClientReadableStream<JsHealthResponse>) {
    call.on("data", (res: JsHealthResponse) => this.messages.push(res.status));
    this.ended = new Promise((resolve) => {
      call.on("error", (err: ServiceError) => resolve(err));
      call.on("status", (s: { code: number }) => {
        if (s.code === GrpcStatus.OK) {
          resolve("ok");
        }
      });
    });
  }

  /** Waits until `count` messages arrived; fails after WAIT_MS. */
  async until(count: number): Promise<string[]> {
    const deadline = Date.now() + WAIT_MS;
    while (this.messages.length < count) {
      if (Date.now() > deadline) {
        throw new Error(`expected ${count} messages within ${WAIT_MS} ms, got ${JSON.stringify(this.messages)}`);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    return this.messages;
  }
}

function within<T>(promise: Promise<T>, ms = WAIT_MS): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not settled within ${ms} ms`)), ms).unref()),
  ]);
}

function pause(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

describe("grpc.health.v1.Health", () => {
  const source = new FakeSource();
  const shutdown = new AbortController();
  let server: RunningServer;
  let client: HealthClient;

  beforeAll(async () => {
    server = await startH2cServer((router) => {
      router.service(GroupsService, {});
      registerHealth(router, source, [GROUPS], shutdown.signal, POLL_MS);
    });
    client = new HealthClient(server.address);
  });

  afterEach(() => {
    source.current = "SERVING";
  });

  afterAll(async () => {
    client?.close();
    shutdown.abort();
    await server?.close();
  });

  it("reports SERVING for the server and for each registered service", async () => {
    expect(await client.check("")).toEqual({ status: "SERVING" });
    expect(await client.check(GROUPS)).toEqual({ status: "SERVING" });
  });

  it("reports NOT_SERVING when the source says so, or fails", async () => {
    source.current = "NOT_SERVING";
    expect(await client.check(GROUPS)).toEqual({ status: "NOT_SERVING" });
    source.current = new Error("database unreachable");
    expect(await client.check("")).toEqual({ status: "NOT_SERVING" });
  });

  it("answers Check for an unknown service with NOT_FOUND", async () => {
    await expect(client.check("no.such.Service")).rejects.toMatchObject({ code: GrpcStatus.NOT_FOUND });
  });

  it("lists every service", async () => {
    expect(await client.list()).toEqual({
      statuses: { "": { status: "SERVING" }, [GROUPS]: { status: "SERVING" } },
    });
  });

  it("streams the status on Watch, again at each change, and stops polling when the client cancels", async () => {
    const watch = new WatchRecorder(client.watch(GROUPS));
    expect(await watch.until(1)).toEqual(["SERVING"]);
    source.current = "NOT_SERVING";
    expect(await watch.until(2)).toEqual(["SERVING", "NOT_SERVING"]);
    // No news is no message: several polls pass without a repeat.
    await pause(POLL_MS * 5);
    expect(watch.messages).toHaveLength(2);
    source.current = "SERVING";
    expect(await watch.until(3)).toEqual(["SERVING", "NOT_SERVING", "SERVING"]);

    watch.call.cancel();
    expect(await within(watch.ended)).toMatchObject({ code: GrpcStatus.CANCELLED });
    // The server side noticed too: the source is no longer polled.
    await pause(POLL_MS * 3);
    const calls = source.calls;
    await pause(POLL_MS * 5);
    expect(source.calls).toBe(calls);
  });

  it("keeps Watch on an unknown service open with SERVICE_UNKNOWN", async () => {
    const watch = new WatchRecorder(client.watch("no.such.Service"));
    expect(await watch.until(1)).toEqual(["SERVICE_UNKNOWN"]);
    const ended = await Promise.race([watch.ended, pause(POLL_MS * 5).then(() => "open")]);
    expect(ended).toBe("open");
    watch.call.cancel();
    await within(watch.ended);
  });
});

describe("grpc.health.v1.Health at shutdown", () => {
  it("tells watchers NOT_SERVING, ends their streams, and answers NOT_SERVING afterwards", async () => {
    const shutdown = new AbortController();
    const server = await startH2cServer((router) => {
      registerHealth(router, new FakeSource(), [], shutdown.signal, POLL_MS);
    });
    const client = new HealthClient(server.address);
    try {
      const watch = new WatchRecorder(client.watch(""));
      expect(await watch.until(1)).toEqual(["SERVING"]);
      shutdown.abort();
      expect(await within(watch.ended)).toBe("ok");
      expect(watch.messages).toEqual(["SERVING", "NOT_SERVING"]);
      expect(await client.check("")).toEqual({ status: "NOT_SERVING" });
    } finally {
      client.close();
      await server.close();
    }
  });
});
