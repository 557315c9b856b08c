import { mkdtemp, readFile, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { registryConfigText, writeRegistryConfig, type RegistryConfigInput } from "./registry-config.js";

const input = (dir: string): RegistryConfigInput => ({
  dir,
  addr: "127.0.0.1:5000",
  storageDir: join(dir, "storage"),
  realm: "http://localhost:8080/registry/token",
  service: "http://localhost:8080/registry",
  issuer: "http://localhost:8080",
  notificationsUrl: "http://localhost:8080/registry/notifications",
  notificationsSecret: "s3cret",
  httpSecret: "h77p",
  bundlePem: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
});

describe("the registry's configuration", () => {
  it("names the realm, service, issuer, bundle and notifications endpoint with its secret header", () => {
    const text = registryConfigText(input("/d"), "/d/rootcerts.pem");
    expect(text).toContain('realm: "http://localhost:8080/registry/token"');
    expect(text).toContain('service: "http://localhost:8080/registry"');
    expect(text).toContain('issuer: "http://localhost:8080"');
    expect(text).toContain('rootcertbundle: "/d/rootcerts.pem"');
    expect(text).toContain('url: "http://localhost:8080/registry/notifications"');
    expect(text).toContain('Authorization: ["Bearer s3cret"]');
    expect(text).toContain('addr: "127.0.0.1:5000"');
    expect(text).toContain("delete:\n    enabled: true");
  });

  it("keeps a value with a newline or quote inside its own scalar", () => {
    const text = registryConfigText({ ...input("/d"), realm: 'http://x/"\nauth:\n  none: {}' }, "/d/b.pem");
    expect(text).toContain('realm: "http://x/\\"\\nauth:\\n  none: {}"');
    expect(text.match(/^auth:/gm)).toHaveLength(1);
  });

  it("writes config.yml and rootcerts.pem readable by their owner only", async () => {
    const dir = join(await mkdtemp(join(tmpdir(), "registry-config-")), "registry");
    const files = await writeRegistryConfig(input(dir));
    expect(files).toEqual({ configFile: join(dir, "config.yml"), bundleFile: join(dir, "rootcerts.pem") });
    expect(await readFile(files.bundleFile, "utf8")).toBe(input(dir).bundlePem);
    expect(await readFile(files.configFile, "utf8")).toContain(`rootcertbundle: "${files.bundleFile}"`);
    expect((await stat(files.configFile)).mode & 0o777).toBe(0o600);
    expect((await stat(files.bundleFile)).mode & 0o777).toBe(0o600);
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    // Written again (the next start): replaced whole.
    await writeRegistryConfig({ ...input(dir), bundlePem: "next\n" });
    expect(await readFile(files.bundleFile, "utf8")).toBe("next\n");
  });
});
