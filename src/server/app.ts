import { withoutTrailingSlash } from "../http/index.js";
import { readFile } from "node:fs/promises";
import type { ConnectRouter } from "@connectrpc/connect";
import { sql } from "drizzle-orm";
import type { Logger } from "pino";
import {
  ExchangeLimits,
  PerMinuteLimit,
  OidcIssuers,
  OutboundBudgets,
  SigningKeys,
  TokenService,
  bootstrapAdminToken,
  exchangeRpc,
  writeAdminToken,
  type MintedToken,
  type TokenExchangeDeps,
} from "../auth/index.js";
import { SecurityTokenService } from "../../gen/platform/sts/v1/sts_pb.js";
import { AdminTokenRenewal } from "../auth/admin-token-renewal.js";
import { devIssuer, loginRoutes } from "../auth/login/index.js";
import { Authorizer, GRANTS_CHANGED_CHANNEL, Grants, GrantsCache } from "../authz/index.js";
import { SecretBox, ensurePrivateDir, loadMasterKey } from "../crypto/index.js";
import {
  openDatabase,
  PgliteUpkeep,
  type PgliteThread,
  POSTGRES_POOL_SIZE,
  sealPlaintextClientSecrets,
  type DatabaseHandle,
} from "../db/index.js";
import { type OpenedPglite, pgliteDirIn } from "../db/pglite-store.js";
import { Egress } from "../egress/index.js";
import {
  CreatorCheck,
  DELIVERIES_CHANNEL,
  EVENTS_CHANNEL,
  EventHub,
  EventRecorder,
  EventRetention,
  WebhookDispatcher,
} from "../events/index.js";
import { ListEngine } from "../list/index.js";
import { createJsonRenderer, createRestHandler } from "../rest/index.js";
import { API_SERVICES, ResourceCatalog, type ServiceContext } from "../services/index.js";
import { registerHealth, registerReflection } from "./grpc/index.js";
import { developmentWarnings, drainMs, resolveUrls, type Config, type ResolvedUrls } from "./config.js";
import { AccessLog } from "./access-log.js";
import { ANONYMOUS_BODY_BYTES, CallPipeline } from "./call-pipeline.js";
import { Metrics } from "./metrics.js";
import { bind, type RequestHandler } from "./listener.js";
import { rpcHandler } from "./rpc/index.js";
import { plainRoutes } from "./plain-routes.js";
import { apiDocRoutes } from "./api-docs.js";
import { corsHandler } from "./cors.js";
import { Subsystems } from "./subsystems.js";
import {
  loadRegistryNotificationSecret,
  RegistryFiles,
  RegistryKeys,
  registryNotificationsRoute,
  REGISTRY_NOTIFICATIONS_PATH,
  REGISTRY_TOKEN_PATH,
  registryTokenRealm,
  registryTokenRoute,
  type RegistryConfigFiles,
} from "../registry/index.js";

/** Requests and messages over 1 MiB are refused on every protocol. */
export const MAX_MESSAGE_BYTES = 1024 * 1024;
/** Webhook deliveries a replica sends at once (at most a quarter of them for one organization, an eighth for one subscription). */
const WEBHOOKS_IN_FLIGHT = 32;

export interface AppOptions {
  logger: Logger;
  /** Injected time, so tests can expire tokens and cursors. */
  clock?: () => Date;
  /** How often (real milliseconds) the admin-token file is checked for renewal; default one minute. */
  adminTokenCheckMs?: number;
  /** An open PGlite to use as the store instead of the data directory's, left open at close (DatabaseOptions.pglite). */
  pglite?: PgliteThread;
  /** The data directory's PGlite, being opened already by the entry point (DatabaseOptions.pgliteOpening). */
  pgliteOpening?: Promise<OpenedPglite>;
  /** Log lines the log destination dropped so far (LogDestination.dropped), for /metrics. */
  logLinesDropped?: () => number;
}

