// HTTP plumbing below every entry point (REST, RPC, the plain routes, login, registry): Node's
// request and response types, plain routes, bounded body reading, JSON and error answers, and
// the call contract between entry points and the call pipeline.
export { BodyReadError, BodyTooLargeError, DEFAULT_MAX_BODY_BYTES, readBody } from "./body.js";
export { CallHeader, ClientGone, type InvokeUnary, type UnaryCall } from "./call.js";
export { sendError, sendJson, type ErrorOptions, type ResponseSink } from "./response.js";
export type { NodeRequest, NodeResponse, Route } from "./types.js";
export { withoutTrailingSlash } from "./url.js";
