// The floor: what the same reads and writes cost with nothing but node:http
// and postgres.js (prepared statements, the service's pool size, no auth, no
// framework). The service's figures are compared against these.
//
//   GET  /groups/<uid>          one point select by uid
//   GET  /list?parent=<uid>     a page of 50 children by uid, plus count(*)
//   POST /groups {parent,name}  one INSERT … RETURNING
//   POST /groups-with-event     the same INSERT and its event (the service's
//                               outbox statement) in one transaction
//
// Usage: DATABASE_URL=… node --import tsx bench/floor-server.ts  (prints {"port":N})
import { randomBytes } from "node:crypto";
import http from "node:http";
import postgres from "postgres";
import { GROUP_COLUMNS, groupJson, type GroupRow } from "./fixtures.js";

const url = process.env["DATABASE_URL"];
if (!url) throw new Error("DATABASE_URL is required");
// max 10: the service's own pool size, so both get the same database concurrency.
const sql = postgres(url, { max: 10, onnotice: () => {} });
const columns = sql(GROUP_COLUMNS as unknown as string[]);
const PAGE = 50;

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(json) });
  res.end(json);
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  let s = "";
  for await (const chunk of req) s += String(chunk);
  return s;
}

async function route(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
  const path = req.url ?? "/";
  if (req.method === "GET" && path.startsWith("/groups/")) {
    const [row] = await sql<GroupRow[]>`select ${columns} from groups where uid = ${path.slice("/groups/".length)}`;
    return row ? send(res, 200, groupJson(row)) : send(res, 404, { message: "not found" });
  }
  if (req.method === "GET" && path.startsWith("/list?")) {
    const parent = new URLSearchParams(path.slice("/list?".length)).get("parent") ?? "";
    // One row past the page tells whether there is a next one.
    const [page, [total]] = await Promise.all([
      sql<GroupRow[]>`select ${columns} from groups where parent_uid = ${parent} order by uid limit ${PAGE + 1}`,
      sql<{ n: string }[]>`select count(*) as n from groups where parent_uid = ${parent}`,
    ]);
    const rows = page.slice(0, PAGE);
    const last = rows[rows.length - 1];
    return send(res, 200, {
      groups: rows.map(groupJson),
      nextPageToken: page.length > PAGE && last ? Buffer.from(last.uid).toString("base64url") : "",
      totalCount: total?.n ?? "0",
      skipped: 0,
    });
  }
  if (req.method === "POST" && path === "/groups") {
    const input = JSON.parse(await readBody(req)) as { parent: string; name: string };
    const now = new Date();
    const [row] = await sql<GroupRow[]>`
      insert into groups (uid, parent_uid, name, description, resource_limits, verified, create_time, update_time)
      values (${`${input.parent}/${randomBytes(8).toString("hex")}`}, ${input.parent}, ${input.name}, '', '{}', false, ${now}, ${now})
      returning ${columns}`;
    return send(res, 200, groupJson(row!));
  }
  if (req.method === "POST" && path === "/groups-with-event") {
    const input = JSON.parse(await readBody(req)) as { parent: string; name: string };
    const now = new Date();
    const uid = `${input.parent}/${randomBytes(8).toString("hex")}`;
    const eventUid = now.getTime().toString(16).padStart(12, "0") + randomBytes(8).toString("hex");
    const row = await sql.begin(async (tx) => {
      const [created] = await tx<GroupRow[]>`
        insert into groups (uid, parent_uid, name, description, resource_limits, verified, create_time, update_time)
        values (${uid}, ${input.parent}, ${input.name}, '', '{}', false, ${now}, ${now})
        returning ${columns}`;
      const data = { after: groupJson(created!) };
      const groups = uid.split("/").map((_, i, all) => all.slice(0, i + 1).join("/"));
      // The shape of src/events/recorder.ts: the event and its deliveries in one statement.
      await tx`
        with e as (
          insert into events (uid, type, source, subject, actor, parent_uid, time, data)
          values (${eventUid}, 'platform.iam.group.created.v1', 'http://floor', ${uid}, '', ${uid}, ${now}, ${JSON.stringify(data)}::jsonb)
          returning seq)
        insert into event_deliveries (subscription_uid, event_uid, event_seq, subject, next_attempt_time, deadline)
        select s.uid, ${eventUid}, e.seq, ${uid}, ${now}, ${now}
        from e, subscriptions s
        where s.parent_uid in ${sql(groups)}
          and (jsonb_array_length(s.types) = 0 or exists (
            select 1 from jsonb_array_elements_text(s.types) p where starts_with('platform.iam.group.created.v1', p)))`;
      return created!;
    });
    return send(res, 200, groupJson(row));
  }
  send(res, 404, { message: "no such route" });
}

const server = http.createServer({ keepAliveTimeout: 5_000 }, (req, res) => {
  route(req, res).catch((e: unknown) => send(res, 500, { message: String(e) }));
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as import("node:net").AddressInfo).port })}\n`);
});
process.on("SIGTERM", () => {
  server.close();
  server.closeAllConnections();
  void sql.end({ timeout: 2 }).then(() => process.exit(0));
});
