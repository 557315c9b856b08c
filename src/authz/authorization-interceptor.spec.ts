import { Code, ConnectError, createClient, createRouterTransport, type Interceptor } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ThingService } from "../../gen/resttest/v1/kitchen_sink_pb.js";
import { principalKey } from "../auth/index.js";
import type { Database } from "../db/index.js";
import { authorizationInterceptor } from "./authorization-interceptor.js";
import { GrantsCache } from "./grants-cache.js";

// Stands in for the authentication interceptor.
const authenticated: Interceptor = (next) => (req) => {
  req.contextValues.set(principalKey, { identityUid: "someone", audience: "http://api" });
  return next(req);
};

describe("authorizationInterceptor", () => {
  it("refuses a method that declares no authorization (fail closed), before touching the database", async () => {
    let reached = false;
    const untouchable = new Proxy({}, { get: () => { throw new Error("database used"); } }) as Database;
    const transport = createRouterTransport(
      (router) =>
        router.service(ThingService, {
          getThing: (req) => {
            reached = true;
            return req;
          },
        }),
      { router: { interceptors: [authenticated, authorizationInterceptor({ db: untouchable, grants: new GrantsCache(() => Promise.reject(new Error("grants loaded")), () => new Date()), registryAudience: "http://api/registry", orgCreation: "people" })] } },
    );
    const err = await createClient(ThingService, transport)
      .getThing({ name: "x" })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(err?.code).toBe(Code.PermissionDenied);
    expect(err?.rawMessage).toMatch(/declares no authorization/);
    expect(reached).toBe(false);
  });
});
