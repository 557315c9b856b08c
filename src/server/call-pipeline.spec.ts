import { create } from "@bufbuild/protobuf";
import { ConnectError, type HandlerContext } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  Health,
  HealthCheckRequestSchema,
  HealthCheckResponse_ServingStatus,
  HealthCheckResponseSchema,
} from "../../gen/health/v1/health_pb.js";
import type { TokenService } from "../auth/index.js";
import type { Authorizer } from "../authz/index.js";
import { CallHeader, ClientGone } from "../http/index.js";
import { CallPipeline } from "./call-pipeline.js";

/** A pipeline over one public service (no token needed), whose check hands its context to `seen`. */
function pipeline(seen: HandlerContext[]): CallPipeline {
  const impl = {
    check: (_req: unknown, context: HandlerContext) => {
      seen.push(context);
      return create(HealthCheckResponseSchema, { status: HealthCheckResponse_ServingStatus.SERVING });
    },
  };
  return new CallPipeline(
    {
      tokens: {} as TokenService,
      audiences: [],
      authorizer: { authorize: (_call: unknown, invoke: () => Promise<unknown>) => invoke() } as unknown as Authorizer,
      serviceDomain: "localhost",
      onInternalError: () => {},
      afterWrite: () => {},
    },
    [{ service: Health, impl, register: () => {} }],
  );
}

const check = (timeoutMs?: number) => ({
  method: Health.method.check,
  message: create(HealthCheckRequestSchema),
  header: new CallHeader({}, () => new Headers()),
  requestMethod: "POST",
  url: "/grpc.health.v1.Health/Check",
  clientGone: new ClientGone(),
  protocolName: "connect",
  timeoutMs,
});

describe("CallPipeline.call", () => {
  it("gives the implementation no deadline when the caller set none", async () => {
    const seen: HandlerContext[] = [];
    await pipeline(seen).call(check());
    expect(seen[0]!.timeoutMs()).toBeUndefined();
    expect(seen[0]!.protocolName).toBe("connect");
    expect(seen[0]!.signal.aborted).toBe(false);
  });

  it("gives the implementation the caller's deadline, and a signal aborted with DEADLINE_EXCEEDED when it passes", async () => {
    const seen: HandlerContext[] = [];
    await pipeline(seen).call(check(10_000));
    const remaining = seen[0]!.timeoutMs()!;
    expect(remaining).toBeGreaterThan(9_000);
    expect(remaining).toBeLessThanOrEqual(10_000);
    await pipeline(seen).call(check(0));
    const signal = seen[1]!.signal;
    expect(signal.aborted).toBe(true);
    expect(ConnectError.from(signal.reason).code).toBe(4);
  });
});
