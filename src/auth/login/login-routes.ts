import { withoutTrailingSlash } from "../../http/index.js";
import { Code, ConnectError } from "@connectrpc/connect";
import type { EventRecorder } from "../../events/index.js";
import { timingSafeEqual } from "node:crypto";
import type { Logger } from "pino";
import type { SecretBox } from "../../crypto/index.js";
import { UID_SHAPES, type Database } from "../../db/index.js";
import type { Egress } from "../../egress/index.js";
import { takeForAddress, type PerMinuteLimit } from "../exchange-limits.js";
import type { OutboundBudgets } from "../outbound-budgets.js";
import type { TokenService } from "../tokens.js";
import { callbackWithError, callbackWithToken, loopbackCallback } from "./cli-redirect.js";
import { devPerson, devSignInPage, notFromThisMachine } from "./dev-provider.js";
import { checkInviteFormat } from "./invite-redemption.js";
import { LoginError } from "./login-error.js";
import { PAGE_HEADERS, errorPage } from "./login-pages.js";
import { needsInterstitial, providerInterstitialPage } from "./provider-interstitial.js";
import { LoginStates, type PendingLogin } from "./login-state.js";
import type { PlatformAdmins } from "./platform-admins.js";
import { viaProvider, type SignInVia } from "./sign-in-via.js";
import { signIn, type SignInDeps } from "./sign-in.js";
import { Upstreams, type SignedInPerson } from "./upstream.js";
import type { NodeRequest as Req, NodeResponse as Res } from "../../http/types.js";

export interface LoginRoute {
  methods: string[];
  serve(req: Req, res: Res, url: URL): Promise<void>;
}

export interface LoginDeps {
  db: Database;
  /** Seals the login cookie key and opens organizations' client secrets. */
  secrets: SecretBox;
  tokens: TokenService;
  clock: () => Date;
  /** The token issuer URL; the login pages live under its path. */
  authUrl: string;
  /** The API base URL: the audience of the tokens handed out. */
  baseUrl: string;
  /** The global upstream (PLATFORM_OIDC_*), if any. */
  upstream: { issuer: string; clientId: string; clientSecret: string; scopes: string[] } | undefined;
  /** Serve the development provider. */
  devLogin: boolean;
  /** It is on by default, not by choice: it serves only requests straight from this machine (Config.devLoginLocalOnly). */
  devLoginLocalOnly: boolean;
  /** PLATFORM_TRUSTED_IDP_HOSTS: organizations' providers at these hosts are gone to without the interstitial page. */
  trustedIdpHosts: readonly string[];
  /** PLATFORM_ADMINS: people of the global upstream made `owner` at the root at sign-in. */
  admins: PlatformAdmins;
  /** The egress guard every request to an upstream provider goes through. */
  egress: Egress;
  /** Its budgets: the deployment's sign-in, and each organization's identity providers, each with a share per client address. */
  budgets: OutboundBudgets;
  /** PLATFORM_LOGIN_RATE_PER_ADDRESS: sign-in starts and callbacks per minute from one client address. */
  rate: PerMinuteLimit;
  log: Logger;
  /** Records each sign-in in the audit log. */
  events: EventRecorder;
  /** Clears this replica's grants cache after a sign-in that made bindings (SignInDeps). */
  grantsChanged: () => void;
}

const MAX_CLI_STATE = 512;
// What the sign-in says when no provider is on: how an operator turns one on.
const NO_PROVIDER =
  "this server has no identity provider configured: its operator sets PLATFORM_OIDC_ISSUER and PLATFORM_OIDC_CLIENT_ID (and PLATFORM_OIDC_CLIENT_SECRET) to an upstream OpenID Connect provider, or PLATFORM_DEV_LOGIN=true for development only";
const MAX_FORM_BYTES = 16 * 1024;

const REFUSED = "Sign-in refused";

function send(res: Res, status: number, headers: Record<string, string | string[]>, body = ""): void {
  res.writeHead(status, { ...PAGE_HEADERS, "content-length": String(Buffer.byteLength(body)), ...headers });
  res.end(body);
}

