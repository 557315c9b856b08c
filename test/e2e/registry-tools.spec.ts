import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, copyFile, mkdir, mkdtemp, readFile, readdir, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildOciImage, LAYER_FILE, MAX_CONTENT_BYTES, tarOfOneFile } from "../support/oci-image.js";
import { freePort, httpAddrOf, loopbackPortOf, skopeo, startRegistry, type RunningRegistry } from "../support/registry-process.js";
import {
  checkLibraries,
  DEFAULT_CACHE_ROOT,
  handedTools,
  notFoundInLdd,
  obtainRegistryTools,
  parseDepends,
  REGISTRY_TOOLS_VARIABLE,
  registryTools,
  toolsEnv,
  withLock,
  type RegistryTools,
} from "../support/registry-tools.js";

// The harness the registry e2e tests stand on (test/support/registry-tools.ts, oci-image.ts,
// registry-process.ts), proved on its own: a stock docker-registry with no authentication
// takes a push from skopeo of an image made here. No platform server is involved.

const run = promisify(execFile);

/** A distribution configuration: no authentication, storage in `dir`, listening on loopback `port`. */
function plainConfig(dir: string, port: number): string {
  return [
    "version: 0.1",
    "log:",
    "  level: info",
    "  formatter: text",
    "storage:",
    "  filesystem:",
    `    rootdirectory: ${join(dir, "storage")}`,
    "http:",
    `  addr: 127.0.0.1:${port}`,
    "",
  ].join("\n");
}

let tools: RegistryTools;
let scratch: string;

