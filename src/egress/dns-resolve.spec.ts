import { pbkdf2 } from "node:crypto";
import dgram from "node:dgram";
import type { AddressInfo } from "node:net";
import * as packet from "dns-packet";
import { afterEach, describe, expect, it } from "vitest";
import { dnsResolver } from "./dns-resolve.js";

// The egress guard's resolver (docs/design.md, "Egress"): DNS queries that never occupy libuv's
// thread pool, one query per name however many wait for it.

/** A name server on loopback: answers from `zone` (NXDOMAIN otherwise), or never when `silent`. */
async function nameServer(zone: Record<string, { A?: string[]; AAAA?: string[] }>, silent = false) {
  const socket = dgram.createSocket("udp4");
  const queries: string[] = [];
  socket.on("message", (message, from) => {
    const query = packet.decode(message);
    const question = query.questions?.[0];
    if (!question) return;
    queries.push(`${question.type} ${question.name}`);
    if (silent) return;
    const records = zone[question.name]?.[question.type as "A" | "AAAA"] ?? [];
    const answer = packet.encode({
      id: query.id,
      type: "response",
      flags: packet.RECURSION_DESIRED | packet.RECURSION_AVAILABLE | (zone[question.name] ? 0 : 3),
      questions: [question],
      answers: records.map((data) => ({ type: question.type as "A" | "AAAA", name: question.name, ttl: 60, data })),
    });
    socket.send(answer, from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  servers.push(socket);
  return { server: `127.0.0.1:${(socket.address() as AddressInfo).port}`, queries };
}

const servers: dgram.Socket[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

describe("dnsResolver", () => {
  it("resolves a name's A and AAAA records, refuses an unknown one, and answers localhost itself", async () => {
    const ns = await nameServer({
      "public.test": { A: ["93.184.216.34"], AAAA: ["2606:2800:220:1::1"] },
      "v6only.test": { AAAA: ["2001:db8::5"] },
    });
    const resolve = dnsResolver({ servers: [ns.server], timeoutMs: 1000, tries: 1 });
    expect(await resolve("Public.TEST.")).toEqual([
      { address: "93.184.216.34", family: 4 },
      { address: "2606:2800:220:1::1", family: 6 },
    ]);
    expect(await resolve("v6only.test")).toEqual([{ address: "2001:db8::5", family: 6 }]);
    await expect(resolve("missing.test")).rejects.toMatchObject({ code: "ENOTFOUND" });
    const asked = ns.queries.length;
    expect(await resolve("localhost")).toEqual([
      { address: "127.0.0.1", family: 4 },
      { address: "::1", family: 6 },
    ]);
    expect(await resolve("api.localhost")).toHaveLength(2);
    expect(ns.queries).toHaveLength(asked);
  });

  it("asks once for a name that many wait for at the same time", async () => {
    const ns = await nameServer({ "busy.test": { A: ["93.184.216.34"] } });
    const resolve = dnsResolver({ servers: [ns.server], timeoutMs: 1000, tries: 1 });
    const answers = await Promise.all(Array.from({ length: 16 }, () => resolve("busy.test")));
    expect(new Set(answers.map((a) => JSON.stringify(a)))).toEqual(new Set([JSON.stringify([{ address: "93.184.216.34", family: 4 }])]));
    expect(ns.queries.sort()).toEqual(["AAAA busy.test", "A busy.test"].sort());
    // Once answered, the next lookup asks again: nothing is cached beyond the wait.
    await resolve("busy.test");
    expect(ns.queries).toHaveLength(4);
  });

  it("leaves the thread pool free while 32 names wait on a name server that never answers, then fails them with ETIMEOUT", async () => {
    const ns = await nameServer({}, true);
    // Long enough that a loaded machine still hashes before the lookups give up: the 16 hashes take
    // a few milliseconds, where the lookups, if they held the pool's threads, would hold them a second.
    const resolve = dnsResolver({ servers: [ns.server], timeoutMs: 1000, tries: 1 });
    const lookups = Promise.allSettled(Array.from({ length: 32 }, (_, i) => resolve(`slow${i}.test`)));
    let lookupsEnded = false;
    void lookups.then(() => (lookupsEnded = true));
    // pbkdf2 runs on the thread pool (as WebCrypto's token checks and file I/O do): 16 jobs, more than the pool has threads.
    const hash = () =>
      new Promise<void>((resolve, reject) => pbkdf2("password", "salt", 1000, 32, "sha256", (e) => (e ? reject(e) : resolve())));
    await Promise.all(Array.from({ length: 16 }, hash));
    expect(lookupsEnded).toBe(false);
    const settled = await lookups;
    expect(settled.every((s) => s.status === "rejected" && (s.reason as { code?: string }).code === "ETIMEOUT")).toBe(true);
    expect(ns.queries.length).toBeGreaterThanOrEqual(32);
  });
});