function sendPage(res: Res, status: number, html: string, cookies: string[] = []): void {
  send(res, status, cookies.length ? { "set-cookie": cookies } : {}, html);
}

function redirect(res: Res, status: 302 | 303, location: string, cookies: string[] = []): void {
  send(res, status, { location, ...(cookies.length ? { "set-cookie": cookies } : {}) });
}

async function readForm(req: Req): Promise<URLSearchParams | undefined> {
  if (!String(req.headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded")) return new URLSearchParams();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) return undefined;
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The browser login (docs/sign-in.md, "Signing in"), as plain HTTP routes keyed by
 * their path under the auth URL:
 *
 * - `GET /oauth?redirect=<loopback callback>&state=…[&invite=…][&org=…]`
 *   starts a login and sends the browser to the upstream (or to the
 *   development sign-in page); with `org`, to that group's identity
 *   provider, through a page naming its host unless the operator vouches
 *   for it (provider-interstitial.ts);
 * - `GET /oauth/callback` is where the upstream sends the browser back;
 * - `GET|POST /oauth/dev` is the development provider (only when it is on).
 *
 * Every login ends with a redirect to the CLI's loopback callback, with a
 * token or a typed error; requests that cannot be tied to a CLI callback
 * get a 400 page and no redirect.
 */
export function loginRoutes(deps: LoginDeps): Map<string, LoginRoute> {
  const prefix = withoutTrailingSlash(new URL(deps.authUrl).pathname);
  const redirectUri = `${deps.authUrl}/oauth/callback`;
  const devPath = `${prefix}/oauth/dev`;
  const states = new LoginStates(deps.db, deps.secrets, deps.clock, deps.authUrl);
  const upstreams = new Upstreams({
    db: deps.db,
    secrets: deps.secrets,
    global: deps.upstream,
    egress: deps.egress,
    budgets: deps.budgets,
    redirectUri,
    clock: deps.clock,
  });
  const signInDeps: SignInDeps = {
    db: deps.db,
    tokens: deps.tokens,
    audience: deps.baseUrl,
    clock: deps.clock,
    admins: deps.admins,
    events: deps.events,
    grantsChanged: deps.grantsChanged,
  };

  // The description is what the person sees; the cause (which may name internal hosts and ports) goes to the log only.
  const logRefusal = (error: LoginError) =>
    deps.log.info(
      { error: error.code, description: error.description, ...(error.cause === undefined ? {} : { err: error.cause }) },
      "login refused",
    );

  const asLoginError = (e: unknown): LoginError => {
    if (e instanceof LoginError) return e;
    deps.log.error({ err: e }, "login failed");
    return new LoginError("server_error", "the server failed to complete the sign-in; its log has the details");
  };

  /** Ends `pending` at the CLI: at the URL `outcome` makes (a token), or with the error it throws. */
  const finish = async (res: Res, status: 302 | 303, pending: PendingLogin, outcome: () => Promise<string>) => {
    let location: string;
    try {
      location = await outcome();
    } catch (e) {
      const error = asLoginError(e);
      logRefusal(error);
      location = callbackWithError(pending.callback, pending.cliState, error);
    }
    redirect(res, status, location, [states.clear(pending)]);
  };

  const complete = async (pending: PendingLogin, person: SignedInPerson, via: SignInVia, invite: string) => {
    const minted = await signIn(signInDeps, person, { invite, via });
    deps.log.info({ issuer: person.issuer, subject: person.subject }, "signed in");
    return callbackWithToken(pending.callback, pending.cliState, minted);
  };

  /**
   * Counts a start or callback from the request's client address (the socket's peer, as the token
   * exchange counts it); over the limit, answers 429 with Retry-After and a page saying so, before
   * anything is read or sent anywhere (docs/security.md, "Outbound budgets"). The person is at
   * the browser: the page, not the CLI's callback, is where they look.
   */
  const admitted = async (req: Req, res: Res): Promise<boolean> => {
    try {
      await takeForAddress(deps.rate, req.socket.remoteAddress);
      return true;
    } catch (e) {
      if (!(e instanceof ConnectError) || e.code !== Code.ResourceExhausted) throw e;
      const retryAfter = e.metadata.get("retry-after") ?? "60";
      const html = errorPage("Too many sign-in attempts", `Too many sign-in attempts from this address. Wait ${retryAfter} seconds.`);
      send(res, 429, { "retry-after": retryAfter }, html);
      return false;
    }
  };

  const expiredError = () => new LoginError("login_expired", "the sign-in took longer than 10 minutes; start it again");

  const start: LoginRoute = {
    methods: ["GET"],
    async serve(req, res, url) {
      if (!(await admitted(req, res))) return;
      const q = url.searchParams;
      const callback = loopbackCallback(q.get("redirect"));
      if (!callback) {
        const msg =
          "The redirect must be http://127.0.0.1:<port>/callback, http://localhost:<port>/callback or http://[::1]:<port>/callback.";
        return sendPage(res, 400, errorPage(REFUSED, msg));
      }
      const cliState = q.get("state") ?? "";
      if (!cliState || cliState.length > MAX_CLI_STATE) {
        return sendPage(res, 400, errorPage(REFUSED, `The sign-in link needs a state of 1 to ${MAX_CLI_STATE} characters.`));
      }
      try {
        const invite = q.get("invite") ?? "";
        checkInviteFormat(invite);
        const org = q.get("org") ?? "";
        if (org && !UID_SHAPES.group.test(org)) throw new LoginError("invalid_request", "org is not a group uid");
        const ofOrg = org ? await upstreams.ofOrganization(org) : undefined;
        const provider = ofOrg ? ofOrg.provider : upstreams.global;
        if (!provider && !deps.devLogin) throw new LoginError("login_unavailable", NO_PROVIDER);
        const { pending, setCookie } = await states.create({ callback, cliState, invite, idp: provider?.idp?.uid ?? "" });
        // The development page offers the upstream too, when both are on.
        const location =
          provider && (org || !deps.devLogin)
            ? await upstreams.authorizationUrl(provider, pending, req.socket.remoteAddress)
            : `${devPath}?login=${pending.state}`;
        if (ofOrg && needsInterstitial(ofOrg, location, deps.trustedIdpHosts)) {
          const cancelled = new LoginError(
            "access_denied",
            "the sign-in was cancelled before leaving for the organization's identity provider",
          );
          const html = providerInterstitialPage({
            org: ofOrg,
            continueUrl: location,
            cancelUrl: callbackWithError(callback, cliState, cancelled),
          });
          return sendPage(res, 200, html, [setCookie]);
        }
        redirect(res, 302, location, [setCookie]);
      } catch (e) {
        const error = asLoginError(e);
        logRefusal(error);
        redirect(res, 302, callbackWithError(callback, cliState, error));
      }
    },
  };

  const callback: LoginRoute = {
    methods: ["GET"],
    async serve(req, res, url) {
      if (!(await admitted(req, res))) return;
      const q = url.searchParams;
      const pending = await states.read(req.headers["cookie"], q.get("state") ?? "");
      if (!pending) {
        const msg =
          "This answer from the identity provider does not belong to a sign-in started in this browser (its state does not match). Nothing was signed in.";
        return sendPage(res, 400, errorPage(REFUSED, msg));
      }
      await finish(res, 302, pending, async () => {
        if (states.expired(pending)) throw expiredError();
        const upstreamError = q.get("error");
        if (upstreamError === "access_denied")
          throw new LoginError("access_denied", "the sign-in was cancelled or refused at the identity provider");
        if (upstreamError) throw new LoginError("upstream_error", `the identity provider answered ${upstreamError.slice(0, 64)}`);
        const provider = pending.idp ? await upstreams.byUid(pending.idp) : upstreams.global;
        if (!provider) throw new LoginError("login_unavailable", NO_PROVIDER);
        // The URL the upstream redirected to, as registered there (not as the Host header says).
        const current = new URL(redirectUri);
        current.search = url.search;
        const person = await upstreams.finish(provider, current, pending, req.socket.remoteAddress);
        return complete(pending, person, viaProvider(provider), pending.invite);
      });
    },
  };

  const devPage = async (
    req: Req,
    res: Res,
    status: number,
    pending: PendingLogin,
    fields: { username: string; invite: string; error?: string },
  ) => {
    let upstreamUrl: string | undefined;
    const global = upstreams.global;
    if (global && !pending.idp) {
      upstreamUrl = await upstreams.authorizationUrl(global, pending, req.socket.remoteAddress).catch((e: unknown) => {
        deps.log.warn({ err: e }, "upstream unavailable for the development sign-in page");
        return undefined;
      });
    }
    const html = devSignInPage({ login: pending.state, csrf: pending.csrf, action: devPath, upstreamUrl, ...fields });
    sendPage(res, status, html);
  };

  const notThisBrowser = (res: Res) =>
    sendPage(res, 400, errorPage(REFUSED, "This sign-in page does not belong to a sign-in started in this browser."));

  const dev: LoginRoute = {
    methods: ["GET", "POST"],
    async serve(req, res, url) {
      const elsewhere = deps.devLoginLocalOnly ? notFromThisMachine(req.headers) : undefined;
      if (elsewhere) {
        // Before the body is read: nothing of the request is used.
        const msg = `Development sign-in is on by default, for a developer on this machine only, and this request did not come straight from it: ${elsewhere}. Its operator sets PLATFORM_DEV_LOGIN=true to serve it anyway (development only: anyone it reaches signs in as any name), or configures an upstream identity provider (PLATFORM_OIDC_ISSUER).`;
        return send(
          res,
          403,
          req.httpVersionMajor === 1 && req.method === "POST" ? { connection: "close" } : {},
          errorPage("Development sign-in is for this machine only", msg),
        );
      }
      if (req.method === "GET") {
        const pending = await states.read(req.headers["cookie"], url.searchParams.get("login") ?? "");
        if (!pending) return notThisBrowser(res);
        if (states.expired(pending)) {
          return finish(res, 302, pending, async () => {
            throw expiredError();
          });
        }
        return devPage(req, res, 200, pending, { username: "", invite: url.searchParams.get("invite") ?? pending.invite });
      }
      const form = await readForm(req);
      if (!form) {
        // The rest of the upload is never read: an HTTP/1.1 connection cannot carry another request.
        return send(res, 413, req.httpVersionMajor === 1 ? { connection: "close" } : {}, errorPage(REFUSED, "The form is too large."));
      }
      const pending = await states.read(req.headers["cookie"], form.get("login") ?? "");
      if (!pending || !sameSecret(form.get("csrf") ?? "", pending.csrf)) return notThisBrowser(res);
      const username = (form.get("username") ?? "").trim();
      const invite = (form.get("invite") ?? "").trim();
      let person: SignedInPerson;
      try {
        person = devPerson(deps.authUrl, username);
      } catch (e) {
        // A mistyped username is the person's to fix, not the end of the login.
        return devPage(req, res, 400, pending, { username, invite, error: asLoginError(e).description });
      }
      await finish(res, 303, pending, async () => {
        if (states.expired(pending)) throw expiredError();
        return complete(pending, person, { kind: "development" }, invite);
      });
    },
  };

  const routes = new Map<string, LoginRoute>([
    ["/oauth", start],
    ["/oauth/callback", callback],
  ]);
  // Off (the default on a non-loopback listener): anyone could sign in as anyone. Say how to set up a real provider.
  const devOff: LoginRoute = {
    methods: ["GET", "POST"],
    serve: async (_req, res) =>
      sendPage(res, 404, errorPage("Development sign-in is off", `${NO_PROVIDER[0]!.toUpperCase()}${NO_PROVIDER.slice(1)}.`)),
  };
  routes.set("/oauth/dev", deps.devLogin ? dev : devOff);
  return routes;
}