beforeAll(async () => {
  tools = await registryTools();
  scratch = await mkdtemp(join(tmpdir(), "registry-tools-"));
});

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("registryTools()", () => {
  it("comes from the run's global setup, with absolute paths", () => {
    const handed = JSON.parse(process.env[REGISTRY_TOOLS_VARIABLE] ?? "{}") as { tools?: { registry?: string } };
    expect(handed.tools?.registry).toBe(tools.registry);
    for (const path of [tools.registry, tools.skopeo, tools.policy, tools.registriesConf, ...tools.libraryDirs])
      expect(path).toMatch(/^\//);
  });

  it("reports the setup's failure, or a garbled hand-over, to the tests that need the tools", async () => {
    await expect(handedTools(JSON.stringify({ error: "apt-get download skopeo failed: no network" }))).rejects.toThrow(
      /registry-tools-setup\.ts\) could not obtain docker-registry and skopeo: apt-get download skopeo failed: no network/,
    );
    await expect(handedTools("{not json")).rejects.toThrow(/not JSON/);
    await expect(handedTools("null")).rejects.toThrow(/neither tools nor an error/);
    await expect(handedTools(JSON.stringify({ tools: { ...tools, registry: 7 } }))).rejects.toThrow(/neither tools nor an error/);
    await expect(handedTools(JSON.stringify({ tools: { ...tools, libraryDirs: ["/a", null] } }))).rejects.toThrow(
      /neither tools nor an error/,
    );
    const { env: _env, ...obtained } = tools;
    expect(await handedTools(JSON.stringify({ tools: obtained }))).toEqual(obtained);
  });

  it("runs Debian's docker-registry 2.8 and skopeo 1.9", async () => {
    const registry = await run(tools.registry, ["--version"], { env: tools.env });
    const sk = await run(tools.skopeo, ["--version"], { env: tools.env });
    expect(registry.stdout).toMatch(/ 2\.8\.\d/);
    expect(sk.stdout).toMatch(/^skopeo version 1\.9\.\d/);
    expect(tools.versions.registry).toBe(registry.stdout.trim());
    expect(tools.versions.skopeo).toBe(sk.stdout.trim());
  });

  it("gives skopeo a policy that accepts the tests' unsigned images, and an empty registries.conf", async () => {
    expect(JSON.parse(await readFile(tools.policy, "utf8"))).toEqual({ default: [{ type: "insecureAcceptAnything" }] });
    expect(tools.env["CONTAINERS_REGISTRIES_CONF"]).toBe(tools.registriesConf);
    expect((await readFile(tools.registriesConf, "utf8")).replace(/#.*\n/g, "")).toBe("");
  });

  it("puts the unpacked libraries first on LD_LIBRARY_PATH, keeping the caller's", () => {
    const env = toolsEnv({ ...tools, libraryDirs: ["/a", "/b"] }, { LD_LIBRARY_PATH: "/c", HOME: "/h" }, "/d");
    expect(env["LD_LIBRARY_PATH"]).toBe("/a:/b:/c");
    expect(env["HOME"]).toBe("/h");
    expect(env["XDG_DATA_HOME"]).toBe("/d");
    expect(env["_CONTAINERS_ROOTLESS_UID"]).not.toBe("0");
    expect(toolsEnv({ ...tools, libraryDirs: [] }, {})["LD_LIBRARY_PATH"]).toBeUndefined();
  });
});

describe("obtaining the tools", () => {
  /** A directory of stand-ins that answer --version like the real programs. */
  async function fakeBin(names: string[]): Promise<string> {
    const dir = await mkdtemp(join(scratch, "bin-"));
    for (const name of names) {
      await writeFile(join(dir, name), `#!/bin/sh\necho "${name} stand-in 0.0"\n`);
      await chmod(join(dir, name), 0o755);
    }
    return dir;
  }

  it("prefers programs on PATH and downloads nothing for them", async () => {
    const bin = await fakeBin(["docker-registry", "skopeo"]);
    const cacheRoot = await mkdtemp(join(scratch, "cache-"));
    const logged: string[] = [];
    const found = await obtainRegistryTools({ cacheRoot, searchPath: `relative/dir:${bin}`, log: (l) => logged.push(l) });
    expect(found).toMatchObject({ registry: join(bin, "docker-registry"), skopeo: join(bin, "skopeo"), libraryDirs: [], packages: [] });
    expect(found.versions).toEqual({ registry: "docker-registry stand-in 0.0", skopeo: "skopeo stand-in 0.0" });
    expect(logged).toEqual([]);
    // Only the skopeo configuration was written: no lists, no packages.
    expect((await readdir(cacheRoot)).sort()).toEqual(["policy.json", "registries.conf"]);
  });

  it("takes from Debian only the program PATH lacks", async () => {
    const bin = await fakeBin(["skopeo"]);
    const found = await obtainRegistryTools({ searchPath: bin });
    expect(found.skopeo).toBe(join(bin, "skopeo"));
    expect(found.registry.startsWith(DEFAULT_CACHE_ROOT)).toBe(true);
    expect(found.packages.map((p) => p.split("=")[0])).toEqual(["docker-registry"]);
    expect(found.versions.registry).toMatch(/ 2\.8\.\d/);
  });

  it("with no PATH, unpacks both with the libraries the machine lacks, and skopeo starts with them", async () => {
    const found = await obtainRegistryTools({ searchPath: "" });
    const names = found.packages.map((p) => p.split("=")[0]);
    expect(names).toEqual(expect.arrayContaining(["docker-registry", "skopeo"]));
    // Every other package is a library skopeo needs that dpkg does not have installed.
    for (const name of names.filter((n): n is string => n !== undefined && n !== "docker-registry" && n !== "skopeo")) {
      expect(name).toMatch(/^lib/);
      const status = await run("dpkg-query", ["-W", "-f=${Status}", name]).then(
        (r) => r.stdout,
        () => "not known to dpkg",
      );
      expect(status).not.toMatch(/ installed$/);
    }
    await checkLibraries(found.skopeo, found.libraryDirs);
    expect(found.versions.skopeo).toMatch(/^skopeo version 1\.9\.\d/);
  });

  it("falls back to package lists of its own when the machine has none, without touching the machine's", async () => {
    // The machine's lists as apt sees them are an empty directory here (APT_CONFIG is read by every apt program).
    const emptyLists = await mkdtemp(join(scratch, "lists-"));
    await mkdir(join(emptyLists, "partial"));
    const aptConfig = join(scratch, "apt.conf");
    await writeFile(aptConfig, `Dir::State::Lists "${emptyLists}";\n`);
    // A cache of its own: on a new machine (CI) this test runs apt-get update and the download; later runs reuse them.
    const cacheRoot = `${DEFAULT_CACHE_ROOT}-private-lists-test`;
    const saved = process.env["APT_CONFIG"];
    process.env["APT_CONFIG"] = aptConfig;
    try {
      const found = await obtainRegistryTools({ cacheRoot, searchPath: "" });
      expect(found.registry.startsWith(cacheRoot)).toBe(true);
      expect(found.versions.skopeo).toMatch(/^skopeo version 1\.9\.\d/);
      expect((await readdir(join(cacheRoot, "apt", "lists"))).some((n) => n.includes("_Packages"))).toBe(true);
      expect(await readdir(cacheRoot)).toContain("resolution-private-docker-registry+skopeo.json");
      expect(await readdir(emptyLists)).toEqual(["partial"]);
    } finally {
      if (saved === undefined) delete process.env["APT_CONFIG"];
      else process.env["APT_CONFIG"] = saved;
    }
  }, 180_000);

  it("lets one caller at a time download into a cache, and takes over a lock whose holder is gone", async () => {
    const cacheRoot = await mkdtemp(join(scratch, "lock-"));
    const events: string[] = [];
    const hold = (name: string) =>
      withLock(cacheRoot, async () => {
        events.push(`${name} in`);
        await new Promise((r) => setTimeout(r, 50));
        events.push(`${name} out`);
        return name;
      });
    expect(await Promise.all([hold("a"), hold("b"), hold("c")])).toEqual(["a", "b", "c"]);
    for (let i = 0; i < events.length; i += 2) expect(events[i + 1]).toBe(events[i]!.replace(" in", " out"));
    expect(await readdir(cacheRoot)).toEqual([]);

    // A holder that died: a pid that is no process (beyond Linux's pid_max), then one that never wrote its pid.
    await mkdir(join(cacheRoot, "lock"));
    await writeFile(join(cacheRoot, "lock", "pid"), "99999999");
    expect(await withLock(cacheRoot, async () => "taken over")).toBe("taken over");
    await mkdir(join(cacheRoot, "lock"));
    const old = new Date(Date.now() - 60_000);
    await utimes(join(cacheRoot, "lock"), old, old);
    expect(await withLock(cacheRoot, async () => "taken over")).toBe("taken over");
  });

  it("names a shared library that cannot be found", async () => {
    // /bin/true with its libc renamed: a program whose library no machine has.
    const binary = join(scratch, "needs-missing-lib");
    await copyFile("/bin/true", binary);
    const bytes = await readFile(binary);
    const from = Buffer.from("libc.so.6");
    let at = bytes.indexOf(from);
    expect(at).toBeGreaterThan(0);
    for (; at >= 0; at = bytes.indexOf(from, at + 1)) Buffer.from("libQ.so.6").copy(bytes, at);
    await writeFile(binary, bytes);
    await expect(checkLibraries(binary, ["/nonexistent"])).rejects.toThrow(
      /needs-missing-lib cannot start: libQ\.so\.6 not found in the machine's libraries and \/nonexistent/,
    );
    await expect(checkLibraries("/bin/true", [])).resolves.toBeUndefined();
  });

  it("reads ldd's misses: sonames, and symbol versions", () => {
    const output = [
      "\tlinux-vdso.so.1 (0x00007ffd)",
      "\tlibgpgme.so.11 => not found",
      "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)",
      "./x: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.99' not found (required by ./x)",
    ].join("\n");
    expect(notFoundInLdd(output)).toEqual([
      "libgpgme.so.11",
      "./x: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.99' not found (required by ./x)",
    ]);
    expect(notFoundInLdd("")).toEqual([]);
  });

  it("reads Depends fields: alternatives, versions, architecture qualifiers; drops junk", () => {
    expect(
      parseDepends("golang-github-containers-common (>> 0.49), libc6 (>= 2.34), libdevmapper1.02.1 (>= 2:1.02.97), libgpgme11 (>= 1.4.1)"),
    ).toEqual([["golang-github-containers-common"], ["libc6"], ["libdevmapper1.02.1"], ["libgpgme11"]]);
    expect(parseDepends("gnupg (>= 2.1.21-4) | gpg, libfoo:any [amd64], ")).toEqual([["gnupg", "gpg"], ["libfoo"]]);
    expect(parseDepends("")).toEqual([]);
    expect(parseDepends("Bad Name, x, lib\0nul, ../etc")).toEqual([]);
  });
});

describe("buildOciImage()", () => {
  it("writes an OCI layout whose layer is a gzip'd tar of one file with the content", async () => {
    const dir = join(scratch, "layout-a");
    const image = await buildOciImage(dir, { tag: "v1", content: "first\n" });
    expect(image.reference).toBe(`oci:${dir}:v1`);
    expect(JSON.parse(await readFile(join(dir, "oci-layout"), "utf8"))).toEqual({ imageLayoutVersion: "1.0.0" });
    const index = JSON.parse(await readFile(join(dir, "index.json"), "utf8")) as {
      manifests: { digest: string; annotations: Record<string, string> }[];
    };
    expect(index.manifests).toEqual([
      expect.objectContaining({ digest: image.manifestDigest, annotations: { "org.opencontainers.image.ref.name": "v1" } }),
    ]);
    const blob = (digest: string) => join(dir, "blobs", "sha256", digest.slice("sha256:".length));
    // The system's tar reads the layer as it would any other.
    const listing = await run("tar", ["-tvzf", blob(image.layerDigest)]);
    expect(listing.stdout).toMatch(new RegExp(`^-rw-r--r-- root/root +6 2000-01-01 \\d\\d:00 ${LAYER_FILE}\\n$`));
    expect((await run("tar", ["-xzOf", blob(image.layerDigest), LAYER_FILE])).stdout).toBe("first\n");
    const manifest = JSON.parse(await readFile(blob(image.manifestDigest), "utf8")) as { layers: { digest: string; size: number }[] };
    expect(manifest.layers).toEqual([
      expect.objectContaining({ digest: image.layerDigest, mediaType: "application/vnd.oci.image.layer.v1.tar+gzip" }),
    ]);
  });

  it("gives the same digest for the same content, another for another, and keeps the layout's other tags", async () => {
    const a = await buildOciImage(join(scratch, "layout-b"), { tag: "one", content: "same" });
    const b = await buildOciImage(join(scratch, "layout-c"), { tag: "one", content: "same" });
    const c = await buildOciImage(join(scratch, "layout-b"), { tag: "two", content: "other" });
    const bytes = await buildOciImage(join(scratch, "layout-d"), { tag: "one", content: new Uint8Array([0, 1, 2, 255]) });
    expect(b.manifestDigest).toBe(a.manifestDigest);
    expect(c.manifestDigest).not.toBe(a.manifestDigest);
    expect(bytes.manifestDigest).not.toBe(a.manifestDigest);
    const index = JSON.parse(await readFile(join(scratch, "layout-b", "index.json"), "utf8")) as { manifests: { digest: string }[] };
    expect(index.manifests.map((m) => m.digest)).toEqual([a.manifestDigest, c.manifestDigest]);
  });

  it("pads content to tar's 512-byte blocks", () => {
    for (const size of [0, 1, 511, 512, 513])
      expect(tarOfOneFile("f", new Uint8Array(size)).length).toBe(512 + Math.ceil(size / 512) * 512 + 1024);
    expect(() => tarOfOneFile("a/../b", new Uint8Array())).toThrow(/tar member name/);
  });

  it("refuses bad tags, content and directories", async () => {
    const dir = join(scratch, "layout-bad");
    await expect(buildOciImage(dir, { tag: "v\u00001" })).rejects.toThrow(/not a valid tag/);
    await expect(buildOciImage(dir, { tag: "x".repeat(129) })).rejects.toThrow(/not a valid tag/);
    await expect(buildOciImage(dir, { tag: "-leading-dash" })).rejects.toThrow(/not a valid tag/);
    await expect(buildOciImage(dir, { tag: 7 as unknown as string })).rejects.toThrow(/not a valid tag/);
    await expect(buildOciImage(dir, { tag: "v1", content: { x: 1 } as unknown as string })).rejects.toThrow(/string or bytes/);
    await expect(buildOciImage(dir, { tag: "v1", content: new Uint8Array(MAX_CONTENT_BYTES + 1) })).rejects.toThrow(/over/);
    await expect(buildOciImage(`${dir}:x`, { tag: "v1" })).rejects.toThrow(/colon/);
    await expect(buildOciImage(`${dir}\0`, { tag: "v1" })).rejects.toThrow(/non-empty path/);
    await expect(readdir(dir)).rejects.toThrow(/ENOENT/);
  });
});

describe("a registry and skopeo", () => {
  let registry: RunningRegistry | undefined;

  afterAll(async () => {
    await registry?.stop();
  });

  it("pushes an image made here to a registry on loopback, and inspects its digest there", async () => {
    const port = await freePort();
    const configFile = join(scratch, "registry.yml");
    await writeFile(configFile, plainConfig(scratch, port));
    registry = await startRegistry({ configFile, tools });
    expect(registry.url).toBe(`http://127.0.0.1:${port}`);

    const image = await buildOciImage(join(scratch, "push-layout"), { tag: "v1", content: "pushed by registry-tools.spec\n" });
    const target = `docker://127.0.0.1:${port}/demo/hello:v1`;
    const copy = await skopeo(tools, ["copy", "--dest-tls-verify=false", image.reference, target]);
    expect(copy, copy.stderr).toMatchObject({ code: 0 });
    // skopeo's blob cache is in the run's scratch directory, not /var/lib/containers.
    expect(tools.env["XDG_DATA_HOME"]!.startsWith(tmpdir())).toBe(true);
    expect(existsSync(join(tools.env["XDG_DATA_HOME"]!, "containers", "cache", "blob-info-cache-v1.boltdb"))).toBe(true);

    const inspect = await skopeo(tools, ["inspect", "--tls-verify=false", target]);
    expect(inspect.code, inspect.stderr).toBe(0);
    expect((JSON.parse(inspect.stdout) as { Digest: string }).Digest).toBe(image.manifestDigest);
    // The registry's own account of it: the manifest PUT, answered 201 Created.
    expect(registry.logs()).toMatch(/"PUT \/v2\/demo\/hello\/manifests\/v1 HTTP\/1\.1" 201/);

    // Another content under another tag: another digest, served as such.
    const second = await buildOciImage(join(scratch, "push-layout"), { tag: "v2", content: "second\n" });
    const target2 = `docker://127.0.0.1:${port}/demo/hello:v2`;
    expect((await skopeo(tools, ["copy", "--dest-tls-verify=false", second.reference, target2])).code).toBe(0);
    const inspect2 = await skopeo(tools, ["inspect", "--tls-verify=false", target2]);
    expect((JSON.parse(inspect2.stdout) as { Digest: string }).Digest).toBe(second.manifestDigest);
    expect(second.manifestDigest).not.toBe(image.manifestDigest);
  });

  it("reports a missing tag as skopeo's failure, not the harness's", async () => {
    expect(registry).toBeDefined();
    const port = new URL(registry!.url).port;
    const missing = await skopeo(tools, ["inspect", "--tls-verify=false", `docker://127.0.0.1:${port}/demo/hello:absent`]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/manifest unknown/);
  });

  it("stops the registry: its port no longer answers, and stop() twice is fine", async () => {
    expect(registry).toBeDefined();
    const { url } = registry!;
    await registry!.stop();
    await registry!.stop();
    await expect(fetch(`${url}/v2/`)).rejects.toThrow();
    registry = undefined;
  });

  it("fails to start, with the registry's own words, when the registry ends at once", async () => {
    const port = await freePort();
    const configFile = join(scratch, "broken.yml");
    // No storage driver: distribution refuses to start.
    await writeFile(configFile, `version: 0.1\nhttp:\n  addr: 127.0.0.1:${port}\n`);
    await expect(startRegistry({ configFile, tools })).rejects.toThrow(/ended before answering[\s\S]*storage/i);
  });

  it("takes the address from REGISTRY_HTTP_ADDR over the file's, as distribution does", async () => {
    const port = await freePort();
    const configFile = join(scratch, "env-addr.yml");
    await writeFile(configFile, plainConfig(scratch, 1));
    const r = await startRegistry({ configFile, tools, env: { REGISTRY_HTTP_ADDR: `127.0.0.1:${port}` } });
    try {
      expect(r.url).toBe(`http://127.0.0.1:${port}`);
      expect((await fetch(`${r.url}/v2/`)).status).toBe(200);
    } finally {
      await r.stop();
    }
  });

  it("refuses configurations without a loopback http.addr", async () => {
    const configFile = join(scratch, "no-addr.yml");
    await writeFile(configFile, "version: 0.1\nstorage:\n  inmemory: {}\n");
    await expect(startRegistry({ configFile, tools })).rejects.toThrow(/no http\.addr/);
    await writeFile(configFile, "version: 0.1\nhttp:\n  addr: 0.0.0.0:5000\n");
    await expect(startRegistry({ configFile, tools })).rejects.toThrow(/not 127\.0\.0\.1:<port>/);
    await expect(startRegistry({ configFile: join(scratch, "absent.yml"), tools })).rejects.toThrow(/ENOENT/);
  });

  it("kills skopeo past its time, and refuses NUL in its arguments", async () => {
    const slow = join(scratch, "slow-skopeo");
    await writeFile(slow, "#!/bin/sh\nsleep 30\n");
    await chmod(slow, 0o755);
    const started = Date.now();
    await expect(skopeo({ ...tools, skopeo: slow }, ["inspect", "docker://x/y"], { timeoutMs: 200 })).rejects.toThrow(/ran past 200 ms/);
    expect(Date.now() - started).toBeLessThan(5_000);
    await expect(skopeo(tools, ["inspect", "docker://x\0y"])).rejects.toThrow(/without NUL/);
    await expect(skopeo(tools, "inspect" as unknown as string[])).rejects.toThrow(/without NUL/);
  });
});

describe("reading http.addr", () => {
  it("finds it in block YAML and in JSON", () => {
    expect(httpAddrOf("version: 0.1\nhttp:\n  addr: 127.0.0.1:5000\n")).toBe("127.0.0.1:5000");
    expect(httpAddrOf('http:\n  # comment\n  headers:\n    addr: [no]\n  addr: "127.0.0.1:1" # trailing\nlog: {}\n')).toBe("127.0.0.1:1");
    expect(httpAddrOf("http:\n    addr: '127.0.0.1:2'\n")).toBe("127.0.0.1:2");
    expect(httpAddrOf('{"http":{"addr":"127.0.0.1:3"}}')).toBe("127.0.0.1:3");
  });

  it("does not take another section's addr", () => {
    expect(httpAddrOf("debug:\n  addr: 127.0.0.1:9\nhttp:\n  secret: x\nredis:\n  addr: 127.0.0.1:8\n")).toBeUndefined();
    expect(httpAddrOf("")).toBeUndefined();
    expect(httpAddrOf('{"http":{"addr":5}}')).toBeUndefined();
  });

  it("accepts only 127.0.0.1 and a port in range", () => {
    expect(loopbackPortOf("127.0.0.1:5000")).toBe(5000);
    for (const bad of [
      ":5000",
      "0.0.0.0:5000",
      "localhost:5000",
      "127.0.0.1:0",
      "127.0.0.1:65536",
      "127.0.0.1:5000\0",
      "x".repeat(100_000),
    ]) {
      expect(() => loopbackPortOf(bad), bad.slice(0, 20)).toThrow(/not 127\.0\.0\.1:<port>/);
    }
  });
});
