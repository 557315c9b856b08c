// The token exchange's two front doors, one implementation behind them (docs/design.md, "Tokens
// and access"): `/sts/exchange` over HTTP (a query, or a form body as OAuth clients send it) and
// the SecurityTokenService RPC (gRPC and Connect). Each only reads its request into an
// ExchangeRequest and writes the answer; exchangeToken does every check, limit and event.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import {
  type ExchangeTokenRequest,
  type ExchangeTokenResponse,
  ExchangeTokenResponseSchema,
  SecurityTokenService,
} from "../../gen/platform/sts/v1/sts_pb.js";
import { clientAddressKey } from "../caller/index.js";
import { errorDomainForService, invalidArgument, withErrorInfo } from "../errors/index.js";
import { BodyTooLargeError, readBody, sendJson, type NodeRequest, type Route } from "../http/index.js";
import { bearerToken } from "./principal.js";
import { exchangeToken, type ExchangeRequest, type TokenExchangeDeps } from "./token-exchange.js";
import { API_TOKEN_TTL_SECONDS } from "./tokens.js";

/** How an exchange ended, for the metrics. */
export type ExchangeOutcome = "issued" | "invalid" | "limited" | "refused";

export interface ExchangeFrontDoorDeps {
  exchange: TokenExchangeDeps;
  onOutcome: (outcome: ExchangeOutcome) => void;
}

/** The most bytes of a form body or query string: an OIDC token is a few KiB. */
export const MAX_EXCHANGE_REQUEST_BYTES = 16 * 1024;

const FORM = "application/x-www-form-urlencoded";
// RFC 8693's values: a client that names them must be asking for this exchange.
const TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange";
const JWT_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt";
const SUBJECT_TOKEN_TYPES = [JWT_TOKEN_TYPE, "urn:ietf:params:oauth:token-type:id_token"];
/** Names of the audience asked for: ours, and RFC 8693's two (ours are URLs, so either fits). */
const AUDIENCE_PARAMS = ["aud", "audience", "resource"];
/** Parameters that may be given once. */
const SINGLE_PARAMS = ["identity", "subject_token", "subject_token_type", "grant_type"];
// C0 controls (NUL included) and DEL: no parameter of the exchange holds them.
const CONTROL = /[\u0000-\u001f\u007f]/;

async function counted(deps: ExchangeFrontDoorDeps, read: () => Promise<ExchangeRequest> | ExchangeRequest) {
  try {
    const minted = await exchangeToken(deps.exchange, await read());
    deps.onOutcome("issued");
    return minted;
  } catch (e) {
    const code = e instanceof ConnectError ? e.code : undefined;
    deps.onOutcome(code === Code.InvalidArgument ? "invalid" : code === Code.ResourceExhausted ? "limited" : "refused");
    throw e;
  }
}

/**
 * The parameters of an HTTP exchange: the query's, and for a POST with a body, the form's too
 * (the body must be a form). Unknown parameters are ignored, as OAuth's endpoints do.
 */
async function readParams(req: NodeRequest, url: URL): Promise<[string, string][]> {
  const raw = req.url ?? "";
  const q = raw.indexOf("?");
  if (q !== -1 && Buffer.byteLength(raw.slice(q + 1)) > MAX_EXCHANGE_REQUEST_BYTES) {
    throw invalidArgument("query", `is longer than ${MAX_EXCHANGE_REQUEST_BYTES} bytes`);
  }
  const params = [...url.searchParams];
  // The OIDC token is a credential: never in a URL, where logs and proxies keep it.
  if (url.searchParams.has("subject_token")) {
    throw invalidArgument("subject_token", "must not be in the URL: send it in a POST form body or as the Authorization header");
  }
  const declared = req.headers["content-length"];
  // HTTP/1.1 declares a body by its length or encoding; over HTTP/2 the length is optional and
  // a body is any stream that its headers did not end.
  const announced = declared !== undefined || req.headers["transfer-encoding"] !== undefined;
  const undeclared = !announced && "stream" in req && !req.stream.endAfterHeaders;
  if (req.method !== "POST" || declared === "0" || !(announced || undeclared)) return params;
  const type = String(req.headers["content-type"] ?? "")
    .split(";")[0]!
    .trim()
    .toLowerCase();
  const notForm = () => invalidArgument("content-type", `must be ${FORM} for a POST with a body, not "${type.slice(0, 100)}"`);
  // An announced body is refused unread; an HTTP/2 one without a length may turn out empty.
  if (announced && type !== FORM) throw notForm();
  let body: Uint8Array;
  try {
    body = await readBody(req, MAX_EXCHANGE_REQUEST_BYTES);
  } catch (e) {
    if (e instanceof BodyTooLargeError) throw invalidArgument("body", `is larger than ${MAX_EXCHANGE_REQUEST_BYTES} bytes`);
    throw e;
  }
  if (body.byteLength === 0) return params;
  if (type !== FORM) throw notForm();
  return [...params, ...new URLSearchParams(Buffer.from(body).toString("utf8"))];
}

