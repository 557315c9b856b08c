import http from "node:http";
import type { AddressInfo } from "node:net";
import { SignJWT, generateKeyPair } from "jose";
import { pino, type Logger } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newChildUid, schema } from "../../src/db/index.js";
import { restClient, type JsonObject } from "../support/clients.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { sharedServer } from "../support/shared-server.js";

// docs/design.md, "Egress": the server's outbound requests (issuer discovery and
// JWKS for the token exchange, upstream IdPs for the browser login) go
// through one guard. Nothing here sends a packet beyond loopback: the
// internal addresses below are refused as IP literals, before any
// connection could be attempted.

/** A logger whose lines the test can read. */
function capturedLog(): { logger: Logger; lines: JsonObject[] } {
  const lines: JsonObject[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line) as JsonObject) });
  return { logger, lines };
}

/** A tiny local OIDC "provider" that only serves a discovery document, and counts requests. */
async function fakeIdp(
  metadata: (issuer: string) => JsonObject,
): Promise<{ issuer: string; requests: () => number; stop: () => Promise<void> }> {
  let count = 0;
  let issuer = "";
  const server = http.createServer((req, res) => {
    count++;
    if (req.url === "/.well-known/openid-configuration") {
      res.writeHead(200, { "content-type": "application/json" });
      return res.end(JSON.stringify(metadata(issuer)));
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    requests: () => count,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const discovery = (issuer: string, authorize: string): JsonObject => ({
  issuer,
  authorization_endpoint: authorize,
  token_endpoint: `${issuer}/token`,
  jwks_uri: `${issuer}/jwks`,
  response_types_supported: ["code"],
  subject_types_supported: ["public"],
  id_token_signing_alg_values_supported: ["RS256"],
});

async function ok(p: Promise<{ status: number; body: JsonObject }>): Promise<JsonObject> {
  const res = await p;
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

describe("token exchange without PLATFORM_ALLOW_INSECURE_ISSUERS: internal issuers are refused", () => {
  let strict: TestServer;
  let log: ReturnType<typeof capturedLog>;
  let groupUid: string;

  beforeAll(async () => {
    log = capturedLog();
    strict = await startTestServer({}, { logger: log.logger });
    groupUid = (await ok(restClient(strict.url, strict.token)("POST", "/iam/v2beta1/groups", { name: "egress-sts" })))["uid"] as string;
  });
  afterAll(() => strict?.stop());

  async function identity(match: { claimIssuer?: string; claimIssuerPattern?: string }): Promise<string> {
    const now = strict.clock.now();
    const uid = newChildUid(groupUid);
    await strict.app.database.db.insert(schema.identities).values({
      uid,
      parentUid: groupUid,
      name: `workload ${uid.slice(-6)}`,
      ...match,
      claimSubject: "workload-a",
      createTime: now,
      updateTime: now,
    });
    return uid;
  }

  /** A well-formed token naming `iss`, signed by a key nobody publishes: only fetching keys could reject it. */
  async function tokenFrom(iss: string): Promise<string> {
    const { privateKey } = await generateKeyPair("ES256");
    return new SignJWT({ sub: "workload-a", aud: strict.app.urls.authUrl })
      .setProtectedHeader({ alg: "ES256", kid: "k" })
      .setIssuer(iss)
      .setIssuedAt(Math.floor(strict.clock.now().getTime() / 1000))
      .setExpirationTime(Math.floor(strict.clock.now().getTime() / 1000) + 600)
      .sign(privateKey);
  }

  async function exchange(uid: string, token: string) {
    const res = await fetch(`${strict.url}/sts/exchange?aud=${encodeURIComponent(strict.app.urls.baseUrl)}&identity=${uid}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return { status: res.status, body: (await res.json()) as JsonObject };
  }

  const rejections = () => log.lines.filter((l) => l["msg"] === "token exchange rejected").map((l) => String(l["reason"]));

  it("an identity whose claimMatch.issuer is a private or metadata address gets 401; the log names the refusal", async () => {
    for (const issuer of ["https://10.0.0.1", "https://169.254.169.254", "https://[fd00:ec2::254]", "https://[::ffff:10.0.0.1]"]) {
      const before = rejections().length;
      const res = await exchange(await identity({ claimIssuer: issuer }), await tokenFrom(issuer));
      expect(res.status, issuer).toBe(401);
      expect(res.body["message"], issuer).toBe("Unauthenticated: the token was not accepted for this identity");
      expect(JSON.stringify(res.body), issuer).not.toContain("public address");
      const reasons = rejections().slice(before);
      expect(reasons, issuer).toHaveLength(1);
      expect(reasons[0], issuer).toMatch(/^verification failed: .* is not a public address \((private|linkLocal|uniqueLocal)\)$/);
    }
  });

  it("an issuer pattern cannot lead there either: the token's own iss is checked by the same guard", async () => {
    // A pattern fixes the host (identities.spec.ts); one naming an internal host still gets nowhere.
    for (const host of ["169.254.169.254", "192.168.0.1", "100.64.0.1", "2130706433"]) {
      const uid = await identity({ claimIssuerPattern: `https://${host.replace(/\./g, "\\.")}/.*` });
      const iss = `https://${host}/tenant`;
      const before = rejections().length;
      expect((await exchange(uid, await tokenFrom(iss))).status, iss).toBe(401);
      expect(rejections().slice(before)[0], iss).toContain("is not a public address");
    }
  });
});

describe("browser login: upstream identity providers go through the guard", () => {
  let dev: TestServer;
  let strict: TestServer;
  let devLog: ReturnType<typeof capturedLog>;
  const callback = "http://127.0.0.1:9/callback";

  beforeAll(async () => {
    devLog = capturedLog();
    // The fake providers are on loopback: trusted, so the login goes straight to them (no interstitial page).
    dev = await startTestServer(
      { PLATFORM_ALLOW_INSECURE_ISSUERS: "true", PLATFORM_TRUSTED_IDP_HOSTS: "127.0.0.1" },
      { logger: devLog.logger },
    );
    strict = await sharedServer();
  });
  afterAll(async () => {
    await dev?.stop();
  });

  /** An organization whose identity provider has `issuer`; the `/oauth?org=…` answer's Location. */
  async function startLogin(target: TestServer, issuer: string, state: string): Promise<{ location: URL; cookie: string | null }> {
    const admin = restClient(target.url, target.token);
    const org = (await ok(admin("POST", "/iam/v2beta1/groups", { name: `egress-${state}` })))["uid"] as string;
    await ok(
      admin("POST", `/iam/v2beta1/identityProviders/${org}`, { name: "sso", oidc: { issuer, clientId: "platform", clientSecret: "s" } }),
    );
    const url = new URL(`${target.app.urls.authUrl}/oauth`);
    url.search = new URLSearchParams({ redirect: callback, state, org }).toString();
    const res = await fetch(url, { redirect: "manual" });
    expect(res.status).toBe(302);
    return { location: new URL(res.headers.get("location")!), cookie: res.headers.get("set-cookie") };
  }

  const refusedLogins = () => devLog.lines.filter((l) => l["msg"] === "login refused");

  it("refuses a discovery document whose authorization_endpoint is on another origin", async () => {
    for (const [label, authorize] of [
      ["another host", () => "https://sso.attacker.example/authorize"],
      ["another port", (issuer: string) => `http://127.0.0.1:${(Number(new URL(issuer).port) % 65535) + 1}/authorize`],
      ["another scheme", (issuer: string) => `${issuer.replace("http:", "https:")}/authorize`],
    ] as const) {
      const idp = await fakeIdp((issuer) => discovery(issuer, authorize(issuer)));
      try {
        const before = refusedLogins().length;
        const { location, cookie } = await startLogin(dev, idp.issuer, `cross-origin-${label.replace(/ /g, "-")}`);
        expect(location.origin + location.pathname, label).toBe(callback);
        expect(location.searchParams.get("error"), label).toBe("upstream_error");
        expect(location.searchParams.get("error_description"), label).toBe(
          "the identity provider's sign-in page is not at its issuer's address",
        );
        expect(cookie, label).toBeNull();
        expect(idp.requests(), label).toBe(1); // the discovery document, nothing else
        const logged = refusedLogins().slice(before);
        expect(logged, label).toHaveLength(1);
        expect(JSON.stringify(logged[0]!["err"]), label).toContain("authorization_endpoint");
      } finally {
        await idp.stop();
      }
    }
  });

  it("sends the browser to an authorization_endpoint on the issuer's own origin", async () => {
    const idp = await fakeIdp((issuer) => discovery(issuer, `${issuer}/authorize`));
    try {
      const { location, cookie } = await startLogin(dev, idp.issuer, "same-origin");
      expect(location.origin + location.pathname).toBe(`${idp.issuer}/authorize`);
      expect(location.searchParams.get("client_id")).toBe("platform");
      expect(cookie).toBeTruthy();
    } finally {
      await idp.stop();
    }
  });

  it("shows the person a generic error when the provider cannot be reached; the cause goes to the log only", async () => {
    const closed = await fakeIdp(() => ({}));
    await closed.stop();
    const before = refusedLogins().length;
    const { location } = await startLogin(dev, closed.issuer, "unreachable");
    expect(location.searchParams.get("error")).toBe("upstream_error");
    const description = location.searchParams.get("error_description")!;
    expect(description).toBe("the identity provider could not be reached");
    expect(description).not.toContain(new URL(closed.issuer).port);
    expect(JSON.stringify(refusedLogins().slice(before))).toContain("ECONNREFUSED");
  });

  it("without the development flag, an identity provider at an internal address is refused before any contact", async () => {
    for (const issuer of ["https://10.0.0.1", "https://169.254.169.254"]) {
      const { location, cookie } = await startLogin(strict, issuer, `internal-${issuer.length}`);
      expect(location.searchParams.get("error")).toBe("upstream_error");
      expect(location.searchParams.get("error_description")).toContain("at a public address");
      expect(cookie).toBeNull();
    }
  });
});
