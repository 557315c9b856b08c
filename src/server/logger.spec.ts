import { closeSync, openSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger, LogDestination } from "./logger.js";

const dirs: string[] = [];
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

describe("LogDestination", () => {
  it("writes batched lines to its descriptor at flush", async () => {
    const dir = await mkdtemp(join(tmpdir(), "platform-log-"));
    dirs.push(dir);
    const path = join(dir, "log");
    const fd = openSync(path, "w");
    const destination = new LogDestination(fd);
    const log = createLogger("info", destination);
    log.info("one");
    log.info("two");
    destination.flush();
    closeSync(fd);
    expect(readFileSync(path, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l).msg)).toEqual(["one", "two"]);
    expect(destination.dropped).toBe(0);
  });

  it("drops and counts the lines a failing descriptor (EBADF) cannot take, without throwing", () => {
    // Open for reading only: every write fails with EBADF.
    const fd = openSync("/dev/null", "r");
    try {
      const destination = new LogDestination(fd, 64);
      const log = createLogger("info", destination);
      // Each line passes the 64-character batch: written (and failing) as it is logged.
      for (let i = 0; i < 5; i++) expect(() => log.info({ i, padding: "x".repeat(64) }, "a line")).not.toThrow();
      destination.flush();
      expect(destination.dropped).toBe(5);
    } finally {
      closeSync(fd);
    }
  });
});
