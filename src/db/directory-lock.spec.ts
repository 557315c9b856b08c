import { mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DirectoryInUseError, lockDirectory, type DirectoryLock } from "./directory-lock.js";

const held: DirectoryLock[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const lock of held.splice(0)) await lock.release();
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function newDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "platform-lock-"));
  dirs.push(dir);
  return dir;
}

describe("lockDirectory", () => {
  it("refuses a second hold on a directory, naming the holder's pid and port", async () => {
    const dir = await newDir();
    const first = await lockDirectory(dir);
    held.push(first);
    first.describe({ port: 4242 });
    const second = await lockDirectory(dir).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(second).toBeInstanceOf(DirectoryInUseError);
    expect((second as DirectoryInUseError).holder).toEqual({ pid: process.pid, port: 4242 });
    expect((second as Error).message).toContain(`process ${process.pid} (serving on port 4242)`);
    expect((second as Error).message).toContain(dir);
  });

  it("is the same lock through a symbolic link to the directory", async () => {
    const dir = await newDir();
    const link = join(await newDir(), "link");
    await symlink(dir, link);
    held.push(await lockDirectory(dir));
    await expect(lockDirectory(link)).rejects.toBeInstanceOf(DirectoryInUseError);
  });

  it("can be taken again once released, and other directories are not affected", async () => {
    const dir = await newDir();
    const first = await lockDirectory(dir);
    held.push(await lockDirectory(await newDir()));
    await first.release();
    held.push(await lockDirectory(dir));
  });
});
