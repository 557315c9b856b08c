import { create, type DescService } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import type { UniversalHandlerOptions } from "@connectrpc/connect/protocol";
import * as v1 from "../../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { DescriptorIndex } from "./descriptor-index.js";
import { ReflectionSession } from "./reflection-session.js";

/**
 * Registers grpc.reflection.v1.ServerReflection and its predecessor
 * grpc.reflection.v1alpha.ServerReflection (grpcurl and older clients still
 * ask for v1alpha first or only).
 *
 * The index covers `services`, both reflection services, and every service
 * registered on `router`, the health service too although it is registered
 * after this call: it is built on the first reflection request (not at every
 * start, which it cost a few milliseconds), and the Node adapter runs all registrations
 * before it serves anything, so by then the router is complete.
 */
export function registerReflection(router: ConnectRouter, services: DescService[], options?: Partial<UniversalHandlerOptions>): void {
  let index: DescriptorIndex | undefined;
  const completeIndex = (): DescriptorIndex => {
    if (index) return index;
    // Kept only once whole: a descriptor that fails to index fails this request and the next, never
    // leaving later requests a partial index.
    const built = new DescriptorIndex();
    for (const service of [...services, v1.ServerReflection, v1alpha.ServerReflection]) {
      built.addService(service);
    }
    for (const handler of router.handlers) {
      if (!built.hasService(handler.service.typeName)) {
        built.addService(handler.service);
      }
    }
    return (index = built);
  };

  router.service(
    v1.ServerReflection,
    {
      async *serverReflectionInfo(requests) {
        const session = new ReflectionSession(completeIndex());
        for await (const request of requests) {
          yield create(v1.ServerReflectionResponseSchema, {
            // The spec asks the server to echo the host and the request so
            // that a client pipelining requests can match the answers.
            validHost: request.host,
            originalRequest: request,
            messageResponse: session.answer(request),
          });
        }
      },
    },
    options,
  );

  router.service(
    v1alpha.ServerReflection,
    {
      async *serverReflectionInfo(requests) {
        const session = new ReflectionSession(completeIndex());
        for await (const request of requests) {
          yield create(v1alpha.ServerReflectionResponseSchema, {
            validHost: request.host,
            originalRequest: request,
            messageResponse: session.answer(request),
          });
        }
      },
    },
    options,
  );
}
