import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import type { UniversalHandlerOptions } from "@connectrpc/connect/protocol";
import {
  Health,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as Wire,
  type HealthCheckResponse,
} from "../../../gen/health/v1/health_pb.js";
import { linkSignals, sleep, unlessAborted, untilAborted } from "./abort.js";
import { SharedStatusReader, type HealthSource, type ServingStatus } from "./health-source.js";

/**
 * Registers grpc.health.v1.Health (https://github.com/grpc/grpc/blob/master/doc/health-checking.md).
 *
 * Every name in `serviceNames`, and "" for the server as a whole, has the
 * status `source` reports; once `shutdown` aborts they are all NOT_SERVING,
 * so that load balancers stop routing here while in-flight calls drain.
 */
export function registerHealth(
  router: ConnectRouter,
  source: HealthSource,
  serviceNames: string[],
  shutdown: AbortSignal,
  pollMs = 1000,
  options?: Partial<UniversalHandlerOptions>,
): void {
  const known = new Set(["", ...serviceNames]);
  // Half the poll interval: a watcher then sees a change at most 1.5 polls late.
  const reader = new SharedStatusReader(source, pollMs / 2);
  const current = async (fresh: boolean): Promise<ServingStatus> => {
    if (shutdown.aborted) {
      return "NOT_SERVING";
    }
    return fresh ? reader.readFresh() : reader.read();
  };

  router.service(
    Health,
    {
      async check(request) {
        if (!known.has(request.service)) {
          throw new ConnectError(`unknown service: ${request.service}`, Code.NotFound);
        }
        return response(toWire(await current(true)));
      },

      async list() {
        const status = response(toWire(await current(true)));
        return { statuses: Object.fromEntries([...known].map((name) => [name, status])) };
      },

      async *watch(request, context) {
        const { signal, dispose } = linkSignals(context.signal, shutdown);
        try {
          if (!known.has(request.service)) {
            // The protocol keeps the call open for a service that may appear
            // later; ours are fixed at start-up, so it stays unknown until the
            // call ends.
            yield response(Wire.SERVICE_UNKNOWN);
            await untilAborted(signal);
            return;
          }
          let last: Wire | undefined;
          while (!signal.aborted) {
            const status = await unlessAborted(current(false), signal);
            if (status !== undefined && toWire(status) !== last) {
              last = toWire(status);
              yield response(last);
            }
            await sleep(pollMs, signal);
          }
          if (shutdown.aborted && !context.signal.aborted && last !== Wire.NOT_SERVING) {
            // Tell the watcher we are going away before the stream ends, as
            // grpc-go's health server does on Shutdown.
            yield response(Wire.NOT_SERVING);
          }
        } finally {
          dispose();
        }
      },
    },
    options,
  );
}

function toWire(status: ServingStatus): Wire {
  return status === "SERVING" ? Wire.SERVING : Wire.NOT_SERVING;
}

function response(status: Wire): HealthCheckResponse {
  return create(HealthCheckResponseSchema, { status });
}
