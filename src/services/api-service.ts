import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import type { ServiceContext } from "./context.js";

/** A service's implementation, built once: registered on the Connect router and called directly by REST. */
export interface BoundService {
  service: DescService;
  impl: object;
  register(router: ConnectRouter): void;
}

/** One API service: its descriptor and how to build its implementation. */
export interface ApiService {
  service: DescService;
  /** Builds the implementation once. */
  implement(ctx: ServiceContext): BoundService;
}

export function apiService<S extends DescService>(service: S, implement: (ctx: ServiceContext) => ServiceImpl<S>): ApiService {
  return {
    service,
    implement(ctx) {
      const impl = implement(ctx);
      return { service, impl, register: (router) => router.service(service, impl) };
    },
  };
}
