import { randomUUID } from "node:crypto";
import { createContextKey, createContextValues, type ContextValues } from "@connectrpc/connect";
import type { Logger } from "pino";
import { clientAddressKey } from "../caller/index.js";
import type { NodeRequest as Req, NodeResponse as Res } from "../http/types.js";

/** What the call pipeline adds to a request's access-log line. */
export interface AccessRecord {
  requestId: string;
  /** `package.Service/Method`, when the request reached an RPC (any protocol). */
  rpc: string;
  /** The caller's identity uid, once authenticated. */
  identity: string;
  /** The RPC's status code (0 for OK), which gRPC does not show in the HTTP status. */
  code: number | undefined;
}

export const accessRecordKey = createContextKey<AccessRecord | undefined>(undefined, { description: "access log record" });

// A caller's x-request-id is echoed when it is a sane token; anything else gets a fresh one.
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * One structured line per request, whatever its protocol (docs/operations.md,
 * "Health, metrics and logs"): method, path, HTTP status, RPC and its code, identity,
 * duration and request id. Never the query string, a header value or a body.
 */
// Where a request keeps its record: a property, not a WeakMap entry, whose
// bookkeeping the collector pays for on every request.
const RECORD = Symbol("access record");
type Recorded = Req & { [RECORD]?: AccessRecord };

export class AccessLog {
  private readonly log: Logger;

  constructor(
    log: Logger,
    /** Also told of every finished request (metrics). */
    private readonly onFinished: (record: AccessRecord, status: number, seconds: number) => void = () => {},
  ) {
    // Its lines hold only the fields above, none secret: the server logger's
    // redaction (several µs a line) is not needed on the hottest log there is.
    this.log = log.child({}, { redact: { paths: [] } });
  }

  /** Starts the record of `req` (echoing or making its request id) and logs it when the response closes. */
  begin(req: Req, res: Res): void {
    const given = req.headers["x-request-id"];
    const requestId = typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    res.setHeader("x-request-id", requestId);
    const record: AccessRecord = { requestId, rpc: "", identity: "", code: undefined };
    (req as Recorded)[RECORD] = record;
    const started = performance.now();
    res.once("close", () => {
      const elapsed = performance.now() - started;
      this.onFinished(record, res.statusCode, elapsed / 1000);
      const url = req.url ?? "";
      const q = url.indexOf("?");
      // Built field by field, in the line's order, rather than spread from conditional objects.
      const line: Record<string, unknown> = {
        requestId,
        method: req.method,
        path: q === -1 ? url : url.slice(0, q),
        status: res.statusCode,
      };
      if (record.rpc) {
        line["rpc"] = record.rpc;
        line["code"] = record.code;
      }
      if (record.identity) line["identity"] = record.identity;
      line["durationMs"] = Math.round(elapsed * 100) / 100;
      this.log.info(line, "request");
    });
  }

  /** Context values for a call of `req`, carrying its record to the pipeline. */
  contextValues(req: Req): ContextValues {
    const values = createContextValues();
    values.set(clientAddressKey, req.socket.remoteAddress);
    const record = (req as Recorded)[RECORD];
    if (record) values.set(accessRecordKey, record);
    return values;
  }
}