/** The ExchangeRequest the parameters and headers of an HTTP exchange name. */
export async function httpExchangeRequest(req: NodeRequest, url: URL): Promise<ExchangeRequest> {
  const params = await readParams(req, url);
  const seen = new Set<string>();
  const audiences: string[] = [];
  for (const [key, value] of params) {
    const known = AUDIENCE_PARAMS.includes(key) || SINGLE_PARAMS.includes(key);
    if (known && CONTROL.test(value)) throw invalidArgument(key, "must not contain control characters (NUL included)");
    if (SINGLE_PARAMS.includes(key)) {
      if (seen.has(key)) throw invalidArgument(key, "is given more than once");
      seen.add(key);
    }
    if (AUDIENCE_PARAMS.includes(key)) audiences.push(value);
  }
  const get = (key: string) => params.find(([k]) => k === key)?.[1];
  const grant = get("grant_type");
  if (grant !== undefined && grant !== TOKEN_EXCHANGE_GRANT)
    throw invalidArgument("grant_type", `must be ${TOKEN_EXCHANGE_GRANT} when given`);
  const tokenType = get("subject_token_type");
  if (tokenType !== undefined && !SUBJECT_TOKEN_TYPES.includes(tokenType)) {
    throw invalidArgument("subject_token_type", `must be one of ${SUBJECT_TOKEN_TYPES.join(", ")} when given`);
  }
  const header = req.headers["authorization"];
  return {
    audiences,
    identityUid: get("identity") ?? "",
    oidcToken: oneToken(get("subject_token"), typeof header === "string" ? header : null),
    clientAddress: req.socket.remoteAddress,
  };
}

/** The OIDC token, given once: as subject_token, or as the bearer token of the Authorization header. */
function oneToken(subjectToken: string | undefined, authorization: string | null): string | undefined {
  const bearer = bearerToken(authorization);
  if (subjectToken && authorization) {
    throw invalidArgument("subject_token", "is given with an Authorization header: send the OIDC token once");
  }
  return subjectToken || bearer;
}

/**
 * `/sts/exchange`: GET with a query, or POST with a query or a form body. The answer is the
 * token and its expiry, with RFC 8693's names beside them so an OAuth client reads it as well.
 */
export function exchangeRoute(deps: ExchangeFrontDoorDeps, serviceDomain: string): Route {
  const errorDomain = errorDomainForService(SecurityTokenService.typeName, serviceDomain);
  return {
    methods: ["GET", "POST"],
    serve: async (req, res, url) => {
      let minted: Awaited<ReturnType<typeof exchangeToken>>;
      try {
        minted = await counted(deps, () => httpExchangeRequest(req, url));
      } catch (e) {
        // A body left unread is not drained: over HTTP/1.1 the connection closes after the answer.
        if (req.httpVersionMajor === 1 && !req.readableEnded) res.setHeader("connection", "close");
        // The RPC's domain, on this door too: one service, whichever way it is called.
        throw e instanceof ConnectError ? withErrorInfo(e, errorDomain) : e;
      }
      sendJson(
        res,
        200,
        {
          token: minted.token,
          expiry: minted.expiry.toISOString(),
          access_token: minted.token,
          issued_token_type: JWT_TOKEN_TYPE,
          token_type: "Bearer",
          expires_in: API_TOKEN_TTL_SECONDS,
        },
        { "cache-control": "no-store" },
      );
    },
  };
}

/** The SecurityTokenService's implementation: the same exchange, its token in the message or the metadata. */
export function exchangeRpc(deps: ExchangeFrontDoorDeps) {
  return {
    async exchangeToken(request: ExchangeTokenRequest, context: HandlerContext): Promise<ExchangeTokenResponse> {
      const minted = await counted(deps, () => ({
        audiences: request.audiences,
        identityUid: request.identity,
        oidcToken: oneToken(request.subjectToken, context.requestHeader.get("authorization")),
        clientAddress: context.values.get(clientAddressKey),
      }));
      return create(ExchangeTokenResponseSchema, {
        token: minted.token,
        expireTime: timestampFromDate(minted.expiry),
        audience: minted.audience,
      });
    },
  };
}
