import { randomBytes, timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { CliError, EXIT } from "./errors.js";
import { formatSeconds } from "./duration.js";
import type { ApiToken } from "./token-exchange.js";

/**
 * The CLI side of the browser login: a one-shot HTTP listener on 127.0.0.1
 * that the auth service redirects the browser to, at
 * /callback?state=…&token=…&expiry=… or /callback?state=…&error=…&error_description=….
 */
export interface LoopbackLogin {
  /** http://127.0.0.1:<port>/callback */
  redirectUri: string;
  /** Random; the callback must bring it back unchanged. */
  state: string;
  /** Settles with the token, or a CliError (refused login, timeout). */
  result: Promise<ApiToken>;
  /**
   * Handles a callback URL that did not reach the listener (pasted from a
   * browser on another machine); false when it is not one for this login.
   */
  deliver(callbackUrl: string): boolean;
  close(): void;
}

export interface LoginUrlOptions {
  invite?: string;
  org?: string;
}

/** {auth}/oauth?redirect=…&state=…[&invite=…][&org=…] */
export function loginUrl(authUrl: string, login: Pick<LoopbackLogin, "redirectUri" | "state">, options: LoginUrlOptions = {}): string {
  const params = new URLSearchParams({ redirect: login.redirectUri, state: login.state });
  if (options.invite) params.set("invite", options.invite);
  if (options.org) params.set("org", options.org);
  return `${authUrl}/oauth?${params}`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title: string, message: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>platformctl: ${escapeHtml(title)}</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 36rem; margin: 4rem auto;">
<h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></body></html>\n`;
}

function sameState(expected: string, given: string | null): boolean {
  if (given === null) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

interface Outcome {
  status: number;
  html: string;
  /** Whether this answer ends the login (a wrong state does not: it may be a stray request). */
  final: boolean;
}

export async function startLoopbackLogin(timeoutMs: number): Promise<LoopbackLogin> {
  const state = randomBytes(24).toString("base64url");
  let settle!: { resolve: (t: ApiToken) => void; reject: (e: CliError) => void };
  const result = new Promise<ApiToken>((resolve, reject) => (settle = { resolve, reject }));
  let done = false;
  let timer: NodeJS.Timeout | undefined;

  const finish = (outcome: { token: ApiToken } | { error: CliError }) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    if ("token" in outcome) settle.resolve(outcome.token);
    else settle.reject(outcome.error);
  };

  const handle = (params: URLSearchParams): Outcome => {
    if (!sameState(state, params.get("state"))) {
      return {
        status: 400,
        html: page("Login refused", "This answer does not belong to the login in progress (state mismatch)."),
        final: false,
      };
    }
    const error = params.get("error");
    if (error) {
      const description = params.get("error_description") ?? "";
      finish({ error: new CliError(`login failed: ${error}${description ? `: ${description}` : ""}`, EXIT.auth) });
      return {
        status: 200,
        html: page("Login failed", `${error}${description ? `: ${description}` : ""}. Return to the terminal.`),
        final: true,
      };
    }
    const token = params.get("token");
    const expiry = params.get("expiry");
    if (!token || !expiry || Number.isNaN(Date.parse(expiry))) {
      finish({ error: new CliError("login failed: the callback carried no token or no valid expiry", EXIT.auth) });
      return { status: 400, html: page("Login failed", "The answer carried no token. Return to the terminal."), final: true };
    }
    finish({ token: { token, expiry } });
    return { status: 200, html: page("You are logged in", "platformctl has its token. You can close this window."), final: true };
  };

  const close = () => {
    clearTimeout(timer);
    server.close();
    server.closeIdleConnections();
  };

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const outcome: Outcome =
      req.method === "GET" && url.pathname === "/callback"
        ? handle(url.searchParams)
        : { status: 404, html: page("Not found", "Nothing here."), final: false };
    res.writeHead(outcome.status, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", connection: "close" });
    // The listener lives exactly as long as the login: it closes once the final answer is out.
    if (outcome.final) res.on("finish", close);
    res.end(outcome.html);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
  timer = setTimeout(() => {
    finish({
      error: new CliError(
        `login timed out after ${formatSeconds(timeoutMs / 1000)}: no answer reached ${redirectUri}; run platformctl auth login again`,
        EXIT.auth,
      ),
    });
    close();
  }, timeoutMs);

  return {
    redirectUri,
    state,
    result,
    deliver(callbackUrl) {
      let url: URL;
      try {
        url = new URL(callbackUrl.trim());
      } catch {
        return false;
      }
      if (url.pathname !== "/callback" || !sameState(state, url.searchParams.get("state"))) return false;
      if (handle(url.searchParams).final) close();
      return true;
    },
    close,
  };
}
