import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newChildUid, schema } from "../../src/db/index.js";
import { registryPathOf } from "../../src/registry/index.js";
import { restClient, type JsonObject } from "../support/clients.js";
import { runCliInProcess } from "../support/cli-in-process.js";
import { credentialHelperOnPath } from "../support/credential-helper.js";
import { buildOciImage, type OciImage } from "../support/oci-image.js";
import { startOidcProvider, WORKLOAD_AUDIENCE, type TestOidcProvider } from "../support/oidc-provider.js";
import { freePort, skopeo, startRegistry, type RunningRegistry, type SkopeoResult } from "../support/registry-process.js";
import { registryTools, type RegistryTools } from "../support/registry-tools.js";
import { startTestServer, type TestServer } from "../support/server.js";

// The real thing (docs/design.md, "The image registry"): Debian's docker-registry, unmodified, run with
// the configuration this server writes, and skopeo pushing and pulling through it. Each test
// goes on from the state the one before it left, as a user's session would.

let tools: RegistryTools;
let server: TestServer;
let registry: RunningRegistry;
let provider: TestOidcProvider;
let work: string;
let host: string;
let org: string;
let otherOrg: string;
let person: { uid: string; token: string };
let puller: { uid: string; token: string };
let stranger: { uid: string; token: string };
let workload: string;
let v1: OciImage;
let v2: OciImage;

