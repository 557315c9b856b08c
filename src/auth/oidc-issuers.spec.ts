import { afterAll, describe, expect, it } from "vitest";
import { Egress, EgressError, type EgressBudget, type EgressFailure } from "../egress/index.js";
import { ISSUER_FAILURE_TTL_MS, OidcIssuers } from "./oidc-issuers.js";

describe("OidcIssuers: failures are remembered per issuer", () => {
  const egress = new Egress({ allowInsecure: true });
  afterAll(() => egress.close());
  let now = Date.parse("2026-11-26T10:00:00Z");
  const issuers = new OidcIssuers({ egress, clock: () => new Date(now) });

  /** A budget whose every fetch fails with `failure`, counting the fetches. */
  function failing(failure: EgressFailure): EgressBudget & { calls: number } {
    const budget = {
      key: "test",
      maxInFlight: 1,
      calls: 0,
      fetch: () => Promise.reject(new Error("unused")),
      fetchJson: async () => {
        budget.calls++;
        throw new EgressError(failure, `GET …: ${failure}`);
      },
      within: () => budget,
    };
    return budget;
  }

  it("an issuer that failed is not contacted again until ISSUER_FAILURE_TTL_MS has passed", async () => {
    const budget = failing("timeout");
    const issuer = "http://127.0.0.1:1/slow";
    await expect(issuers.verify("x.y.z", issuer, budget)).rejects.toThrow(/timeout/);
    expect(budget.calls).toBe(1);
    await expect(issuers.verify("x.y.z", issuer, budget)).rejects.toThrow(
      /failed within the last 30 s \(not contacted again yet\): GET …: timeout/,
    );
    expect(budget.calls).toBe(1);
    // Another issuer is its own.
    await expect(issuers.verify("x.y.z", "http://127.0.0.1:1/other", budget)).rejects.toThrow(/timeout/);
    expect(budget.calls).toBe(2);
    now += ISSUER_FAILURE_TTL_MS + 1;
    await expect(issuers.verify("x.y.z", issuer, budget)).rejects.toThrow(/timeout/);
    expect(budget.calls).toBe(3);
  });

  it("a full budget is not remembered: it says nothing about the issuer", async () => {
    const budget = failing("busy");
    const issuer = "http://127.0.0.1:1/busy";
    await expect(issuers.verify("x.y.z", issuer, budget)).rejects.toThrow(/busy/);
    await expect(issuers.verify("x.y.z", issuer, budget)).rejects.toThrow(/busy/);
    expect(budget.calls).toBe(2);
  });
});
