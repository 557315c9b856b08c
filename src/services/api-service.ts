import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import type { ServiceContext } from "./context.js";
import type { AnyResource } from "./resource-definition.js";

/** A service's implementation, built once: registered on the Connect router and called directly by REST. */
export interface BoundService {
  service: DescService;
  impl: object;
  register(router: ConnectRouter): void;
}

/** One API service: its descriptor, the resource its methods serve (if any), and how to build its implementation. */
export interface ApiService<S extends DescService = DescService> {
  service: S;
  /** The resource the service's derived methods read and write (its group content, its example). */
  resource?: AnyResource | undefined;
  /** The implementation, built from the services' context. */
  build(ctx: ServiceContext): ServiceImpl<S>;
  /** Builds the implementation once, ready to register. */
  implement(ctx: ServiceContext): BoundService;
}

export function apiService<S extends DescService>(
  service: S,
  build: (ctx: ServiceContext) => ServiceImpl<S>,
  resource?: AnyResource,
): ApiService<S> {
  return {
    service,
    resource,
    build,
    implement(ctx) {
      const impl = build(ctx);
      return { service, impl, register: (router) => router.service(service, impl) };
    },
  };
}
