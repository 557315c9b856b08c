import { createInterface } from "node:readline";
import type { Command } from "commander";
import { contextOf, normalizeApiUrl, type CommandContext } from "../context.js";
import type { CliIo } from "../io.js";
import { describeIdentity, exchangeWorkload, identityName, isFresh, notLoggedIn, currentToken, tokenClaims } from "../credentials.js";
import { discoverAuthUrl } from "../discovery.js";
import { formatSeconds, parseDuration } from "../duration.js";
import { CliError, EXIT } from "../errors.js";
import { loginUrl, startLoopbackLogin, type LoopbackLogin } from "../loopback-login.js";
import { openBrowser } from "../open-browser.js";
import { identityTokenSource } from "../token-exchange.js";
import { registerConfigureDocker } from "./configure-docker.js";

interface LoginOptions {
  headless?: boolean;
  browser: boolean;
  invite?: string;
  org?: string;
  identity?: string;
  identityToken?: string;
  audience?: string;
  timeout: string;
}

function expiresIn(expiry: string): string {
  const ms = Date.parse(expiry) - Date.now();
  return ms > 0 ? `expires in ${formatSeconds(ms / 1000)}` : "expired";
}

// Headless: the browser may run on another machine that cannot reach this
// listener; the address it ends on can be pasted here instead.
function acceptPastedCallback(login: LoopbackLogin, ctx: CommandContext): () => void {
  const lines = createInterface({ input: ctx.io.stdin, terminal: false });
  lines.on("line", (line) => {
    if (line.trim() && !login.deliver(line)) ctx.note("that is not the callback address of this login; paste the whole address");
  });
  return () => {
    lines.close();
    ctx.io.stdin.destroy();
  };
}

async function browserLogin(ctx: CommandContext, opts: LoginOptions): Promise<void> {
  const timeoutMs = parseDuration(opts.timeout, "--timeout") * 1000;
  const authUrl = await discoverAuthUrl(ctx.api);
  const login = await startLoopbackLogin(timeoutMs);
  const url = loginUrl(authUrl, login, { invite: opts.invite, org: opts.org });
  let stopPaste = () => {};
  if (opts.headless || !opts.browser) {
    ctx.note(`Open this address in a browser to sign in:\n\n  ${url}\n`);
    ctx.note(`Waiting for the sign-in to reach ${login.redirectUri} (or paste the address the browser ends on here)...`);
    stopPaste = acceptPastedCallback(login, ctx);
  } else {
    ctx.note(`Opening a browser to sign in. If none opens, visit:\n\n  ${url}\n`);
    openBrowser(url, ctx.env);
  }
  try {
    const token = await login.result;
    await ctx.store.saveToken(ctx.api, { ...token, kind: "browser" });
    await ctx.store.setCurrent(ctx.api);
    const uid = tokenClaims(token.token).sub;
    ctx.print(
      `logged in to ${ctx.api} as ${describeIdentity(uid, await identityName(ctx.api, token.token, uid), [expiresIn(token.expiry)])}`,
    );
  } finally {
    stopPaste();
    login.close();
  }
}

async function workloadLogin(ctx: CommandContext, opts: LoginOptions & { identity: string }): Promise<void> {
  if (!opts.identityToken) throw new CliError("--identity needs --identity-token <file or JWT>", EXIT.usage);
  if (opts.invite || opts.org) throw new CliError("--invite and --org are for the browser login, not with --identity", EXIT.usage);
  const entry = await exchangeWorkload(ctx.store, ctx.api, {
    identity: opts.identity,
    identityToken: await identityTokenSource(opts.identityToken),
    audience: opts.audience ? normalizeApiUrl(opts.audience, "--audience") : ctx.api,
  });
  await ctx.store.setCurrent(ctx.api);
  const name = await identityName(ctx.api, entry.token, opts.identity);
  ctx.print(`logged in to ${ctx.api} as ${describeIdentity(opts.identity, name, ["workload", expiresIn(entry.expiry)])}`);
}

export function registerAuth(program: Command, io: CliIo): void {
  const auth = program.command("auth").description("log in and manage the stored API tokens");

  auth
    .command("login")
    .description("log in through the browser, or as a workload with --identity and --identity-token")
    .option("--headless", "print the sign-in address instead of opening a browser")
    .option("--no-browser", "the same as --headless")
    .option("--invite <code>", "redeem a group invite while signing in")
    .option("--org <group uid>", "sign in with this organization's identity provider")
    .option("--identity <uid>", "workload: the identity to assume")
    .option("--identity-token <file or JWT>", "workload: the OIDC token (a file is re-read whenever the token is renewed)")
    .option("--audience <url>", "workload: the API audience (the server's PLATFORM_BASE_URL; default: the API URL)")
    .option("--timeout <duration>", "how long to wait for the browser sign-in", "5m")
    .action(async (opts: LoginOptions, cmd: Command) => {
      const ctx = await contextOf(cmd, io);
      if (opts.identity) await workloadLogin(ctx, { ...opts, identity: opts.identity });
      else if (opts.identityToken) throw new CliError("--identity-token needs --identity <uid>", EXIT.usage);
      else await browserLogin(ctx, opts);
    });

  auth
    .command("token")
    .description("print the current API token (renewing a workload's when it has expired)")
    .action(async (_opts: object, cmd: Command) => {
      const ctx = await contextOf(cmd, io);
      ctx.print(await currentToken(ctx.store, ctx.api, ctx.env));
    });

  auth
    .command("status")
    .description("show the API, identity (uid and name), expiry and kind of the current login")
    .action(async (_opts: object, cmd: Command) => {
      const ctx = await contextOf(cmd, io);
      const fromEnv = ctx.env["PLATFORM_TOKEN"];
      const entry = fromEnv ? undefined : await ctx.store.token(ctx.api);
      const token = fromEnv ?? entry?.token;
      if (!token) throw notLoggedIn(ctx.api);
      const claims = tokenClaims(token);
      const expiry = entry?.expiry ?? (claims.exp ? new Date(claims.exp * 1000).toISOString() : "");
      // An expired token would only be refused: the name is looked up with a live one.
      const live = !entry || isFresh(entry);
      const name = live ? await identityName(ctx.api, token, claims.sub) : undefined;
      const status = {
        api: ctx.api,
        identity: claims.sub ?? "",
        name: name ?? "",
        expiry,
        kind: fromEnv ? "environment (PLATFORM_TOKEN)" : (entry?.kind ?? ""),
      };
      if (ctx.output === "json") ctx.printJson(status);
      else {
        const renewable = entry?.kind === "workload" ? "; renewed on next use" : "";
        const state = !expiry ? "" : entry && !isFresh(entry) ? ` (expired${renewable})` : ` (${expiresIn(expiry)})`;
        const shownName = status.name || "(unknown)";
        ctx.print(
          `api:      ${status.api}\nidentity: ${status.identity}\nname:     ${shownName}\nexpiry:   ${status.expiry}${state}\nkind:     ${status.kind}`,
        );
      }
      if (entry && !isFresh(entry) && entry.kind !== "workload") throw new CliError("token expired: run platformctl auth login", EXIT.auth);
    });

  auth
    .command("logout")
    .description("forget the token stored for the API")
    .action(async (_opts: object, cmd: Command) => {
      const ctx = await contextOf(cmd, io);
      const removed = await ctx.store.removeToken(ctx.api);
      ctx.print(removed ? `logged out of ${ctx.api}` : `not logged in to ${ctx.api}`);
    });

  registerConfigureDocker(auth, io);
}
