import { EventEmitter } from "node:events";
import { PassThrough } from "node:stream";
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { GroupSchema, GroupsService } from "../../../gen/platform/iam/v2beta1/groups_pb.js";
import type { NodeRequest, NodeResponse } from "../../http/index.js";
import { rpcHandler } from "./dispatch.js";

/** A response whose writeHead throws (as Node does for a header value it refuses). */
function brokenResponse() {
  const res = new EventEmitter() as EventEmitter & Record<string, unknown>;
  Object.assign(res, {
    headersSent: false,
    writableEnded: false,
    destroyed: false,
    statusCode: 200,
    writeHead: () => {
      throw new TypeError("Invalid character in header content");
    },
    setHeader: () => {},
    addTrailers: () => {},
    end: () => {
      res["writableEnded"] = true;
    },
    destroy: () => {
      res["destroyed"] = true;
    },
  });
  return res;
}

function connectJsonPost(body: string): PassThrough & Record<string, unknown> {
  const req = new PassThrough() as PassThrough & Record<string, unknown>;
  Object.assign(req, {
    method: "POST",
    url: "/platform.iam.v2beta1.GroupsService/GetGroup",
    httpVersion: "1.1",
    httpVersionMajor: 1,
    headers: { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), host: "localhost" },
    socket: {},
  });
  req.end(body);
  return req;
}

describe("rpcHandler's direct paths", () => {
  it("end a response that failed outside their own error handling with 500, and report it (no unhandled rejection)", async () => {
    const errors: unknown[] = [];
    const handle = rpcHandler({
      routes: (router) => router.service(GroupsService, { getGroup: async () => create(GroupSchema) }),
      fallback: () => {
        throw new Error("not a fallback request");
      },
      onError: (e) => errors.push(e),
      renderJson: (schema, message) => JSON.stringify({ schema: schema.typeName, uid: (message as { uid?: string }).uid }),
      direct: async () => create(GroupSchema, { uid: "g" }),
      directs: () => true,
    });
    const res = brokenResponse();
    handle(connectJsonPost('{"uid":"g"}') as unknown as NodeRequest, res as unknown as NodeResponse);
    for (let i = 0; i < 100 && errors.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(String(errors[0])).toContain("Invalid character in header content");
    expect(res["statusCode"]).toBe(500);
    expect(res["writableEnded"]).toBe(true);
  });
});
