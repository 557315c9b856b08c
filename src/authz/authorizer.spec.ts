import { createContextValues } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ThingService } from "../../gen/resttest/v1/kitchen_sink_pb.js";
import { principalKey } from "../auth/index.js";
import type { Database } from "../db/index.js";
import { permissionDenied } from "../errors/index.js";
import { Authorizer } from "./authorizer.js";
import { GrantsCache } from "./grants-cache.js";

describe("Authorizer", () => {
  it("refuses a method that declares no authorization (fail closed), before touching the database", async () => {
    let reached = false;
    const untouchable = new Proxy({}, { get: () => { throw new Error("database used"); } }) as Database;
    const authorizer = new Authorizer({
      db: untouchable,
      grants: new GrantsCache(() => Promise.reject(new Error("grants loaded")), () => new Date()),
      clearGrantsAfterWrites: true,
      registryAudience: "http://api/registry",
      orgCreation: "people",
    });
    const values = createContextValues();
    values.set(principalKey, { identityUid: "someone", audience: "http://api" });
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
});
