import { create, isMessage, type DescMethod, type DescService, type Message } from "@bufbuild/protobuf";
import { createContextValues, type ContextValues, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { createDeadlineSignal } from "@connectrpc/connect/protocol";
import { authenticate, type TokenService } from "../auth/index.js";
import { isPublicService } from "../caller/index.js";
import type { Authorizer } from "../authz/index.js";
import { checkRequest, declaredEventType, withoutInputOnly } from "../descriptors/index.js";
import { errorDomainForService, toConnectError, withErrorInfo } from "../errors/index.js";
import type { InvokeUnary, NodeRequest, UnaryCall } from "../http/index.js";
import type { BoundService } from "../services/index.js";
import { accessRecordKey } from "./access-log.js";

/**
 * The most of a request body the public services (health, reflection), which anyone may call,
 * read per message (docs/security.md, "Connections"). Every other service reads no body byte
 * before the bearer token in the request's headers is valid (CallPipeline.admitBody).
 */
export const ANONYMOUS_BODY_BYTES = 64 * 1024;

/** One call, as every entry point sees it. `message` is undefined for streaming requests. */
export interface PipelineCall {
  service: DescService;
  method: DescMethod;
  message: unknown;
  /** The Authorization request header (null when absent), as fetch Headers give it. */
  authorization: string | null;
  values: ContextValues;
}

export interface CallPipelineOptions {
  tokens: TokenService;
  /** Audiences an API token may carry (the API base URL and the registry audience). */
  audiences: string[];
  authorizer: Authorizer;
  /** ErrorInfo domains are `<area>.<serviceDomain>`. */
  serviceDomain: string;
  /** Causes of INTERNAL errors, for the log. */
  onInternalError: (cause: unknown) => void;
  /** After a write method succeeded (its events have committed): announce them (docs/design.md, "Events"). */
  afterWrite: () => void;
}

type UnaryFn = (request: Message, context: HandlerContext) => unknown;

/**
 * The context of a call made directly (REST, Connect JSON and plain gRPC unary
 * calls). What hardly any implementation reads is made on first use only:
 * the request's fetch Headers (see CallHeader), the response's (never sent by
 * these entry points) and the AbortSignal (see ClientGone).
 */
class DirectContext implements HandlerContext {
  private responseHeaders: Headers | undefined;
  private responseTrailers: Headers | undefined;
  /** When the caller's deadline passes (Date.now() clock), if it gave one. */
  private readonly deadline: number | undefined;
  private deadlineSignal: { signal: AbortSignal; cleanup: () => void } | undefined;
  readonly service: DescService;
  readonly values: ContextValues;

  constructor(
    private readonly call: UnaryCall,
    readonly protocolName: string,
    values: ContextValues,
  ) {
    this.service = call.method.parent;
    this.values = values;
    if (call.timeoutMs !== undefined) this.deadline = Date.now() + call.timeoutMs;
  }

  get method(): DescMethod {
    return this.call.method;
  }

  get requestMethod(): string {
    return this.call.requestMethod;
  }

  get url(): string {
    return this.call.url;
  }

  /** Aborted when the client goes away, or (as connect-es's) when the caller's deadline passes. */
  get signal(): AbortSignal {
    if (this.deadline === undefined) return this.call.clientGone.signal;
    this.deadlineSignal ??= createDeadlineSignal(this.deadline - Date.now());
    return AbortSignal.any([this.call.clientGone.signal, this.deadlineSignal.signal]);
  }

  get requestHeader(): Headers {
    return this.call.header.headers;
  }

  get responseHeader(): Headers {
    return (this.responseHeaders ??= new Headers());
  }

  get responseTrailer(): Headers {
    return (this.responseTrailers ??= new Headers());
  }

  timeoutMs(): number | undefined {
    return this.deadline === undefined ? undefined : this.deadline - Date.now();
  }

  /** The call is over: its deadline's timer, if any, stops. */
  done(): void {
    this.deadlineSignal?.cleanup();
  }
}

/**
 * The path every API call takes, whichever protocol it came by (docs/architecture.md, "The
 * pipeline (both kinds of call)"): authentication, the request check, authorization, the
 * implementation, and error shaping — each one function, shared by the Connect interceptor (gRPC,
 * gRPC-Web, Connect) and the direct entry points (REST, Connect JSON, plain gRPC), so no protocol
 * can skip a step.
 */
export class CallPipeline {
  private readonly domains = new Map<DescService, string>();
  private readonly unary = new Map<DescMethod, UnaryFn>();
  /** `package.Service/Method` per method: one string for the access log and the metrics' series lookup. */
  private readonly rpcNames = new Map<DescMethod, string>();

  constructor(
    private readonly opts: CallPipelineOptions,
    services: readonly BoundService[],
  ) {
    for (const { service, impl } of services) {
      for (const method of service.methods) {
        const fn = (impl as Record<string, unknown>)[method.localName];
        if (method.methodKind === "unary" && typeof fn === "function") this.unary.set(method, fn.bind(impl) as UnaryFn);
      }
    }
  }

  /** Whether `call` can run `method` (the API's unary methods, not health or reflection). */
  canCall(method: DescMethod): boolean {
    return this.unary.has(method);
  }

  /**
   * Authenticates a call of `method` from its headers, before any of its body is read, decompressed
   * or decoded, whatever its length or encoding: without a valid bearer token it is refused unread
   * (the rejection is the UNAUTHENTICATED error run() would give), so an anonymous caller costs the
   * server a header check, not a body's decoding (docs/security.md, "Connections"). Undefined for
   * the public services, which read small messages from anyone. run() authenticates again: the
   * token service's cache of verified tokens answers it, with no second signature check.
   * `values`: the call's context values, asked for only to record a refusal in its access-log line.
   */
  admitBody(method: DescMethod, req: NodeRequest, values?: () => ContextValues): Promise<void> | undefined {
    const service = method.parent;
    if (isPublicService(service.typeName)) return undefined;
    const authorization = req.headers.authorization;
    return authenticate(
      this.opts.tokens,
      this.opts.audiences,
      typeof authorization === "string" ? authorization : null,
      createContextValues(),
    ).then(
      () => undefined,
      (e: unknown) => {
        const err = withErrorInfo(toConnectError(e, this.opts.onInternalError), this.domainOf(service));
        const record = values?.().get(accessRecordKey);
        if (record) {
          record.rpc = this.rpcName(method);
          record.code = err.code;
        }
        throw err;
      },
    );
  }

  /** Runs `invoke` for `call` behind every check; anything thrown leaves as a ConnectError with ErrorInfo. */
  async run<T>(call: PipelineCall, invoke: () => Promise<T>): Promise<T> {
    const record = call.values.get(accessRecordKey);
    if (record) record.rpc = this.rpcName(call.method);
    try {
      if (!isPublicService(call.service.typeName)) {
        const principal = await authenticate(this.opts.tokens, this.opts.audiences, call.authorization, call.values);
        if (record) record.identity = principal.identityUid;
        if (call.message !== undefined) checkRequest(call.method, call.message as Record<string, unknown>);
      }
      const result = await this.opts.authorizer.authorize(call, invoke);
      if (record) record.code = 0;
      if (declaredEventType(call.method)) this.opts.afterWrite();
      return result;
    } catch (e) {
      const err = withErrorInfo(toConnectError(e, this.opts.onInternalError), this.domainOf(call.service));
      if (record) record.code = err.code;
      throw err;
    }
  }

  /** The pipeline for the Connect router (gRPC, gRPC-Web, Connect). */
  interceptor(): Interceptor {
    return (next) => async (req) => {
      const res = await this.run(
        {
          service: req.service,
          method: req.method,
          message: req.stream ? undefined : req.message,
          authorization: req.header.get("authorization"),
          values: req.contextValues,
        },
        () => next(req),
      );
      if (!res.stream) {
        // INPUT_ONLY fields (secrets, ttls) never leave, whatever the implementation returned.
        withoutInputOnly(req.method.output, res.message);
      }
      return res;
    };
  }

  /**
   * Calls a unary method's implementation directly with a message already
   * decoded (REST, and the direct Connect JSON and gRPC paths): no second
   * router, no serialisation round trip.
   */
  readonly call: InvokeUnary = async (call) => {
    const { method, message } = call;
    const fn = this.unary.get(method);
    const service = method.parent;
    const values = call.values ?? createContextValues();
    const result = await this.run({ service, method, message, authorization: call.header.authorization, values }, async () => {
      if (!fn) throw new Error(`${service.typeName}/${method.name} has no implementation`);
      const context = new DirectContext(call, call.protocolName ?? "rest", values);
      if (call.timeoutMs === undefined) return fn(message, context);
      try {
        return await fn(message, context);
      } finally {
        context.done();
      }
    });
    return withoutInputOnly(method.output, isMessage(result, method.output) ? result : create(method.output, result as never));
  };

  private rpcName(method: DescMethod): string {
    let name = this.rpcNames.get(method);
    if (name === undefined) {
      name = `${method.parent.typeName}/${method.name}`;
      this.rpcNames.set(method, name);
    }
    return name;
  }

  private domainOf(service: DescService): string {
    let domain = this.domains.get(service);
    if (domain === undefined) {
      domain = errorDomainForService(service.typeName, this.opts.serviceDomain);
      this.domains.set(service, domain);
    }
    return domain;
  }
}
