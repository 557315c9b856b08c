import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import type { ServiceContext } from "./context.js";

/** One API service: its descriptor and how to build its implementation. */
export interface ApiService {
  service: DescService;
  /** Builds the implementation once; the result registers it on any router. */
  implement(ctx: ServiceContext): (router: ConnectRouter) => void;
}

export function apiService<S extends DescService>(service: S, implement: (ctx: ServiceContext) => ServiceImpl<S>): ApiService {
  return {
    service,
    implement(ctx) {
      const impl = implement(ctx);
      return (router) => router.service(service, impl);
    },
  };
}