export interface App {
  port: number;
  urls: ResolvedUrls;
  database: DatabaseHandle;
  tokens: TokenService;
  /** Seals secrets at rest under the master key (tests open stored values with it). */
  secrets: SecretBox;
  /** The bootstrap admin token minted at start (when bootstrap is on). */
  adminToken: MintedToken | undefined;
  adminTokenPath: string | undefined;
  /** The image registry's configuration and certificate bundle, as written at start (undefined: they could not be written). */
  registry: { files: RegistryConfigFiles | undefined; keys: RegistryKeys };
  /** This replica's live event watchers (tests wait for a watch to be listening). */
  eventHub: EventHub;
  /** Sends this replica's share of webhook deliveries. */
  dispatcher: WebhookDispatcher;
  /**
   * Drains in-flight requests (for the shutdown timeout less a closing reserve: drainMs), then
   * closes the port and the database. Resolves to whether every request finished in that time;
   * rejects with the first close that failed, once every subsystem has been closed.
   */
  close(): Promise<boolean>;
}

/**
 * The composition root: config → database → services → one listener. It reads as the list of the
 * subsystems it starts, each added to `subsystems` with its close right after it starts: close()
 * (and a start that fails part-way) closes them in reverse, and each states where it must close.
 */
export async function startApp(config: Config, opts: AppOptions): Promise<App> {
  const subsystems = new Subsystems((name, e) => opts.logger.error({ err: e, subsystem: name }, `closing the ${name} failed`));
  try {
    return await start(config, opts, subsystems);
  } catch (e) {
    // What had started is closed (each failure logged): the store and its directory's lock, the port, the loops.
    await subsystems.close().catch(() => {});
    throw e;
  }
}

