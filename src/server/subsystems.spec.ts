import { describe, expect, it } from "vitest";
import { Subsystems } from "./subsystems.js";

describe("Subsystems", () => {
  it("closes the last added first, each awaited, and begins the early ones' closes before awaiting any", async () => {
    const steps: string[] = [];
    const failed: string[] = [];
    const subsystems = new Subsystems((name) => failed.push(name));
    const closing = (name: string, ms: number) => async () => {
      steps.push(`${name} begins`);
      await new Promise((resolve) => setTimeout(resolve, ms));
      steps.push(`${name} ends`);
    };
    expect(subsystems.add("database", "db", closing("database", 0))).toBe("db");
    subsystems.add("hub", {}, closing("hub", 30), { early: true });
    subsystems.add("recorder", {}, closing("recorder", 0));
    subsystems.add("serving", {}, closing("serving", 10));
    await subsystems.close();
    expect(steps).toEqual([
      "hub begins",
      "serving begins",
      "serving ends",
      "recorder begins",
      "recorder ends",
      "hub ends",
      "database begins",
      "database ends",
    ]);
    expect(failed).toEqual([]);
    // Closed once: a second close() has nothing left to close.
    await subsystems.close();
    expect(steps).toHaveLength(8);
  });

  it("reports a close that fails, closes the rest, then rejects with the first failure", async () => {
    const closed: string[] = [];
    const failed: [string, unknown][] = [];
    const subsystems = new Subsystems((name, e) => failed.push([name, e]));
    subsystems.add("database", {}, () => void closed.push("database"));
    subsystems.add("hub", {}, () => Promise.reject(new Error("hub")), { early: true });
    subsystems.add("egress", {}, () => {
      throw new Error("egress");
    });
    subsystems.add("serving", {}, () => void closed.push("serving"));
    await expect(subsystems.close()).rejects.toThrow("hub");
    expect(closed).toEqual(["serving", "database"]);
    expect(failed.map(([name, e]) => [name, (e as Error).message])).toEqual([
      ["hub", "hub"],
      ["egress", "egress"],
    ]);
  });
});
