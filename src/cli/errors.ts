// Every failure of platformctl becomes one line on stderr and an exit code
// per class of error (docs/cli.md, "Errors and exit codes").

export const EXIT = {
  ok: 0,
  unexpected: 1,
  /** Bad usage or INVALID_ARGUMENT / OUT_OF_RANGE. */
  usage: 2,
  notFound: 3,
  /** UNAUTHENTICATED, PERMISSION_DENIED, a failed or timed-out login. */
  auth: 4,
  /** FAILED_PRECONDITION, ALREADY_EXISTS, ABORTED. */
  conflict: 5,
  /** UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, the API unreachable. */
  unavailable: 6,
} as const;

/** An error whose message is already the one line to print. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** google.rpc.Status as REST renders it. */
export interface RestStatus {
  code: number;
  message: string;
  details?: unknown[];
}

// google.rpc.Code names by number.
const CODE_NAMES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
];

const EXIT_BY_CODE: Record<number, number> = {
  3: EXIT.usage,
  11: EXIT.usage,
  5: EXIT.notFound,
  7: EXIT.auth,
  16: EXIT.auth,
  6: EXIT.conflict,
  9: EXIT.conflict,
  10: EXIT.conflict,
  4: EXIT.unavailable,
  8: EXIT.unavailable,
  14: EXIT.unavailable,
};

// The standard HTTP → gRPC mapping, for error bodies that are not a Status (a proxy's 502).
const CODE_BY_HTTP: Record<number, number> = { 400: 3, 401: 16, 403: 7, 404: 5, 409: 6, 429: 8, 501: 12, 502: 14, 503: 14, 504: 4 };

export function codeFromHttpStatus(status: number): number {
  return CODE_BY_HTTP[status] ?? 2;
}

export function exitCodeForStatus(code: number): number {
  return EXIT_BY_CODE[code] ?? EXIT.unexpected;
}

/** `INVALID_ARGUMENT` → `invalid argument`. */
function humanCode(code: number): string {
  return (CODE_NAMES[code] ?? `code ${code}`).toLowerCase().replace(/_/g, " ");
}

export interface Violation {
  field?: string;
  type?: string;
  description?: string;
}

export function detailsOfType(status: RestStatus, type: "google.rpc.BadRequest" | "google.rpc.PreconditionFailure"): Violation[] {
  const out: Violation[] = [];
  for (const d of status.details ?? []) {
    if (typeof d !== "object" || d === null) continue;
    const detail = d as Record<string, unknown>;
    if (detail["@type"] !== `type.googleapis.com/${type}`) continue;
    const list = detail[type === "google.rpc.BadRequest" ? "fieldViolations" : "violations"];
    if (Array.isArray(list)) out.push(...(list as Violation[]));
  }
  return out;
}

// The server prefixes messages with the code ("Invalid argument: …",
// "Precondition failed: …"); the line names the code once.
function stripCodePrefix(code: number, message: string): string {
  const m = /^([A-Za-z ]+): (.*)$/s.exec(message);
  if (!m) return message;
  const words = (s: string) => s.toLowerCase().split(" ").sort().join(" ");
  return words(m[1]!) === words(humanCode(code)) ? m[2]! : message;
}

/** One line naming the class of error and the violated field or precondition. */
export function statusLine(status: RestStatus): string {
  const human = humanCode(status.code);
  const fields = detailsOfType(status, "google.rpc.BadRequest");
  if (fields.length > 0) {
    // A violation of the whole request (or document) has no field to name.
    return `${human}: ${fields.map((v) => (v.field ? `${v.field}: ${v.description ?? ""}` : (v.description ?? ""))).join("; ")}`;
  }
  const preconditions = detailsOfType(status, "google.rpc.PreconditionFailure");
  if (preconditions.length > 0) {
    const types = [...new Set(preconditions.map((v) => v.type).filter(Boolean))].join(", ");
    return `${human}${types ? ` (${types})` : ""}: ${preconditions.map((v) => v.description ?? "").join("; ")}`;
  }
  const text = stripCodePrefix(status.code, status.message);
  const line = text && text.toLowerCase() !== human && text.toLowerCase() !== `${human} error` ? `${human}: ${text}` : human;
  return status.code === 16 ? `${line} (run platformctl auth login)` : line;
}

/** A REST call that answered with a google.rpc.Status. */
export class ApiError extends CliError {
  constructor(readonly status: RestStatus) {
    super(statusLine(status), exitCodeForStatus(status.code));
  }
}

/** The line and exit code for anything thrown while running a command. */
export function describeError(err: unknown): { line: string; exitCode: number } {
  if (err instanceof CliError) return { line: err.message, exitCode: err.exitCode };
  const message = err instanceof Error ? err.message : String(err);
  return { line: `unexpected: ${message}`, exitCode: EXIT.unexpected };
}
