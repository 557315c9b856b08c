import { ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { parseOrderBy } from "./order-by.js";

const allowed = ["uid", "name", "create_time", "update_time"];

describe("parseOrderBy", () => {
  it.each([
    ["", { field: "uid", direction: "asc" }],
    ["name", { field: "name", direction: "asc" }],
    ["name desc", { field: "name", direction: "desc" }],
    ["  name   DESC ", { field: "name", direction: "desc" }],
    ["created_at desc", { field: "create_time", direction: "desc" }],
    ["createTime", { field: "create_time", direction: "asc" }],
    ["updated_at asc", { field: "update_time", direction: "asc" }],
  ])("parses %j", (raw, expected) => {
    expect(parseOrderBy(raw, allowed)).toEqual(expected);
  });

  it.each(["colour", "name sideways", "name desc extra", "name,uid"])("rejects %j on order_by", (raw) => {
    try {
      parseOrderBy(raw, allowed);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ConnectError);
      expect((e as ConnectError).rawMessage).toMatch(/^Invalid argument: order_by: /);
    }
  });

  it("rejects a field the resource does not have", () => {
    expect(() => parseOrderBy("update_time", ["uid", "name", "create_time"])).toThrow(/order_by/);
  });
});
