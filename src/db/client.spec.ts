import { describe, expect, it } from "vitest";
import { reconnectDelaySeconds } from "./client.js";

describe("reconnectDelaySeconds (postgres.js backoff)", () => {
  it("starts short, grows, and never exceeds two seconds, however many attempts failed", () => {
    for (let i = 0; i < 200; i++) {
      expect(reconnectDelaySeconds(0)).toBeLessThanOrEqual(0.05);
      expect(reconnectDelaySeconds(1)).toBeGreaterThanOrEqual(0.05);
      for (const failures of [5, 10, 50, 1_000]) {
        const d = reconnectDelaySeconds(failures);
        expect(d).toBeGreaterThanOrEqual(0.5);
        expect(d).toBeLessThanOrEqual(2);
      }
    }
  });
});
