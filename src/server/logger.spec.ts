import { execFileSync } from "node:child_process";
import { closeSync, constants, openSync, readFileSync, readSync } from "node:fs";
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
    expect(
      readFileSync(path, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l).msg),
    ).toEqual(["one", "two"]);
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

  it("never blocks on a full pipe nobody reads: keeps the oldest 1 MiB of whole lines, drops and counts the newest past it, and writes what it kept once the pipe drains", async () => {
    const dir = await mkdtemp(join(tmpdir(), "platform-log-"));
    dirs.push(dir);
    const fifo = join(dir, "fifo");
    execFileSync("mkfifo", [fifo]);
    // Both ends on one non-blocking descriptor: a pipe (64 KiB on Linux) whose reader is this test, not reading yet.
    const fd = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
    try {
      const destination = new LogDestination(fd);
      const log = createLogger("info", destination);
      const lines = 3000;
      // ~1 KiB a line: 3 MiB in all, nearly three times the buffer on top of the pipe.
      for (let i = 0; i < lines; i++) log.info({ i, padding: "x".repeat(1000) }, "a line");
      destination.flush();
      const dropped = destination.dropped;
      expect(dropped).toBeGreaterThan(1500);
      expect(dropped).toBeLessThan(2000);
      // The reader catches up: each flush writes what it kept, oldest first.
      let read = "";
      const chunk = Buffer.alloc(64 * 1024);
      for (let rounds = 0; rounds < 100; rounds++) {
        let n = 0;
        try {
          n = readSync(fd, chunk);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "EAGAIN") throw e;
        }
        read += chunk.subarray(0, n).toString();
        destination.flush();
        if (n === 0) break;
      }
      const got = read
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l).i as number);
      // Whole lines only, none twice, the oldest kept: every line is either delivered or counted.
      expect(got).toEqual(Array.from({ length: lines - dropped }, (_, i) => i));
      expect(destination.dropped).toBe(dropped);
    } finally {
      closeSync(fd);
    }
  });
});
