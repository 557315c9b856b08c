import { createContextValues } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { EventsService } from "../../gen/platform/events/v2beta1/events_pb.js";
import { ThingService } from "../../gen/resttest/v1/kitchen_sink_pb.js";
import { principalKey } from "../caller/index.js";
import type { Database } from "../db/index.js";
import { permissionDenied, unauthenticated } from "../errors/index.js";
import { Authorizer } from "./authorizer.js";
import { GrantsCache } from "./grants-cache.js";
import { Grants } from "./grants.js";

describe("Authorizer", () => {
  it("refuses a method that declares no authorization (fail closed), before touching the database", async () => {
    let reached = false;
    const untouchable = new Proxy(
      {},
      {
        get: () => {
          throw new Error("database used");
        },
      },
    ) as Database;
    const authorizer = new Authorizer({
      db: untouchable,
      grants: new GrantsCache(
        () => Promise.reject(new Error("grants loaded")),
        () => new Date(),
      ),
      clearGrantsAfterWrites: true,
      registryAudience: "http://api/registry",
      orgCreation: "people",
      founderIssuers: [],
      clock: () => new Date(),
    });
    const values = createContextValues();
    values.set(principalKey, { identityUid: "someone", audience: "http://api", expiry: new Date(Date.now() + 3_600_000) });
    const method = ThingService.method.getThing;
    const err = await authorizer
      .authorize({ service: ThingService, method, message: { name: "x" }, values }, async () => {
        reached = true;
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toMatchObject({ code: permissionDenied("x").code });
    expect((err as Error).message).toMatch(/declares no authorization/);
    expect(reached).toBe(false);
  });

  describe("visibilityNow (a stream's access, checked again as it runs)", () => {
    const T0 = new Date("2030-01-01T00:00:00Z");
    const viewerAt = (...groups: string[]) => new Grants(groups.map((groupUid) => ({ groupUid, capabilities: new Set(["events.list"]) })));
    function setup(grants: Grants) {
      let now = T0;
      let loads = 0;
      const authorizer = new Authorizer({
        db: {} as Database,
        grants: new GrantsCache(
          async () => (loads++, grants),
          () => now,
        ),
        clearGrantsAfterWrites: false,
        registryAudience: "http://api/registry",
        orgCreation: "people",
        founderIssuers: [],
        clock: () => now,
      });
      const principal = { identityUid: "someone", audience: "http://api", expiry: new Date(T0.getTime() + 60_000) };
      const check = () =>
        authorizer.visibilityNow(principal, EventsService.method.watchEvents).then(
          (v) => v,
          (e: unknown) => e,
        );
      return { authorizer, principal, check, setNow: (ms: number) => (now = new Date(T0.getTime() + ms)), loads: () => loads };
    }

    it("answers the caller's visibility for the method's capability while the token is valid", async () => {
      const { check, setNow } = setup(
        new Grants([...viewerAt("b/c", "a").grants, { groupUid: "x", capabilities: new Set(["repo.list"]) }]),
      );
      expect(await check()).toEqual({ all: false, roots: ["a", "b/c"] });
      setNow(59_999);
      expect(await check()).toEqual({ all: false, roots: ["a", "b/c"] });
    });

    it("ends the stream with UNAUTHENTICATED once the token has expired, without loading grants", async () => {
      const { check, setNow, loads } = setup(viewerAt("a"));
      setNow(60_000);
      const err = await check();
      expect(err).toMatchObject({ code: unauthenticated("x").code });
      expect((err as Error).message).toMatch(/expired/);
      expect(loads()).toBe(0);
    });

    it("ends it with UNAUTHENTICATED when the identity is gone, and PERMISSION_DENIED when nothing is visible", async () => {
      const gone = await setup(new Grants(viewerAt("a").grants, { exists: false, rootLevel: false, issuer: "" })).check();
      expect(gone).toMatchObject({ code: unauthenticated("x").code });
      expect((gone as Error).message).toMatch(/no longer exists/);
      const none = await setup(new Grants([{ groupUid: "a", capabilities: new Set(["repo.list"]) }])).check();
      expect(none).toMatchObject({ code: permissionDenied("x").code });
      expect((none as Error).message).toMatch(/holds events\.list nowhere/);
    });

    it("refuses a method that is not a list", async () => {
      const { authorizer, principal } = setup(viewerAt("a"));
      await expect(authorizer.visibilityNow(principal, ThingService.method.getThing)).rejects.toMatchObject({
        code: permissionDenied("x").code,
      });
    });
  });
});
