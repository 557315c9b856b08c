// The two programs the registry tests drive: CNCF distribution (Debian package docker-registry,
// 2.8) and skopeo (Debian package skopeo, 1.9). A machine that has them on PATH runs those;
// one that has not (CI, a fresh clone) gets them from Debian's packages without installing
// anything: `apt-get download` and `dpkg-deb -x` into node_modules/.cache, together with the
// shared libraries the machine lacks (skopeo's libgpgme), which the programs then find through
// LD_LIBRARY_PATH. registry-tools-setup.ts does this once per run (docs/contributing.md,
// "Registry tests").
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { constants, existsSync } from "node:fs";
import { access, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { alive } from "./scratch.js";

/** Where the unpacked packages, package lists of our own and the skopeo configuration live. */
export const DEFAULT_CACHE_ROOT = fileURLToPath(new URL("../../node_modules/.cache/platform-registry-tools", import.meta.url));
/** Set by registry-tools-setup.ts for the workers: JSON, `{ tools }` or `{ error }`. */
export const REGISTRY_TOOLS_VARIABLE = "PLATFORM_TEST_REGISTRY_TOOLS";

/** The programs, and the Debian package each comes in. */
const TOOLS = [
  { key: "registry", binary: "docker-registry", debianPackage: "docker-registry" },
  { key: "skopeo", binary: "skopeo", debianPackage: "skopeo" },
] as const;

/** skopeo refuses to copy without a signature policy; the tests' images are unsigned and local. */
const POLICY = `${JSON.stringify({ default: [{ type: "insecureAcceptAnything" }] })}\n`;
/**
 * skopeo runs without a registries.conf, but reads the machine's /etc/containers/registries.conf
 * when there is one (mirrors, blocked registries, short names): an empty one of our own keeps a
 * developer's settings out of the tests.
 */
const REGISTRIES_CONF = "# Empty on purpose: the tests name every registry in full (test/support/registry-tools.ts).\n";

/** Bounds: a dependency walk that never ends, a download that hangs, a run that holds the lock forever. */
const MAX_PACKAGES = 32;
const APT_TIMEOUT_MS = 5 * 60_000;
const LOCK_WAIT_MS = 10 * 60_000;
const LOCK_POLL_MS = 200;
const LOCK_UNOWNED_MS = 30_000;

export interface ObtainedTools {
  /** Absolute path of docker-registry. */
  registry: string;
  /** Absolute path of skopeo. */
  skopeo: string;
  /** The signature policy skopeo is given (`--policy`). */
  policy: string;
  /** The (empty) registries.conf skopeo reads instead of the machine's. */
  registriesConf: string;
  /** Directories of unpacked shared libraries, for LD_LIBRARY_PATH; empty when nothing was unpacked. */
  libraryDirs: string[];
  /** The Debian packages unpacked, as name=version; empty when both programs came from PATH. */
  packages: string[];
  /** What `--version` printed (first line). */
  versions: { registry: string; skopeo: string };
}

export interface RegistryTools extends ObtainedTools {
  /** The environment to run both programs with: this process's, plus LD_LIBRARY_PATH, CONTAINERS_REGISTRIES_CONF and skopeo's data directory (toolsEnv). */
  env: NodeJS.ProcessEnv;
}

export interface ObtainOptions {
  /** Default DEFAULT_CACHE_ROOT. */
  cacheRoot?: string;
  /** The PATH searched for installed programs; default this process's. "" looks nowhere. */
  searchPath?: string;
  /** "private": never the machine's package lists, only lists of our own (kept in the cache). Default "auto". */
  lists?: "auto" | "private";
  /** Told what is being downloaded (a first run takes seconds). */
  log?: (line: string) => void;
}

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end; rejects only when it cannot be started or runs past its time. */
function run(
  file: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      {
        cwd: options.cwd,
        env: options.env ?? process.env,
        timeout: options.timeoutMs ?? 60_000,
        maxBuffer: 64 * 1024 * 1024,
        killSignal: "SIGKILL",
      },
      (error, stdout, stderr) => {
        const e = error as (NodeJS.ErrnoException & { killed?: boolean; code?: unknown }) | null;
        if (e && typeof e.code === "string") return reject(new Error(`${file} could not be run: ${e.message}`));
        if (e?.killed) return reject(new Error(`${file} ${args.join(" ")} ran past ${options.timeoutMs ?? 60_000} ms: ${stderr}`));
        resolve({ code: e ? (typeof e.code === "number" ? e.code : null) : 0, stdout, stderr });
      },
    );
  });
}

