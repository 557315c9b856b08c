// The bare Connect handler: GroupsService.GetGroup and nothing else, through
// @connectrpc/connect-node's adapter with default options, the same point
// select as the floor, and no interceptors. It is the ceiling for the
// service's Connect and gRPC figures (same protocol stack, none of the app).
//
// Serves Connect JSON over HTTP/1.1 on `port` and gRPC over h2c on `h2Port`
// (one port cannot do both without the service's own preface sniffing).
// Usage: DATABASE_URL=… node --import tsx bench/bare-connect-server.ts  (prints {"port":N,"h2Port":M})
import http from "node:http";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import postgres from "postgres";
import { GroupSchema, GroupsService } from "../gen/platform/iam/v2beta1/groups_pb.js";
import { GROUP_COLUMNS, type GroupRow } from "./fixtures.js";

const url = process.env["DATABASE_URL"];
if (!url) throw new Error("DATABASE_URL is required");
const sql = postgres(url, { max: 10, onnotice: () => {} });
const columns = sql(GROUP_COLUMNS as unknown as string[]);

const handler = connectNodeAdapter({
  routes: (router: ConnectRouter) =>
    router.service(GroupsService, {
      async getGroup(req) {
        const [row] = await sql<GroupRow[]>`select ${columns} from groups where uid = ${req.uid}`;
        if (!row) throw new ConnectError(`group ${req.uid} not found`, Code.NotFound);
        return create(GroupSchema, {
          uid: row.uid,
          name: row.name,
          description: row.description,
          resourceLimits: row.resource_limits,
          verified: row.verified,
          createTime: timestampFromDate(row.create_time),
          updateTime: timestampFromDate(row.update_time),
        });
      },
    }),
});

const h1 = http.createServer({ keepAliveTimeout: 5_000 }, handler);
const h2 = http2.createServer({}, handler);
const listen = (s: http.Server | http2.Http2Server) =>
  new Promise<number>((resolve) => s.listen(0, "127.0.0.1", () => resolve((s.address() as AddressInfo).port)));
const [port, h2Port] = await Promise.all([listen(h1), listen(h2)]);
process.stdout.write(`${JSON.stringify({ port, h2Port })}\n`);

process.on("SIGTERM", () => {
  h1.closeAllConnections();
  h1.close();
  h2.close();
  void sql.end({ timeout: 2 }).then(() => process.exit(0));
});
