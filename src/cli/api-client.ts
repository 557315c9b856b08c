import { ApiError, CliError, codeFromHttpStatus, EXIT, type RestStatus } from "./errors.js";

export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };
export type JsonObject = { [k: string]: JsonValue };

/** Query parameters; arrays repeat the parameter (uidp.ids=a&uidp.ids=b), undefined is left out. */
export type Query = Record<string, string | string[] | undefined>;

// Long enough for a large advisory import; a hung server still ends the command.
const REQUEST_TIMEOUT_MS = 300_000;

// fetch() wraps the socket error: its code (ECONNREFUSED), or the first of several addresses tried, or its message.
function networkCode(err: unknown): string | undefined {
  const cause = (err as { cause?: { code?: string; message?: string; errors?: { code?: string }[] } }).cause;
  return cause?.code ?? cause?.errors?.[0]?.code ?? cause?.message;
}

/** The one line for a request that never got an HTTP answer. */
export function unreachable(url: string, err: unknown): CliError {
  const code = networkCode(err);
  const why =
    code === "ECONNREFUSED"
      ? "connection refused (is the server running? choose another with --api or PLATFORM_API)"
      : code === "ENOTFOUND" || code === "EAI_AGAIN"
        ? "unknown host"
        : err instanceof Error && err.name === "TimeoutError"
          ? "timed out"
          : (code ?? (err instanceof Error ? err.message : String(err)));
  return new CliError(`cannot reach ${url}: ${why}`, EXIT.unavailable);
}

/** fetch() whose network failures are a CliError naming the URL's origin. */
export async function fetchOrFail(url: string, init: RequestInit = {}, timeoutMs = REQUEST_TIMEOUT_MS): Promise<Response> {
  try {
    return await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    throw unreachable(new URL(url).origin, e);
  }
}

/** The error of a non-2xx answer: its google.rpc.Status, or one made from the HTTP status. */
export async function errorOf(res: Response): Promise<ApiError> {
  const text = await res.text();
  try {
    const body = JSON.parse(text) as Partial<RestStatus>;
    if (typeof body.code === "number" && typeof body.message === "string") return new ApiError(body as RestStatus);
  } catch {
    // not a Status: described from the HTTP status below
  }
  return new ApiError({ code: codeFromHttpStatus(res.status), message: `HTTP ${res.status} ${res.statusText}`.trim() });
}

/** `a/b c` → `a/b%20c`: uids are multi-segment paths in the REST routes. */
export function uidPath(uid: string): string {
  return uid.split("/").map(encodeURIComponent).join("/");
}

/** The REST API with the caller's bearer token; answers are the REST JSON unchanged. */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly bearer: () => Promise<string>,
  ) {}

  async request(method: string, path: string, options: { query?: Query; body?: unknown; timeoutMs?: number } = {}): Promise<JsonObject> {
    const url = new URL(this.baseUrl + path);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) url.searchParams.append(key, v);
    }
    const headers: Record<string, string> = { authorization: `Bearer ${await this.bearer()}`, accept: "application/json" };
    if (options.body !== undefined) headers["content-type"] = "application/json";
    const res = await fetchOrFail(
      url.toString(),
      {
        method,
        headers,
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      },
      options.timeoutMs,
    );
    if (!res.ok) throw await errorOf(res);
    const text = await res.text();
    return text ? (JSON.parse(text) as JsonObject) : {};
  }
}
