import { readFile, stat } from "node:fs/promises";
import { resolve } from "node:path";
import { type ApiError, CliError, EXIT } from "./errors.js";
import { errorOf, fetchOrFail } from "./api-client.js";
import type { IdentityTokenSource } from "./config-store.js";

export interface ApiToken {
  token: string;
  /** RFC 3339. */
  expiry: string;
}

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** `--identity-token`: a file when one exists at that path (kept as an absolute path), else a literal JWT. */
export async function identityTokenSource(arg: string): Promise<IdentityTokenSource> {
  const info = await stat(arg).catch(() => undefined);
  if (info?.isFile()) return { file: resolve(arg) };
  if (JWT_SHAPE.test(arg.trim())) return { literal: arg.trim() };
  throw new CliError(`--identity-token: "${arg}" is neither a file nor a JWT`, EXIT.usage);
}

/** The OIDC token itself; a file is read again each time (workload token files are refreshed in place). */
export async function readIdentityToken(source: IdentityTokenSource): Promise<string> {
  if ("literal" in source) return source.literal;
  let text: string;
  try {
    text = await readFile(source.file, "utf8");
  } catch (e) {
    throw new CliError(
      `cannot read the identity token file ${source.file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
      EXIT.auth,
    );
  }
  const token = text.trim();
  if (!JWT_SHAPE.test(token)) throw new CliError(`the identity token file ${source.file} does not hold a JWT`, EXIT.auth);
  return token;
}

/** GET {auth}/sts/exchange: an OIDC token the identity accepts → a one-hour API token for `audience`. */
export async function exchangeIdentityToken(authUrl: string, audience: string, identity: string, oidcToken: string): Promise<ApiToken> {
  const url = `${authUrl}/sts/exchange?${new URLSearchParams({ aud: audience, identity })}`;
  const res = await fetchOrFail(url, { headers: { authorization: `Bearer ${oidcToken}`, accept: "application/json" } });
  if (!res.ok) throw explain(await errorOf(res), identity);
  const body = (await res.json()) as Partial<ApiToken>;
  if (typeof body.token !== "string" || typeof body.expiry !== "string") {
    throw new CliError(`${authUrl}/sts/exchange answered without a token`, EXIT.unexpected);
  }
  return { token: body.token, expiry: body.expiry };
}

// The exchange tells nothing about why it refused (by design); say what to check.
function explain(err: ApiError, identity: string): CliError {
  if (err.status.code === 16) {
    return new CliError(
      `token exchange refused for identity ${identity}: check the identity's claimMatch and the OIDC token's issuer, subject and expiry`,
      EXIT.auth,
    );
  }
  if (err.status.code === 3 && err.message.includes("aud:"))
    return new CliError(`${err.message} (choose it with --audience)`, err.exitCode);
  return err;
}
