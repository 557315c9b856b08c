import type grpc from "@grpc/grpc-js";
import { afterAll, beforeAll } from "vitest";
import { grpcJsClient, grpcUnary } from "./clients.js";
import type { TestServer } from "./server.js";

/**
 * A @grpc/grpc-js client of one service for a describe block: opened in
 * beforeAll against the suite's server, closed in afterAll. `rpc` sends the
 * server's admin token; `failure` resolves with the error a call fails with.
 */
export function grpcSuite(server: () => TestServer, serviceName: string, protoFile: string) {
  let client: grpc.Client & Record<string, unknown>;
  beforeAll(() => {
    client = grpcJsClient(`127.0.0.1:${server().app.port}`, serviceName, protoFile);
  });
  afterAll(() => client?.close());
  return {
    rpc: <T>(method: string, req: unknown) => grpcUnary<T>(client, method, req, server().token),
    failure: (p: Promise<unknown>): Promise<grpc.ServiceError> =>
      p.then(
        () => Promise.reject(new Error("expected the call to fail")),
        (e: grpc.ServiceError) => e,
      ),
  };
}
