import type http from "node:http";
import type http2 from "node:http2";

/** A request from either Node server (HTTP/1.1 or HTTP/2 compatibility API): every handler takes both. */
export type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
/** The response that goes with a NodeRequest. */
export type NodeResponse = http.ServerResponse | http2.Http2ServerResponse;

/** A plain HTTP route (not an RPC): the ops, auth, login, docs and registry routes, keyed by path. */
export interface Route {
  methods: string[];
  serve(req: NodeRequest, res: NodeResponse, url: URL): Promise<void>;
}
