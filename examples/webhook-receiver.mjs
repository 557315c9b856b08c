// A webhook receiver for platform-api subscriptions (docs/events.md, "Events and webhooks"):
// checks the Standard Webhooks signature of each delivery with node:crypto alone, on the body
// exactly as it arrived, before parsing it, and prints each event once.
//
//   WEBHOOK_SECRET=whsec_… node examples/webhook-receiver.mjs      (PORT: default 3000)
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";

const secret = process.env.WEBHOOK_SECRET ?? "";
if (!secret.startsWith("whsec_")) {
  console.error("WEBHOOK_SECRET must be the whsec_… secret the subscription's create returned");
  process.exit(2);
}
const key = Buffer.from(secret.slice("whsec_".length), "base64");
const port = Number(process.env.PORT ?? 3000);
const TOLERANCE_S = 5 * 60; // a delivery signed longer ago (or ahead) than this is refused
const MAX_BODY = 1 << 20;
const seen = new Set(); // use a durable store in production: deliveries are at least once

/** True when one of the header's `v1,<base64>` signatures is the HMAC of `id.timestamp.body`. */
function verified(id, timestamp, signatures, body) {
  const expected = createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest();
  return signatures.split(" ").some((entry) => {
    const [version, signature] = entry.split(",", 2);
    const given = Buffer.from(signature ?? "", "base64");
    return version === "v1" && given.length === expected.length && timingSafeEqual(given, expected);
  });
}

createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on("data", (chunk) => {
    size += chunk.length;
    if (size > MAX_BODY) req.destroy();
    else chunks.push(chunk);
  });
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    const id = String(req.headers["webhook-id"] ?? "");
    const timestamp = String(req.headers["webhook-timestamp"] ?? "");
    const fresh = /^\d{1,12}$/.test(timestamp) && Math.abs(Date.now() / 1000 - Number(timestamp)) <= TOLERANCE_S;
    if (!id || !fresh || !verified(id, timestamp, String(req.headers["webhook-signature"] ?? ""), body)) {
      res.writeHead(400).end();
      return;
    }
    if (!seen.has(id)) {
      seen.add(id);
      const event = JSON.parse(body.toString("utf8"));
      console.log(event.type, event.subject, event.actor);
    }
    res.writeHead(204).end(); // any 2xx: delivered; anything else is retried
  });
}).listen(port, "127.0.0.1", () => console.error(`listening on http://127.0.0.1:${port}/`));
