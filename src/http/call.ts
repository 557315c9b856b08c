import type { IncomingHttpHeaders } from "node:http";
import type { DescMethodUnary, Message } from "@bufbuild/protobuf";
import type { ContextValues } from "@connectrpc/connect";

// The call contract between the entry points that decode a unary call themselves (REST, the
// direct Connect JSON and gRPC paths in src/server/rpc/) and the call pipeline that runs it
// (src/server/call-pipeline.ts). It lives below both, so neither imports the other.

/** One unary call, its message already decoded: what an entry point hands the pipeline. */
export interface UnaryCall {
  method: DescMethodUnary;
  message: Message;
  header: CallHeader;
  /** The HTTP method and URL, for the handler context. */
  requestMethod: string;
  url: string;
  clientGone: ClientGone;
  /** Context values to start the call with (e.g. its access-log record); fresh ones when absent. */
  values?: ContextValues | undefined;
  /** The context's protocolName: "rest" when absent, "connect" or "grpc" for the direct RPC paths. */
  protocolName?: string;
  /** The caller's deadline (Connect's connect-timeout-ms): the context's timeoutMs() and signal. */
  timeoutMs?: number | undefined;
}

/** Runs a unary call behind every check of the call pipeline, and gives its answer. */
export type InvokeUnary = (call: UnaryCall) => Promise<Message>;

/**
 * Whether the HTTP client went away before its response. The AbortSignal is
 * made only when an implementation asks for it: a call that nobody aborts
 * (almost every one) costs no AbortController.
 */
export class ClientGone {
  private controller: AbortController | undefined;
  private fired = false;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.fired) this.controller.abort();
    }
    return this.controller.signal;
  }

  get gone(): boolean {
    return this.fired;
  }

  fire(): void {
    this.fired = true;
    this.controller?.abort();
  }

  /**
   * Fires when `res` closes before its answer ended; `release()` stops
   * watching once the answer is decided.
   */
  static watch(res: WatchedResponse): ClientGone & { release(): void } {
    return new WatchedClientGone(res);
  }
}

type WatchedResponse = { writableEnded: boolean; on(event: "close", f: () => void): unknown; off(event: "close", f: () => void): unknown };

// `on` rather than `once`: release() always removes the listener, and `once` wraps it in two more objects per call.
class WatchedClientGone extends ClientGone {
  private readonly onClose = (): void => {
    if (!this.res.writableEnded) this.fire();
  };

  constructor(private readonly res: WatchedResponse) {
    super();
    res.on("close", this.onClose);
  }

  release(): void {
    this.res.off("close", this.onClose);
  }
}

// A header value that fetch Headers keep as it is: no surrounding whitespace
// to strip, nothing they refuse (NUL, CR, LF, beyond latin-1).
const PLAIN_HEADER_VALUE = /^[\x21-\x7e\x80-\xff](?:[\t\x20-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?$/;

/**
 * A call's request headers. `authorization` is what
 * `Headers.get("authorization")` gives; the fetch Headers themselves are made
 * only when something reads `headers` (context.requestHeader): no
 * implementation on the hot path does, and building them costs microseconds
 * per call.
 */
export class CallHeader {
  readonly authorization: string | null;
  private made: Headers | undefined;

  constructor(
    private readonly node: IncomingHttpHeaders,
    /** Node's headers as the Headers the implementation sees (all of them, or the forwarded few). */
    private readonly convert: (node: IncomingHttpHeaders) => Headers,
  ) {
    const value = node.authorization;
    if (value === undefined) this.authorization = null;
    else if (typeof value === "string" && PLAIN_HEADER_VALUE.test(value)) this.authorization = value;
    // Anything Headers would normalise or refuse: ask them.
    else this.authorization = this.headers.get("authorization");
  }

  get headers(): Headers {
    return (this.made ??= this.convert(this.node));
  }
}
