// The RPC entry point (gRPC, gRPC-Web, Connect): one file per server path, dispatched in dispatch.ts.
export { type RpcHandlerOptions, rpcHandler } from "./dispatch.js";
