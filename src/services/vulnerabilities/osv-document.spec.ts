import { describe, expect, it } from "vitest";
import { advisoryUid, canonicalTime, parseTime } from "./osv-document.js";

describe("advisoryUid", () => {
  it("keeps a single URL-safe id and hashes any other", () => {
    expect(advisoryUid("GHSA-jfh8-c2jp-5v3q")).toBe("GHSA-jfh8-c2jp-5v3q");
    expect(advisoryUid("CVE-2024-1234")).toBe("CVE-2024-1234");
    for (const id of ["RHSA-2024:1234", "a/b", "x_y", "-lead", "Z".repeat(129)]) {
      expect(advisoryUid(id), id).toMatch(/^osv_[0-9a-f]{32}$/);
      expect(advisoryUid(id)).toBe(advisoryUid(id));
    }
    expect(advisoryUid("a/b")).not.toBe(advisoryUid("a:b"));
  });
});

describe("canonicalTime", () => {
  it("is fixed-width UTC with nanoseconds, so text order is time order", () => {
    const times = [
      "0001-01-01T00:00:00Z",
      "1969-12-31T23:59:59.999999999Z",
      "2024-01-01T01:00:00+02:00",
      "2024-01-01T00:00:00.5Z",
      "9999-12-31T23:59:59Z",
    ];
    const canonical = times.map((t) => canonicalTime(parseTime(t)));
    expect(canonical).toEqual([
      "0001-01-01T00:00:00.000000000Z",
      "1969-12-31T23:59:59.999999999Z",
      "2023-12-31T23:00:00.000000000Z",
      "2024-01-01T00:00:00.500000000Z",
      "9999-12-31T23:59:59.000000000Z",
    ]);
    expect([...canonical].sort()).toEqual(canonical);
    expect(canonical.map((c) => parseTime(c))).toEqual(times.map((t) => parseTime(t)));
  });
});