async function start(config: Config, opts: AppOptions, subsystems: Subsystems): Promise<App> {
  const clock = opts.clock ?? (() => new Date());
  const log = opts.logger;
  // Every development-only setting in force, one warning each, at every start.
  for (const warning of developmentWarnings(config)) log.warn({ development: true }, warning);
  // The data directory holds PGlite's files, the master key file and admin tokens: this user's only.
  // Not touched when none is used (PostgreSQL, PLATFORM_MASTER_KEY, no bootstrap), so read-only file systems work.
  if (!config.databaseUrl || !config.masterKey || config.bootstrap) await ensurePrivateDir(config.dataDir);
  // One key for every secret sealed at rest. Replicas sharing a PostgreSQL database must all be given
  // the same PLATFORM_MASTER_KEY: a key file is per machine, and what one seals another cannot open.
  const master = await loadMasterKey({ configured: config.masterKey, dataDir: config.dataDir });
  const secrets = new SecretBox(master.key);
  master.key.fill(0);
  if (master.file?.created)
    log.info({ path: master.file.path }, "master key created: back it up, the database's secrets cannot be read without it");
  const metrics = new Metrics();
  // Added first, so closed last: everything else may query it until it closes.
  const database = subsystems.add(
    "database",
    await openDatabase({
      databaseUrl: config.databaseUrl,
      pgliteDir: pgliteDirIn(config.dataDir),
      pglite: opts.pglite,
      pgliteOpening: opts.pgliteOpening,
      observeQuery: metrics.queryObserver(),
    }),
    (d) => d.close(),
  );
  metrics.databasePool(database.kind === "postgres" ? POSTGRES_POOL_SIZE : 1);
  metrics.logLinesDropped(opts.logLinesDropped ?? (() => 0));
  // Opening the database wrote the built-in roles from the catalogue (docs/design.md, "Built-in roles").
  const roleSync = database.builtInRoles;
  if (roleSync.written.length || roleSync.removed.length)
    log.info({ written: roleSync.written, removed: roleSync.removed }, "built-in roles written from the catalogue");
  if (roleSync.kept.length)
    log.warn(
      { kept: roleSync.kept },
      "built-in roles no longer in the catalogue are kept while bindings, invites or identity providers still use them",
    );
  const tls = config.tls ? { cert: await readFile(config.tls.certFile), key: await readFile(config.tls.keyFile) } : undefined;
  const listener = await bind({ host: config.host, port: config.port, tls, timeouts: config.timeouts });
  // Requests get the shutdown timeout less a closing reserve (drainMs), and webhook deliveries the same.
  const graceMs = drainMs(config.shutdownTimeoutMs);
  let drained: Promise<boolean> | undefined;
  const drain = () => (drained ??= listener.close(graceMs));
  // Bound now (the URLs need its port) but served last: drained by "serving" below; this closes
  // the port of a start that fails before it serves.
  subsystems.add("listener", listener, drain);
  const urls = resolveUrls(config, listener.port);
  database.describeHolder({ port: listener.port });

  if (master.file && database.kind === "postgres") {
    log.warn(
      { path: master.file.path },
      "the master key comes from this machine's key file: give every replica the same PLATFORM_MASTER_KEY",
    );
  }

  // Secrets written before encryption at rest are sealed here, once (idempotent); the settings
  // keys are re-sealed by their owners as they load them.
  const keys = new SigningKeys(database.db, secrets, clock);
  const sealed = { signingKeys: await keys.sealPlaintextKeys(), clientSecrets: await sealPlaintextClientSecrets(database.db, secrets) };
  if (sealed.signingKeys || sealed.clientSecrets) log.info(sealed, "sealed secrets that were stored in plain text");
  const tokens = new TokenService(keys, urls.authUrl, clock);
  // The image registry's own signing keys and the configuration it runs with (docs/registry.md, "Running the image registry").
  const registryKeys = new RegistryKeys({ db: database.db, secrets, clock, rotateAfterMs: config.registry.keyRotationMs });
  // Read once: the registry's configuration carries it, and the notifications endpoint checks it.
  const registryNotificationSecret = await loadRegistryNotificationSecret(database.db, secrets);
  const registryFiles = new RegistryFiles({
    db: database.db,
    secrets,
    keys: registryKeys,
    config: {
      dir: config.registry.configDir,
      addr: config.registry.addr,
      storageDir: config.registry.storageDir,
      realm: registryTokenRealm(urls.authUrl),
      service: urls.registryAudience,
      issuer: urls.authUrl,
      notificationsUrl: config.registry.notificationsUrl ?? `${urls.authUrl}${REGISTRY_NOTIFICATIONS_PATH}`,
      notificationsSecret: registryNotificationSecret,
    },
    onWritten: (files, rotation) =>
      log.info(
        { ...files, ...rotation },
        "registry configuration written: run docker-registry serve with it, and restart the registry before the rotation",
      ),
    onError: (e) => log.error({ err: e }, "rewriting the registry's certificate bundle failed; retrying in a minute"),
  });
  // A read-only file system (PostgreSQL and PLATFORM_MASTER_KEY need no data directory) serves on
  // without the files: the token endpoint does not need them, only the registry's operator does.
  await registryFiles
    .write()
    .catch((e: unknown) => log.warn({ err: e, dir: config.registry.configDir }, "could not write the registry's configuration"));
  registryFiles.start();
  // Early: no rewrite starts once the shutdown has begun.
  subsystems.add("registry files", registryFiles, (f) => f.stop(), { early: true });
  const descriptors = API_SERVICES.map((s) => s.service);
  // One JSON shape for a message, whichever JSON protocol carries it (REST, Connect) and in events' data.
  const jsonRenderer = createJsonRenderer(descriptors);
  // Webhooks go through an egress guard of their own: same rule, their own in-flight cap, so a slow
  // receiver cannot hold the requests sign-in needs.
  // As many requests in flight as the dispatcher sends at once, so that none fails as "busy".
  const webhookEgress = new Egress({
    allowInsecure: config.allowInsecureIssuers,
    timeoutMs: config.events.timeoutMs,
    maxBytes: 64 * 1024,
    maxInFlight: WEBHOOKS_IN_FLIGHT,
  });
  // The one egress guard: every outbound request (issuers, JWKS, upstream IdPs) goes through it, each
  // on its budget (docs/security.md, "Outbound budgets"); its own cap is all budgets full at once.
  const egress = new Egress({ allowInsecure: config.allowInsecureIssuers, maxInFlight: OutboundBudgets.totalInFlight(config.outbound) });
  // Added before the dispatcher and before serving: their kept connections (to receivers, issuers)
  // close once nothing can send any more.
  subsystems.add("egress guards", [webhookEgress, egress], (guards) => Promise.all(guards.map((g) => g.close())));
  const eventHub = new EventHub({ db: database.db, onError: (e) => log.error({ err: e }, "reading new events failed; retrying") });
  eventHub.start();
  // Early: watch streams end as the shutdown begins, so that draining does not wait for them.
  subsystems.add("event hub", eventHub, (h) => h.close(), { early: true });
  metrics.eventStreams(() => eventHub.size);
  const grantsCache = new GrantsCache(Grants.loader(database.db), clock, (hit) => metrics.grantsLookup(hit));
  const authorizer = new Authorizer({
    db: database.db,
    grants: grantsCache,
    clearGrantsAfterWrites: database.kind === "postgres",
    registryAudience: urls.registryAudience,
    orgCreation: config.orgCreation,
    // The deployment's own sign-in, whose people may found organizations (docs/security.md, "Founding organizations").
    founderIssuers: [...(config.oidc ? [config.oidc.issuer] : []), ...(config.devLogin ? [devIssuer(urls.authUrl)] : [])],
    clock,
  });
  const events = new EventRecorder({
    source: urls.baseUrl,
    clock,
    render: (schema, message) => jsonRenderer.render(schema, message),
    retryForMs: config.events.retryForMs,
    announce: async (deliveries) => {
      await database.db.execute(sql`select pg_notify(${EVENTS_CHANNEL}, '')`);
      if (deliveries) await database.db.execute(sql`select pg_notify(${DELIVERIES_CHANNEL}, '')`);
    },
    onError: (e) => log.warn({ err: e }, "announcing events failed; replicas find them at their next poll"),
  });
  // Closed once requests have drained (they announce through it), before the database.
  subsystems.add("event recorder", events, (r) => r.close());
  const ctx: ServiceContext = {
    db: database.db,
    list: await ListEngine.create(database.db, secrets, clock),
    clock,
    secrets,
    events,
    eventHub,
    egress: webhookEgress,
    access: authorizer,
    eventStreams: config.events.streams,
    resources: new ResourceCatalog(API_SERVICES),
  };

  // Early: health checks answer NOT_SERVING and health watches end as the shutdown begins.
  const shutdown = subsystems.add("shutdown signal", new AbortController(), (c) => c.abort(), { early: true });
  const ready = async () => {
    if (shutdown.signal.aborted) return false;
    try {
      await database.ping();
      return true;
    } catch (e) {
      log.warn({ err: e }, "database ping failed");
      return false;
    }
  };

  // Subscriptions send for their creators: a change of grants may stop some (docs/design.md, "Webhooks").
  const creatorCheck = new CreatorCheck({
    db: database.db,
    grantsOf: (uid) => grantsCache.get(uid),
    clock,
    onError: (e) => log.error({ err: e }, "checking subscriptions' creators failed; retrying at the next change of grants"),
  });
  const grantsChanged = () => {
    grantsCache.invalidate();
    creatorCheck.changed();
  };
  subsystems.add("grants LISTEN", await database.listen(GRANTS_CHANGED_CHANNEL, grantsChanged, grantsChanged), (unlisten) => unlisten());
  // What changed while no replica was listening.
  creatorCheck.changed();
  subsystems.add("creator check", creatorCheck, (c) => c.close());

  const dispatcher = new WebhookDispatcher({
    db: database.db,
    maxInFlight: WEBHOOKS_IN_FLIGHT,
    fetch: webhookEgress.fetch,
    secrets,
    grantsOf: (uid) => grantsCache.get(uid),
    clock,
    backoffMs: config.events.backoffMs,
    // Longer than any delivery can take, so a live replica's claim is never taken over.
    leaseMs: 2 * config.events.timeoutMs + 1000,
    onError: (e) => log.error({ err: e }, "webhook dispatch failed; retrying"),
    onDeliveryError: (sink, e) => log.info({ sink: new URL(sink).origin, err: e }, "webhook delivery failed; it will be retried"),
  });
  // "Events were recorded" and "deliveries were written", from any replica: the watchers' hub and
  // the dispatcher look. A (re)established LISTEN makes them look too, for what was announced while
  // it was down, and ends the pause their failed looks set while the database was away.
  const lookForEvents = () => eventHub.wake();
  const lookForDeliveries = () => dispatcher.notify();
  subsystems.add("events LISTEN", await database.listen(EVENTS_CHANNEL, lookForEvents, () => eventHub.resume()), (unlisten) => unlisten());
  subsystems.add("deliveries LISTEN", await database.listen(DELIVERIES_CHANNEL, lookForDeliveries, () => dispatcher.resume()), (unlisten) =>
    unlisten(),
  );
  dispatcher.start();
  // Early: it claims nothing more as the shutdown begins, and the deliveries in flight get the
  // same grace as requests, beside them; one unfinished then is released for the next replica to send.
  subsystems.add("webhook dispatcher", dispatcher, (d) => d.stop(graceMs), { early: true });
  const retention = new EventRetention({
    db: database.db,
    clock,
    retentionMs: config.events.retentionMs,
    onError: (e) => log.error({ err: e }, "event pruning failed"),
  });
  retention.start();
  // Early: a run under way stops after its current batch.
  subsystems.add("event retention", retention, (r) => r.stop(), { early: true });
  if (database.kind === "pglite") {
    // PGlite has no autovacuum: the store's own (docs/design.md, "Storage").
    const upkeep = new PgliteUpkeep({
      db: database.db,
      onError: (e) => log.error({ err: e }, "embedded store upkeep failed"),
      onVacuumed: (table, analyzed, ms) => log.debug({ table, analyzed, ms: Math.round(ms) }, "embedded store table vacuumed"),
    });
    upkeep.start();
    subsystems.add("embedded store upkeep", upkeep, (u) => u.stop(), { early: true });
  }

  // Built from the subsystems above, with nothing of its own to close.
  const handler = requestHandler({
    config,
    urls,
    log,
    clock,
    metrics,
    database,
    secrets,
    tokens,
    keys,
    registryKeys,
    grantsCache,
    authorizer,
    ctx,
    egress,
    descriptors,
    jsonRenderer,
    ready,
    shutdown: shutdown.signal,
    registryNotificationSecret,
  });

  let adminToken: MintedToken | undefined;
  let adminTokenPath: string | undefined;
  if (config.bootstrap) {
    const issuedAt = clock();
    const boot = await bootstrapAdminToken(database.db, tokens, urls.baseUrl, clock);
    adminToken = boot.token;
    adminTokenPath = await writeAdminToken(config.dataDir, boot.token);
    log.info(
      { path: adminTokenPath, identity: boot.identityUid },
      "admin token written (valid one hour, renewed every half hour while running)",
    );
    // The file stays valid while the server runs (docs/operations.md, "Admin token").
    const adminTokenRenewal = new AdminTokenRenewal(
      {
        dataDir: config.dataDir,
        tokens,
        identityUid: boot.identityUid,
        audience: urls.baseUrl,
        clock,
        checkEveryMs: opts.adminTokenCheckMs ?? 60_000,
        onRenewed: (token) => log.info({ path: adminTokenPath, expiry: token.expiry }, "admin token renewed"),
        onError: (e) => log.error({ err: e }, "admin token renewal failed; retrying at the next check"),
      },
      boot.token,
      issuedAt,
    );
    adminTokenRenewal.start();
    // Early: the file is not renewed while requests drain.
    subsystems.add("admin token renewal", adminTokenRenewal, (r) => r.stop(), { early: true });
  }

  listener.serve(handler);
  // Added last, so drained first: requests finish (for graceMs) before anything they use closes.
  subsystems.add("serving", listener, drain);
  log.info({ url: urls.baseUrl, port: listener.port, database: database.kind }, "serving gRPC, gRPC-Web, Connect and REST");

  return {
    port: listener.port,
    urls,
    database,
    tokens,
    secrets,
    adminToken,
    adminTokenPath,
    registry: { files: registryFiles.files, keys: registryKeys },
    eventHub,
    dispatcher,
    async close() {
      await subsystems.close();
      return drain();
    },
  };
}

