import { describe, expect, it } from "vitest";
import { CallHeader } from "./call.js";

describe("CallHeader", () => {
  // What the pipeline authenticates with must be exactly what fetch Headers would give.
  it("gives the Authorization value fetch Headers give, for plain and odd values alike, and makes Headers only on demand", () => {
    const values = [
      "Bearer abc.def.ghi",
      "Bearer  two  spaces",
      "Bearer\ttab",
      " padded ",
      "\tBearer x\t",
      "Bearer caf\u00e9",
      "\u00ff",
      "",
      "x",
      "Bearer \u0080\u00a0",
    ];
    for (const value of values) {
      let made = 0;
      const header = new CallHeader({ authorization: value }, (node) => {
        made++;
        return new Headers({ authorization: node.authorization as string });
      });
      expect(header.authorization, JSON.stringify(value)).toBe(new Headers({ authorization: value }).get("authorization"));
      expect(header.headers.get("authorization")).toBe(header.authorization);
      expect(made).toBe(1);
    }
    const none = new CallHeader({}, () => new Headers());
    expect(none.authorization).toBeNull();
  });
});
