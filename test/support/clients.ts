import { fromBinary, createRegistry, type DescService } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import grpc from "@grpc/grpc-js";
import protoLoader from "@grpc/proto-loader";
import { request, type Dispatcher } from "undici";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema } from "../../gen/google/rpc/status_pb.js";

export type JsonValue = null | boolean | number | string | JsonValue[] | { [k: string]: JsonValue };
export type JsonObject = { [k: string]: JsonValue };

export interface RestResponse {
  status: number;
  body: JsonObject;
  headers: Headers;
}

/** The answer's headers as a fetch Headers (made when a test asks for them). */
function headersOf(raw: Record<string, string | string[] | undefined>): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw))
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, v);
  return headers;
}

/**
 * Requests to the REST surface with a bearer token (or none). undici's request() rather than
 * fetch(): a third less CPU a call, over the thousands of calls the suite makes.
 */
export function restClient(baseUrl: string, token: string | undefined) {
  return async (method: string, path: string, body?: unknown): Promise<RestResponse> => {
    const headers: Record<string, string> = {};
    if (token) headers["authorization"] = `Bearer ${token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await request(baseUrl + path, {
      method: method as Dispatcher.HttpMethod,
      headers,
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.body.text();
    let made: Headers | undefined;
    return {
      status: res.statusCode,
      body: text ? (JSON.parse(text) as JsonObject) : {},
      get headers() {
        return (made ??= headersOf(res.headers));
      },
    };
  };
}

function bearer(token: string): Interceptor {
  return (next) => (req) => {
    req.header.set("authorization", `Bearer ${token}`);
    return next(req);
  };
}

/** What `restClient` returns: a function that calls the API over REST and reads the answer. */
export type RestClient = ReturnType<typeof restClient>;

export type Protocol = "connect" | "grpc" | "grpc-web";

/** A Connect-ES client over the given protocol. */
export function connectClient<S extends DescService>(
  service: S,
  baseUrl: string,
  token: string,
  protocol: Protocol = "connect",
): Client<S> {
  const interceptors = token ? [bearer(token)] : [];
  const transport =
    protocol === "grpc"
      ? createGrpcTransport({ baseUrl, interceptors })
      : protocol === "grpc-web"
        ? createGrpcWebTransport({ baseUrl, httpVersion: "1.1", interceptors })
        : createConnectTransport({ baseUrl, httpVersion: "1.1", interceptors });
  return createClient(service, transport);
}

const detailRegistry = createRegistry(file_google_rpc_error_details);

/** The google.rpc.Status a grpc-js error carried in grpc-status-details-bin, details unpacked to JSON-ish objects. */
export function grpcStatusDetails(err: grpc.ServiceError): { code: number; message: string; details: { type: string; value: unknown }[] } {
  const raw = err.metadata.get("grpc-status-details-bin")[0];
  if (!raw) throw new Error("no grpc-status-details-bin");
  const status = fromBinary(StatusSchema, raw as Buffer);
  return {
    code: status.code,
    message: status.message,
    details: status.details.map((any) => ({ type: any.typeUrl.replace(/^.*\//, ""), value: anyUnpack(any, detailRegistry) })),
  };
}

const grpcPackages = new Map<string, grpc.GrpcObject>();

/** The package definition of a proto file and its imports, parsed once per file (a tenth of a second each). */
function grpcPackageOf(protoFile: string): grpc.GrpcObject {
  let pkg = grpcPackages.get(protoFile);
  if (!pkg) {
    const def = protoLoader.loadSync(protoFile, {
      includeDirs: ["proto", "node_modules/google-proto-files"],
      keepCase: true,
      longs: String,
      defaults: true,
      oneofs: true,
    });
    pkg = grpc.loadPackageDefinition(def);
    grpcPackages.set(protoFile, pkg);
  }
  return pkg;
}

/** An independent gRPC client (@grpc/grpc-js + proto-loader), built from proto/ sources. */
export function grpcJsClient(address: string, serviceName: string, protoFile: string): grpc.Client & Record<string, unknown> {
  const pkg = grpcPackageOf(protoFile);
  let ctor: unknown = pkg;
  for (const part of serviceName.split(".")) ctor = (ctor as Record<string, unknown>)[part];
  const Client = ctor as grpc.ServiceClientConstructor;
  return new Client(address, grpc.credentials.createInsecure()) as unknown as grpc.Client & Record<string, unknown>;
}

/** Promise wrapper for a grpc-js unary call with a bearer token. */
export function grpcUnary<Res>(client: grpc.Client & Record<string, unknown>, method: string, req: unknown, token?: string): Promise<Res> {
  const md = new grpc.Metadata();
  if (token) md.set("authorization", `Bearer ${token}`);
  const fn = client[method] as (
    req: unknown,
    md: grpc.Metadata,
    opts: grpc.CallOptions,
    cb: (err: grpc.ServiceError | null, res: Res) => void,
  ) => void;
  return new Promise((resolve, reject) => {
    fn.call(client, req, md, { deadline: Date.now() + 10_000 }, (err, res) => (err ? reject(err) : resolve(res)));
  });
}