const admin = (method: string, path: string, body?: unknown) => restClient(server.url, server.token)(method, path, body as JsonObject);
async function ok(method: string, path: string, body?: unknown): Promise<JsonObject> {
  const res = await admin(method, path, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** An identity of `group` bound to `role` there, and the API token it would have after signing in. */
async function member(group: string, name: string, role: string): Promise<{ uid: string; token: string }> {
  const uid = (await ok("POST", `/iam/v2beta1/identities/${group}`, { name }))["uid"] as string;
  await ok("POST", `/iam/v2beta1/roleBindings/${group}`, { identityUid: uid, roleUid: role });
  return { uid, token: (await server.app.tokens.mint(uid, server.app.urls.baseUrl)).token };
}

const image = (group: string, repo: string, tag: string) => `docker://${host}/${registryPathOf(group, repo)}:${tag}`;

async function push(source: OciImage, target: string, creds: string): Promise<SkopeoResult> {
  return skopeo(tools, ["copy", "--dest-tls-verify=false", "--dest-creds", creds, source.reference, target]);
}

async function pull(source: string, creds: string): Promise<SkopeoResult> {
  const dir = await mkdtemp(join(work, "pulled-"));
  return skopeo(tools, ["copy", "--src-tls-verify=false", "--src-creds", creds, source, `oci:${dir}:pulled`]);
}

/** Polls `read` until `done` holds of its value (at most 10 s): notifications arrive on their own time. */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const repos = async (group: string) => (await ok("GET", `/registry/v2beta1/repos?uidp.children_of=${group}`))["repos"] as JsonObject[];
const tags = async (repo: string) =>
  (await ok("GET", `/registry/v2beta1/tags?uidp.children_of=${repo}&orderBy=name`))["tags"] as JsonObject[];
const registryEvents = async (group: string) =>
  (await ok("GET", `/events/v2beta1/events?uidp.in_root=${group}&typePrefix=platform.registry.`))["events"] as JsonObject[];

/** The registry's log lines that mention `text` (what an operator would grep for). */
const logLines = (text: string) =>
  registry
    .logs()
    .split("\n")
    .filter((l) => l.includes(text));

beforeAll(async () => {
  tools = await registryTools();
  work = await mkdtemp(join(tmpdir(), "registry-e2e-"));
  provider = await startOidcProvider(["ci-pipeline"]);
  const port = await freePort();
  host = `127.0.0.1:${port}`;
  server = await startTestServer({ PLATFORM_ALLOW_INSECURE_ISSUERS: "true", PLATFORM_REGISTRY_ADDR: host });
  // As an operator runs it: `docker-registry serve <the file the server wrote>`.
  const files = server.app.registry.files;
  if (!files) throw new Error("the server wrote no registry configuration");
  registry = await startRegistry({ configFile: files.configFile, tools });
  org = (await ok("POST", "/iam/v2beta1/groups", { name: "registry-e2e" }))["uid"] as string;
  otherOrg = (await ok("POST", "/iam/v2beta1/groups", { name: "registry-e2e-other" }))["uid"] as string;
  person = await member(org, "ada", "owner");
  puller = await member(org, "deploy-bot", "registry.pull");
  stranger = await member(otherOrg, "eve", "owner");
  // A CI job's identity: its pipeline's OIDC token is its password, nothing stored.
  const now = server.clock.now();
  workload = newChildUid(org);
  await server.app.database.db.insert(schema.identities).values({
    uid: workload,
    parentUid: org,
    name: "ci",
    claimIssuer: provider.issuer,
    claimSubject: "ci-pipeline",
    claimAudience: WORKLOAD_AUDIENCE,
    lastSeenTime: now,
    createTime: now,
    updateTime: now,
  });
  await ok("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: workload, roleUid: "registry.push" });
  v1 = await buildOciImage(join(work, "image"), { tag: "v1", content: "hello from v1\n" });
  v2 = await buildOciImage(join(work, "image"), { tag: "v2", content: "hello from v2\n" });
}, 120_000);

afterAll(async () => {
  await registry?.stop();
  await server?.stop();
  await provider?.stop();
});

describe("a stock docker-registry with this server's tokens and notifications", () => {
  it("lets a person push with their platform token, and the repo and tag appear in the catalog and the audit log", async () => {
    const pushed = await push(v1, image(org, "library/hello", "v1"), `${person.uid}:${person.token}`);
    expect(pushed.code, pushed.stderr).toBe(0);
    const [repo] = await eventually(
      () => repos(org),
      (r) => r.length === 1,
    );
    expect(repo).toMatchObject({ name: "library/hello" });
    const listed = await eventually(
      () => tags(repo!["uid"] as string),
      (t) => t.length === 1,
    );
    expect(listed).toMatchObject([{ name: "v1", digest: v1.manifestDigest }]);
    const events = await eventually(
      () => registryEvents(org),
      (e) => e.length >= 2,
    );
    expect(events.map((e) => [e["type"], e["actor"]])).toEqual(
      expect.arrayContaining([
        ["platform.registry.repo.created.v1", person.uid],
        ["platform.registry.tag.created.v1", person.uid],
      ]),
    );
    // The registry's own record of it: the manifest's PUT authorized by the token, and written.
    const manifest = `/v2/${registryPathOf(org, "library/hello")}/manifests/v1`;
    const authorized = logLines('msg="authorized request"').filter((l) => l.includes("http.request.method=PUT") && l.includes(manifest));
    const written = logLines('msg="response completed"').filter((l) => l.includes(manifest) && l.includes("http.response.status=201"));
    expect(authorized).toHaveLength(1);
    expect(written).toHaveLength(1);
    console.log(`registry log, authorized push:\n${authorized[0]}\n${written[0]}`);
  });

  it("lets the person pull it back", async () => {
    const pulled = await pull(image(org, "library/hello", "v1"), `${person.uid}:${person.token}`);
    expect(pulled.code, pulled.stderr).toBe(0);
  });

  it("lets a workload push with its own OIDC token as password (identity uid as user name)", async () => {
    const oidc = await provider.workloadToken("ci-pipeline");
    const pushed = await push(v2, image(org, "library/hello", "v2"), `${workload}:${oidc}`);
    expect(pushed.code, pushed.stderr).toBe(0);
    const repo = (await repos(org))[0]!["uid"] as string;
    const listed = await eventually(
      () => tags(repo),
      (t) => t.length === 2,
    );
    expect(listed).toMatchObject([
      { name: "v1", digest: v1.manifestDigest },
      { name: "v2", digest: v2.manifestDigest },
    ]);
    const events = await registryEvents(org);
    expect(events.some((e) => e["type"] === "platform.registry.tag.created.v1" && e["actor"] === workload)).toBe(true);
  });

  it("lets a registry.pull identity pull, and refuses its push", async () => {
    const pulled = await pull(image(org, "library/hello", "v2"), `${puller.uid}:${puller.token}`);
    expect(pulled.code, pulled.stderr).toBe(0);
    const pushed = await push(v1, image(org, "library/hello", "pulled-only"), `${puller.uid}:${puller.token}`);
    expect(pushed.code).not.toBe(0);
    expect(pushed.stderr).toMatch(/unauthorized|denied|authentication required/i);
    const refused = logLines("error authorizing context: insufficient scope").filter((l) => l.includes("manifests/pulled-only"));
    expect(refused.length).toBeGreaterThan(0);
    console.log(`registry log, refused push:\n${refused[0]}`);
    const repo = (await repos(org))[0]!["uid"] as string;
    expect((await tags(repo)).map((t) => t["name"])).toEqual(["v1", "v2"]);
  });

  it("gives an identity of another organization nothing: no pull, no push", async () => {
    const pulled = await pull(image(org, "library/hello", "v1"), `${stranger.uid}:${stranger.token}`);
    expect(pulled.code).not.toBe(0);
    const pushed = await push(v1, image(org, "library/intruder", "v1"), `${stranger.uid}:${stranger.token}`);
    expect(pushed.code).not.toBe(0);
    const garbage = await pull(image(org, "library/hello", "v1"), `${person.uid}:not-a-token`);
    expect(garbage.code).not.toBe(0);
    expect((await repos(org)).map((r) => r["name"])).toEqual(["library/hello"]);
  });

  it("moves a tag's digest on a re-tag", async () => {
    const pushed = await push(v2, image(org, "library/hello", "v1"), `${person.uid}:${person.token}`);
    expect(pushed.code, pushed.stderr).toBe(0);
    const repo = (await repos(org))[0]!["uid"] as string;
    const listed = await eventually(
      () => tags(repo),
      (t) => t.find((x) => x["name"] === "v1")?.["digest"] === v2.manifestDigest,
    );
    expect(listed.find((x) => x["name"] === "v1")).toMatchObject({ digest: v2.manifestDigest });
    const events = await registryEvents(org);
    expect(events.some((e) => e["type"] === "platform.registry.tag.updated.v1")).toBe(true);
  });

  it("removes the tags of a deleted manifest", async () => {
    // v1 was pushed to library/hello:v1 and then moved; a fresh tag holds it alone.
    expect((await push(v1, image(org, "library/hello", "old"), `${person.uid}:${person.token}`)).code).toBe(0);
    const repo = (await repos(org))[0]!["uid"] as string;
    await eventually(
      () => tags(repo),
      (t) => t.some((x) => x["name"] === "old"),
    );
    const deleted = await skopeo(tools, [
      "delete",
      "--tls-verify=false",
      "--creds",
      `${person.uid}:${person.token}`,
      image(org, "library/hello", "old"),
    ]);
    expect(deleted.code, deleted.stderr).toBe(0);
    const listed = await eventually(
      () => tags(repo),
      (t) => !t.some((x) => x["name"] === "old"),
    );
    expect(listed.map((t) => t["name"])).toEqual(["v1", "v2"]);
    const events = await registryEvents(org);
    expect(events.some((e) => e["type"] === "platform.registry.tag.deleted.v1" && e["actor"] === person.uid)).toBe(true);
  });

  it("works through platformctl's credential helper: configure-docker, then skopeo with that auth file", async () => {
    const home = await mkdtemp(join(work, "home-"));
    const authFile = join(home, "docker-config.json");
    const cliEnv = { PLATFORM_CONFIG_DIR: join(home, "platformctl"), PLATFORM_TOKEN: person.token };
    const configured = await runCliInProcess(
      ["--api", server.url, "auth", "configure-docker", "--registry", host, "--config", authFile],
      cliEnv,
    );
    expect(configured.code, configured.stderr).toBe(0);
    const PATH = await credentialHelperOnPath(join(home, "bin"));
    const env = { ...cliEnv, PATH, HOME: home };
    const pushed = await skopeo(
      tools,
      ["copy", "--authfile", authFile, "--dest-tls-verify=false", v1.reference, image(org, "library/hello", "helper")],
      { env },
    );
    expect(pushed.code, pushed.stderr).toBe(0);
    const repo = (await repos(org))[0]!["uid"] as string;
    const listed = await eventually(
      () => tags(repo),
      (t) => t.some((x) => x["name"] === "helper"),
    );
    expect(listed.find((t) => t["name"] === "helper")).toMatchObject({ digest: v1.manifestDigest });
  });
});