const describe = (r: RunResult): string =>
  // apt warns on every download as root into a directory its sandbox user cannot write: noise.
  (r.stderr + r.stdout)
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.includes("couldn't be accessed by user '_apt'"))
    .slice(-20)
    .join("\n");

/** `name` as an executable file in one of the PATH directories, or undefined. */
export async function findOnPath(name: string, searchPath: string): Promise<string | undefined> {
  for (const dir of searchPath.split(delimiter)) {
    if (!dir.startsWith("/")) continue; // a relative PATH entry would depend on the working directory
    const candidate = join(dir, name);
    try {
      await access(candidate, constants.X_OK);
      if ((await stat(candidate)).isFile()) return candidate;
    } catch {
      // not there
    }
  }
  return undefined;
}

/**
 * A Depends field as groups of alternatives, names only: "a (>= 1) | b, c:any" → [["a","b"],["c"]].
 * Versions are not compared: a library that is installed but too old shows in ldd's check.
 */
export function parseDepends(field: string): string[][] {
  return field
    .split(",")
    .map((group) =>
      group
        .split("|")
        .map((alt) => alt.trim().split(/[\s(:[]/, 1)[0] ?? "")
        .filter((name) => /^[a-z0-9][a-z0-9+.-]+$/.test(name)),
    )
    .filter((group) => group.length > 0);
}

/** What `ldd` could not resolve: the missing sonames, and whole lines for missing symbol versions. */
export function notFoundInLdd(output: string): string[] {
  const missing: string[] = [];
  for (const line of output.split("\n")) {
    const soname = /^\s*(\S+)\s+=>\s+not found/.exec(line);
    if (soname?.[1]) missing.push(soname[1]);
    else if (line.includes("not found")) missing.push(line.trim());
  }
  return missing;
}

/** Fails, naming every shared library `binary` would not find, with `libraryDirs` on LD_LIBRARY_PATH. */
export async function checkLibraries(binary: string, libraryDirs: string[]): Promise<void> {
  const r = await run("ldd", [binary], { env: libraryEnv(process.env, libraryDirs) });
  // A static executable: nothing to find.
  if (r.code !== 0 && /not a dynamic executable/.test(r.stdout + r.stderr)) return;
  const missing = notFoundInLdd(r.stdout + r.stderr);
  if (missing.length) {
    const where = libraryDirs.length ? `the machine's libraries and ${libraryDirs.join(", ")}` : "the machine's libraries";
    throw new Error(
      `${binary} cannot start: ${missing.join(", ")} not found in ${where}. ` +
        "Install the Debian package that ships it (apt-file search <name>), or add it to what test/support/registry-tools.ts unpacks.",
    );
  }
  if (r.code !== 0) throw new Error(`ldd ${binary} failed: ${describe(r)}`);
}

function libraryEnv(base: NodeJS.ProcessEnv, libraryDirs: string[]): NodeJS.ProcessEnv {
  if (!libraryDirs.length) return base;
  return { ...base, LD_LIBRARY_PATH: [...libraryDirs, base["LD_LIBRARY_PATH"]].filter(Boolean).join(":") };
}

/**
 * The environment to run the programs with, on top of `base`. skopeo run by root keeps a cache
 * of where it saw blobs in /var/lib/containers/cache: a change to the machine, and state carried
 * from one run into the next. Told that it runs rootless (containers/image reads
 * _CONTAINERS_ROOTLESS_UID for that), it keeps it in $XDG_DATA_HOME/containers/cache instead,
 * here `dataHome`: by default in the run's scratch directory (test/support/scratch.ts), removed
 * at its end.
 */
export function toolsEnv(
  tools: ObtainedTools,
  base: NodeJS.ProcessEnv = process.env,
  dataHome = join(tmpdir(), "skopeo-data"),
): NodeJS.ProcessEnv {
  const uid = process.getuid?.() ?? 0;
  return {
    ...libraryEnv(base, tools.libraryDirs),
    CONTAINERS_REGISTRIES_CONF: tools.registriesConf,
    XDG_DATA_HOME: dataHome,
    _CONTAINERS_ROOTLESS_UID: String(uid === 0 ? 1 : uid),
  };
}

// ---- apt: the machine's package lists, or lists of our own ----

interface Apt {
  kind: "system" | "private";
  /** Options for apt-get and apt-cache. */
  args: string[];
  listsDir: string;
  statusFile: string;
}

async function systemApt(): Promise<Apt> {
  const r = await run("apt-config", ["shell", "LISTS", "Dir::State::lists/d", "STATUS", "Dir::State::status/f"]);
  if (r.code !== 0) throw new Error(`apt-config failed (is this Debian?): ${describe(r)}`);
  const value = (name: string) => /^(\w+)='(.*)'$/m.exec(r.stdout.split("\n").find((l) => l.startsWith(`${name}=`)) ?? "")?.[2] ?? "";
  return { kind: "system", args: [], listsDir: value("LISTS"), statusFile: value("STATUS") || "/var/lib/dpkg/status" };
}

/**
 * apt with package lists and a download cache in `cacheRoot`: `apt-get update` with it changes
 * nothing of the machine's. The configuration file drops the machine's post-update hooks
 * (PackageKit, AppStream), which would otherwise run as they do after the machine's own update.
 */
function privateApt(cacheRoot: string, statusFile: string): Apt {
  const base = join(cacheRoot, "apt");
  const listsDir = join(base, "lists");
  const cacheDir = join(base, "cache");
  const conf = join(base, "no-hooks.conf");
  return {
    kind: "private",
    args: ["-c", conf, "-o", `Dir::State::Lists=${listsDir}`, "-o", `Dir::Cache=${cacheDir}`],
    listsDir,
    statusFile,
  };
}

/** The directories and configuration file privateApt's options name (apt makes none of them itself). */
async function preparePrivateApt(cacheRoot: string): Promise<void> {
  const base = join(cacheRoot, "apt");
  await mkdir(join(base, "lists", "partial"), { recursive: true });
  await mkdir(join(base, "cache", "archives", "partial"), { recursive: true });
  await writeFile(
    join(base, "no-hooks.conf"),
    "#clear APT::Update::Pre-Invoke;\n#clear APT::Update::Post-Invoke;\n#clear APT::Update::Post-Invoke-Success;\n",
  );
}

async function hasLists(apt: Apt): Promise<boolean> {
  const names = await readdir(apt.listsDir).catch(() => []);
  return names.some((n) => /_Packages(\.\w+)?$/.test(n));
}

async function aptUpdate(apt: Apt, log: (line: string) => void): Promise<void> {
  log(`apt-get update into ${apt.listsDir} (the machine's own package lists are not used)`);
  const r = await run("apt-get", [...apt.args, "-q", "update"], { timeoutMs: APT_TIMEOUT_MS });
  if (r.code !== 0) throw new Error(`apt-get update into ${apt.listsDir} failed: ${describe(r)}`);
}

/** The lists and the installed packages as they are now: a resolution made under them still holds. */
async function fingerprint(apt: Apt, wanted: string[]): Promise<string> {
  const hash = createHash("sha256").update(`${apt.kind}\n${wanted.join(" ")}\n`);
  for (const name of (await readdir(apt.listsDir).catch(() => [])).sort()) {
    if (!/(_Packages(\.\w+)?|Release)$/.test(name)) continue;
    const s = await stat(join(apt.listsDir, name));
    hash.update(`${name} ${s.size} ${s.mtimeMs}\n`);
  }
  const status = await stat(apt.statusFile).catch(() => undefined);
  hash.update(`status ${status?.size} ${status?.mtimeMs}\n`);
  return hash.digest("hex");
}

interface Stanza {
  name: string;
  version: string;
  depends: string[][];
}

async function aptShow(apt: Apt, names: string[]): Promise<Stanza[]> {
  const r = await run("apt-cache", [...apt.args, "show", "--no-all-versions", ...names]);
  const stanzas: Stanza[] = [];
  for (const block of r.stdout.split(/\n\s*\n/)) {
    const field = (f: string) => new RegExp(`^${f}: *(.*(?:\\n .*)*)`, "m").exec(block)?.[1]?.replace(/\n /g, " ") ?? "";
    const name = field("Package");
    const version = field("Version");
    if (name && version) stanzas.push({ name, version, depends: parseDepends(`${field("Pre-Depends")},${field("Depends")}`) });
  }
  return stanzas;
}

async function installedPackages(names: string[]): Promise<Set<string>> {
  if (!names.length) return new Set();
  // Exits 1 when some are unknown to dpkg; the others are still listed.
  const r = await run("dpkg-query", ["-W", "-f=${Package}\t${Status}\n", "--", ...names]);
  const installed = new Set<string>();
  for (const line of r.stdout.split("\n")) {
    const [name, status] = line.split("\t");
    if (name && status?.endsWith(" installed")) installed.add(name);
  }
  return installed;
}

/**
 * The packages to unpack, as name=version: the wanted ones, and the library packages (lib…) among
 * their dependencies, and theirs, that are not installed. Other dependencies (adduser, gnupg,
 * golang-github-containers-common's configuration files) are not needed to run the programs.
 * Undefined when the lists do not have a wanted package.
 */
async function resolvePackages(apt: Apt, wanted: string[]): Promise<string[] | undefined> {
  const chosen = new Map<string, string>();
  const seen = new Set(wanted);
  let queue = [...wanted];
  while (queue.length) {
    if (seen.size > MAX_PACKAGES)
      throw new Error(`more than ${MAX_PACKAGES} packages to unpack for ${wanted.join(", ")}: ${[...seen].join(", ")}`);
    const stanzas = await aptShow(apt, queue);
    queue = [];
    for (const s of stanzas) chosen.set(s.name, s.version);
    if (wanted.some((w) => !chosen.has(w))) return undefined;
    const installed = await installedPackages([...new Set(stanzas.flatMap((s) => s.depends.flat()))]);
    for (const group of stanzas.flatMap((s) => s.depends)) {
      if (group.some((name) => installed.has(name) || chosen.has(name))) continue;
      const library = group.find((name) => name.startsWith("lib"));
      if (library && !seen.has(library)) {
        seen.add(library);
        queue.push(library);
      }
    }
  }
  return [...chosen].map(([name, version]) => `${name}=${version}`).sort();
}

// ---- the cache ----

interface Resolution {
  fingerprint: string;
  packages: string[];
}

/** One per lists and set of wanted packages: a run that wants only skopeo does not overwrite what a run that wants both found. */
const resolutionFile = (cacheRoot: string, apt: Apt, wanted: string[]) =>
  join(cacheRoot, `resolution-${apt.kind}-${wanted.join("+")}.json`);
/**
 * One directory per package and version (name=version → deb-name_version): a run that wants only
 * docker-registry reuses the one a run that wanted both unpacked. Debian versions may carry an
 * epoch ("2:1.0"); the colon is written %3a, as apt names its .deb files.
 */
const packageDir = (cacheRoot: string, pkg: string) => join(cacheRoot, `deb-${pkg.replace("=", "_").replace(/:/g, "%3a")}`);

/** The packages resolved earlier under the same lists and installed packages, if any. */
async function remembered(cacheRoot: string, apt: Apt, wanted: string[], print: string): Promise<string[] | undefined> {
  try {
    const r = JSON.parse(await readFile(resolutionFile(cacheRoot, apt, wanted), "utf8")) as Resolution;
    return r.fingerprint === print && Array.isArray(r.packages) && r.packages.every((p) => typeof p === "string") ? r.packages : undefined;
  } catch {
    return undefined;
  }
}

async function writeAtomically(file: string, content: string): Promise<void> {
  const temporary = `${file}.${process.pid}-${randomBytes(4).toString("hex")}`;
  await writeFile(temporary, content);
  await rename(temporary, file);
}

/**
 * Downloads `packages` (name=version) and unpacks each into its packageDir/root, which appears
 * whole or not at all (a rename); the .deb files are not kept.
 */
async function downloadAndUnpack(cacheRoot: string, apt: Apt, packages: string[], log: (line: string) => void): Promise<void> {
  const temporary = join(cacheRoot, `download.tmp-${process.pid}-${randomBytes(4).toString("hex")}`);
  await mkdir(temporary);
  try {
    log(`apt-get download ${packages.join(" ")}`);
    const r = await run("apt-get", [...apt.args, "-q", "download", ...packages], { cwd: temporary, timeoutMs: APT_TIMEOUT_MS });
    if (r.code !== 0) throw new Error(`apt-get download ${packages.join(" ")} failed: ${describe(r)}`);
    const debs = (await readdir(temporary)).filter((n) => n.endsWith(".deb"));
    const unpacked = new Set<string>();
    for (const deb of debs) {
      const fields = await run("dpkg-deb", ["--field", join(temporary, deb), "Package", "Version"]);
      const name = /^Package: (\S+)$/m.exec(fields.stdout)?.[1];
      const version = /^Version: (\S+)$/m.exec(fields.stdout)?.[1];
      const pkg = `${name}=${version}`;
      if (fields.code !== 0 || !packages.includes(pkg))
        throw new Error(`apt-get download gave ${deb}, which is not one of ${packages.join(", ")}`);
      const staging = join(temporary, `unpack-${unpacked.size}`);
      await mkdir(join(staging, "root"), { recursive: true });
      const x = await run("dpkg-deb", ["-x", join(temporary, deb), join(staging, "root")], { timeoutMs: APT_TIMEOUT_MS });
      if (x.code !== 0) throw new Error(`dpkg-deb -x ${deb} failed: ${describe(x)}`);
      await writeFile(join(staging, "package.txt"), `${pkg}\n`);
      try {
        await rename(staging, packageDir(cacheRoot, pkg));
      } catch (error) {
        // Another process unpacked the same package first: theirs is as good.
        if (!existsSync(packageDir(cacheRoot, pkg))) throw error;
      }
      unpacked.add(pkg);
    }
    const missing = packages.filter((p) => !unpacked.has(p));
    if (missing.length) throw new Error(`apt-get download ${packages.join(" ")} gave no ${missing.join(", ")}`);
  } finally {
    await rm(temporary, { recursive: true, force: true });
  }
}

/** Directories of the unpacked tree holding shared libraries (usr/lib/x86_64-linux-gnu, …). */
async function libraryDirsIn(root: string): Promise<string[]> {
  const dirs: string[] = [];
  for (const base of ["lib", "lib64", "usr/lib", "usr/lib64"]) {
    const dir = join(root, base);
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    const candidates = [dir, ...entries.filter((e) => e.isDirectory() && e.name.includes("-linux-")).map((e) => join(dir, e.name))];
    for (const candidate of candidates) {
      const names = await readdir(candidate).catch(() => []);
      if (names.some((n) => /\.so(\.\d+)*$/.test(n))) dirs.push(candidate);
    }
  }
  return dirs;
}

/**
 * Runs `work` holding `<cacheRoot>/lock` (a directory: mkdir is atomic), so that two runs, or two
 * workers, do not run apt side by side on the same lists. A lock whose process is gone is taken over.
 */
export async function withLock<T>(cacheRoot: string, work: () => Promise<T>): Promise<T> {
  const lock = join(cacheRoot, "lock");
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      await mkdir(lock);
      await writeFile(join(lock, "pid"), String(process.pid));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = Number(await readFile(join(lock, "pid"), "utf8").catch(() => ""));
      // No pid: its owner is between mkdir and writeFile, or died there (then the lock is older than that takes).
      const age = Date.now() - ((await stat(lock).catch(() => undefined))?.mtimeMs ?? Date.now());
      if ((owner > 0 && !alive(owner)) || (!owner && age > LOCK_UNOWNED_MS)) {
        await rm(lock, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline)
        throw new Error(`${lock} held by process ${owner || "?"} for more than ${LOCK_WAIT_MS} ms; remove it if that process is gone`);
      await new Promise((r) => setTimeout(r, LOCK_POLL_MS));
    }
  }
  try {
    return await work();
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

interface Unpacked {
  /** The unpacked trees, one per package. */
  roots: string[];
  packages: string[];
}

const unpackedOf = (cacheRoot: string, packages: string[]): Unpacked => ({
  roots: packages.map((p) => join(packageDir(cacheRoot, p), "root")),
  packages,
});

/** The unpacked tree for `wanted`, when the cache has it for the lists as they are: no apt at all. */
async function cachedUnpack(cacheRoot: string, apts: Apt[], wanted: string[]): Promise<Unpacked | undefined> {
  for (const apt of apts) {
    const packages = await remembered(cacheRoot, apt, wanted, await fingerprint(apt, wanted));
    if (packages?.every((p) => existsSync(packageDir(cacheRoot, p)))) return unpackedOf(cacheRoot, packages);
  }
  return undefined;
}

/** Resolves, downloads and unpacks with one apt; `mayUpdate` lets it fill or refresh private lists. */
async function unpackWith(cacheRoot: string, apt: Apt, wanted: string[], log: (line: string) => void): Promise<Unpacked> {
  const mayUpdate = apt.kind === "private";
  // Under the lock: nobody else runs apt with these files now.
  if (mayUpdate) await preparePrivateApt(cacheRoot);
  let updated = false;
  if (!(await hasLists(apt))) {
    if (!mayUpdate) throw new Error(`no package lists in ${apt.listsDir}`);
    await aptUpdate(apt, log);
    updated = true;
  }
  for (;;) {
    const print = await fingerprint(apt, wanted);
    const packages = (await remembered(cacheRoot, apt, wanted, print)) ?? (await resolvePackages(apt, wanted));
    try {
      if (!packages) throw new Error(`the package lists in ${apt.listsDir} have no ${wanted.join(" or ")}`);
      await writeAtomically(resolutionFile(cacheRoot, apt, wanted), JSON.stringify({ fingerprint: print, packages } satisfies Resolution));
      const missing = packages.filter((p) => !existsSync(packageDir(cacheRoot, p)));
      if (missing.length) await downloadAndUnpack(cacheRoot, apt, missing, log);
      return unpackedOf(cacheRoot, packages);
    } catch (error) {
      // Lists older than the archive (a package version since replaced): new lists, once.
      if (!mayUpdate || updated) throw error;
      await aptUpdate(apt, log);
      updated = true;
    }
  }
}

async function writeConfigFiles(cacheRoot: string): Promise<{ policy: string; registriesConf: string }> {
  const policy = join(cacheRoot, "policy.json");
  const registriesConf = join(cacheRoot, "registries.conf");
  for (const [file, content] of [
    [policy, POLICY],
    [registriesConf, REGISTRIES_CONF],
  ] as const) {
    if ((await readFile(file, "utf8").catch(() => undefined)) !== content) await writeAtomically(file, content);
  }
  return { policy, registriesConf };
}

async function versionOf(binary: string, env: NodeJS.ProcessEnv): Promise<string> {
  const r = await run(binary, ["--version"], { env, timeoutMs: 30_000 });
  if (r.code !== 0) throw new Error(`${binary} --version failed: ${describe(r)}`);
  return r.stdout.trim().split("\n")[0] ?? "";
}

/**
 * docker-registry and skopeo: from PATH where they are there, otherwise unpacked from Debian's
 * packages into the cache (downloaded once; later calls cost a few stats and two ldd runs).
 */
export async function obtainRegistryTools(options: ObtainOptions = {}): Promise<ObtainedTools> {
  const cacheRoot = options.cacheRoot ?? DEFAULT_CACHE_ROOT;
  const log = options.log ?? (() => undefined);
  await mkdir(cacheRoot, { recursive: true });
  const { policy, registriesConf } = await writeConfigFiles(cacheRoot);

  const searchPath = options.searchPath ?? process.env["PATH"] ?? "";
  const found = new Map<string, string>();
  for (const tool of TOOLS) {
    const path = await findOnPath(tool.binary, searchPath);
    if (path) found.set(tool.key, path);
  }
  const wanted = TOOLS.filter((t) => !found.has(t.key)).map((t) => t.debianPackage);

  let unpacked: Unpacked | undefined;
  if (wanted.length) {
    const system = await systemApt();
    const apts =
      options.lists === "private" ? [privateApt(cacheRoot, system.statusFile)] : [system, privateApt(cacheRoot, system.statusFile)];
    unpacked =
      (await cachedUnpack(cacheRoot, apts, wanted)) ??
      (await withLock(cacheRoot, async () => {
        const again = await cachedUnpack(cacheRoot, apts, wanted);
        if (again) return again;
        // Downloads happen under the lock only: one still here was cut short.
        for (const name of await readdir(cacheRoot)) {
          if (name.startsWith("download.tmp-")) await rm(join(cacheRoot, name), { recursive: true, force: true });
        }
        const failures: string[] = [];
        for (const apt of apts) {
          try {
            return await unpackWith(cacheRoot, apt, wanted, log);
          } catch (error) {
            failures.push(`with the ${apt.kind} package lists: ${(error as Error).message}`);
          }
        }
        throw new Error(`could not obtain ${wanted.join(" and ")} from Debian's packages:\n${failures.join("\n")}`);
      }));
  }

  const libraryDirs = (await Promise.all((unpacked?.roots ?? []).map(libraryDirsIn))).flat();
  const pathOf = (key: "registry" | "skopeo", binary: string): string => {
    const path = found.get(key) ?? unpacked?.roots.map((root) => join(root, "usr", "bin", binary)).find((p) => existsSync(p));
    if (!path || !existsSync(path))
      throw new Error(`${binary} is neither on PATH nor in ${unpacked?.packages.join(", ") ?? "the packages"}`);
    return path;
  };
  const registry = pathOf("registry", "docker-registry");
  const skopeo = pathOf("skopeo", "skopeo");
  await Promise.all([checkLibraries(registry, libraryDirs), checkLibraries(skopeo, libraryDirs)]);
  const env = libraryEnv(process.env, libraryDirs);
  const [registryVersion, skopeoVersion] = await Promise.all([versionOf(registry, env), versionOf(skopeo, env)]);
  return {
    registry,
    skopeo,
    policy,
    registriesConf,
    libraryDirs,
    packages: unpacked?.packages ?? [],
    versions: { registry: registryVersion, skopeo: skopeoVersion },
  };
}

function isObtainedTools(value: unknown): value is ObtainedTools {
  const v = value as ObtainedTools | null;
  return (
    typeof v === "object" &&
    v !== null &&
    [v.registry, v.skopeo, v.policy, v.registriesConf, v.versions?.registry, v.versions?.skopeo].every((s) => typeof s === "string") &&
    [v.libraryDirs, v.packages].every((a) => Array.isArray(a) && a.every((s) => typeof s === "string"))
  );
}

/** The tools as registry-tools-setup.ts handed them over (REGISTRY_TOOLS_VARIABLE), or its failure. */
export async function handedTools(text: string): Promise<ObtainedTools> {
  let parsed: { tools?: unknown; error?: unknown };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    throw new Error(`${REGISTRY_TOOLS_VARIABLE} is not JSON`);
  }
  if (isObtainedTools(parsed?.tools)) return parsed.tools;
  const reason = typeof parsed?.error === "string" ? parsed.error : `${REGISTRY_TOOLS_VARIABLE} holds neither tools nor an error`;
  throw new Error(`the run's setup (test/support/registry-tools-setup.ts) could not obtain docker-registry and skopeo: ${reason}`);
}

/** What registry-tools-setup.ts found for this run; undefined when it did not run. */
function fromSetup(): Promise<ObtainedTools> | undefined {
  const text = process.env[REGISTRY_TOOLS_VARIABLE];
  return text === undefined ? undefined : handedTools(text);
}

let obtained: Promise<ObtainedTools> | undefined;

/**
 * docker-registry, skopeo and the environment to run them with, as the run's setup obtained them
 * (or, outside a vitest run with that setup, obtained here).
 */
export async function registryTools(): Promise<RegistryTools> {
  obtained ??= fromSetup() ?? obtainRegistryTools();
  try {
    const tools = await obtained;
    return { ...tools, env: toolsEnv(tools) };
  } catch (error) {
    // A failure is reported to every caller, but a later one tries again.
    obtained = undefined;
    throw error;
  }
}