/** What the request handler is built from: the subsystems startApp started before it. */
interface HandlerDeps {
  config: Config;
  urls: ResolvedUrls;
  log: Logger;
  clock: () => Date;
  metrics: Metrics;
  database: DatabaseHandle;
  secrets: SecretBox;
  tokens: TokenService;
  keys: SigningKeys;
  registryKeys: RegistryKeys;
  grantsCache: GrantsCache;
  authorizer: Authorizer;
  ctx: ServiceContext;
  egress: Egress;
  descriptors: (typeof API_SERVICES)[number]["service"][];
  jsonRenderer: ReturnType<typeof createJsonRenderer>;
  ready: () => Promise<boolean>;
  /** Aborted as the shutdown begins. */
  shutdown: AbortSignal;
  registryNotificationSecret: string;
}

/** The one handler the listener serves: every protocol, the plain routes, CORS, the access log. */
function requestHandler(deps: HandlerDeps): RequestHandler {
  const { config, urls, log, clock, metrics, database, secrets, tokens, keys, registryKeys, grantsCache, authorizer, ctx, egress } = deps;
  const { descriptors, jsonRenderer, ready, shutdown, registryNotificationSecret } = deps;
  const accessLog = new AccessLog(log, (record, status, seconds) => metrics.request(record, status, seconds));
  // Built once: the Connect router registers them, REST calls them directly.
  const implementations = API_SERVICES.map((s) => s.implement(ctx));
  const routes = (router: ConnectRouter) => {
    for (const bound of implementations) bound.register(router);
    // Anyone may call these: their messages are read up to ANONYMOUS_BODY_BYTES (docs/security.md, "Connections").
    const publicOptions = { readMaxBytes: ANONYMOUS_BODY_BYTES };
    // The token exchange as an RPC: the same implementation as /sts/exchange (docs/design.md, "Tokens and access").
    router.service(SecurityTokenService, exchangeRpc({ exchange, onOutcome: (o) => metrics.tokenExchange(o) }), publicOptions);
    const served = [...descriptors, SecurityTokenService];
    registerReflection(router, served, publicOptions);
    registerHealth(
      router,
      { status: async () => ((await ready()) ? "SERVING" : "NOT_SERVING") },
      served.map((s) => s.typeName),
      shutdown,
      undefined,
      publicOptions,
    );
  };
  const pipeline = new CallPipeline(
    {
      tokens,
      audiences: [urls.baseUrl, urls.registryAudience],
      authorizer,
      serviceDomain: urls.serviceDomain,
      onInternalError: (cause) => log.error({ err: cause }, "internal error"),
      afterWrite: () => ctx.events.announce(),
    },
    implementations,
  );
  const routerOptions = { interceptors: [pipeline.interceptor()], readMaxBytes: MAX_MESSAGE_BYTES, writeMaxBytes: 16 * MAX_MESSAGE_BYTES };

  const rest = createRestHandler({
    services: descriptors,
    invoke: pipeline.call,
    contextValues: (req) => accessLog.contextValues(req),
    serviceDomain: urls.serviceDomain,
    maxBodyBytes: MAX_MESSAGE_BYTES,
    admitBody: (method, req) => pipeline.admitBody(method, req, () => accessLog.contextValues(req)),
    onInternalError: (cause) => log.error({ err: cause }, "internal error in REST layer"),
  });
  const budgets = new OutboundBudgets(egress, config.outbound);
  const issuers = new OidcIssuers({ egress, clock });
  const exchange: TokenExchangeDeps = {
    db: database.db,
    tokens,
    issuers,
    budgets,
    limits: new ExchangeLimits({ perAddress: config.outbound.exchangesPerAddress, perIdentity: config.outbound.exchangesPerIdentity }),
    audiences: [urls.baseUrl, urls.registryAudience],
    authUrl: urls.authUrl,
    clock,
    onRejected: (reason) => log.info({ reason }, "token exchange rejected"),
    events: ctx.events,
  };
  // The image registry's token endpoint and notifications (docs/design.md, "The image registry").
  const registryRoutes = new Map([
    [
      REGISTRY_TOKEN_PATH,
      registryTokenRoute({
        db: database.db,
        tokens,
        audiences: [urls.baseUrl, urls.registryAudience],
        service: urls.registryAudience,
        authUrl: urls.authUrl,
        exchange,
        grantsOf: (uid) => grantsCache.get(uid),
        signer: registryKeys,
        limit: new PerMinuteLimit(config.registry.tokensPerAddress, "too many registry token requests from this address"),
        clock,
        onRefused: (reason) => log.info({ reason }, "registry token refused"),
        onInternalError: (cause) => log.error({ err: cause }, "internal error in the registry token endpoint"),
        onOutcome: (outcome) => metrics.registryToken(outcome),
      }),
    ],
    [
      REGISTRY_NOTIFICATIONS_PATH,
      registryNotificationsRoute({
        db: database.db,
        clock,
        events: ctx.events,
        secrets: ctx.secrets,
        egress: ctx.egress,
        grantsOf: (uid) => grantsCache.get(uid),
        secret: registryNotificationSecret,
        log: (message, fields) => log.warn(fields, message),
      }),
    ],
  ]);
  const plain = plainRoutes({
    keys,
    issuer: urls.authUrl,
    ready,
    exchange,
    errorDomain: `iam.${urls.serviceDomain}`,
    serviceDomain: urls.serviceDomain,
    metrics,
    onInternalError: (cause) => log.error({ err: cause }, "internal error in an HTTP route"),
    // Built here, once, from the same descriptors as the REST routes (docs/rest.md, "OpenAPI and the docs page").
    docRoutes: apiDocRoutes({ services: descriptors }),
    authRoutes: new Map([
      ...loginRoutes({
        db: database.db,
        secrets,
        tokens,
        clock,
        authUrl: urls.authUrl,
        baseUrl: urls.baseUrl,
        upstream: config.oidc,
        devLogin: config.devLogin,
        devLoginLocalOnly: config.devLoginLocalOnly,
        trustedIdpHosts: config.trustedIdpHosts,
        admins: config.platformAdmins,
        egress,
        budgets,
        rate: new PerMinuteLimit(config.outbound.loginsPerAddress, "too many sign-in attempts from this address"),
        log,
        events: ctx.events,
        grantsChanged: () => grantsCache.invalidate(),
      }),
      ...registryRoutes,
    ]),
  });
  const rpc = rpcHandler({
    routes,
    ...routerOptions,
    fallback: (req, res) => void rest(req, res).catch((e: unknown) => log.error({ err: e }, "REST handler failed")),
    onError: (e) => log.error({ err: e }, "RPC handler failed"),
    contextValues: (req) => accessLog.contextValues(req),
    renderJson: (schema, message) => JSON.stringify(jsonRenderer.render(schema, message)),
    direct: pipeline.call,
    directs: (method) => pipeline.canCall(method),
    admitBody: (method, req) => pipeline.admitBody(method, req, () => accessLog.contextValues(req)),
  });
  // Browser origins (docs/security.md, "Browser origins (CORS)"): the API only, never sign-in or ops routes.
  const cors = corsHandler({
    origins: config.corsOrigins,
    services: descriptors,
    authPrefix: withoutTrailingSlash(new URL(urls.authUrl).pathname),
  });
  return (req, res) => {
    accessLog.begin(req, res);
    try {
      // After begin(), so a preflight gets a request id and its log line like any request.
      if (cors(req, res)) return;
      const served = plain(req, res);
      if (served) served.catch((e: unknown) => log.error({ err: e }, "route failed"));
      else rpc(req, res);
    } catch (e) {
      // Thrown before any promise could catch it: one request fails, not the process.
      log.error({ err: e }, "request handler threw");
      if (res.headersSent) res.destroy();
      else {
        res.statusCode = 500;
        res.end();
      }
    }
  };
}
