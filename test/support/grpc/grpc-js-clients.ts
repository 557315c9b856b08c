import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

// An independent client: grpc-js with the upstream .proto files, none of our
// generated code, so a mistake in our descriptors cannot cancel itself out.
const root = fileURLToPath(new URL("../../../node_modules/", import.meta.url));
const protoFiles = {
  v1: `${root}@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto`,
  v1alpha: `${root}@grpc/reflection/build/proto/grpc/reflection/v1alpha/reflection.proto`,
  health: `${root}grpc-health-check/proto/health/v1/health.proto`,
};

// Field names as on the wire (keepCase), enums as names, oneofs named.
const loaderOptions: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

export type ReflectionVersion = "v1" | "v1alpha";

/** A reflection request as grpc-js takes it (proto-loader, keepCase). */
export type JsReflectionRequest = { host?: string } & (
  | { list_services: string }
  | { file_by_filename: string }
  | { file_containing_symbol: string }
  | { file_containing_extension: { containing_type: string; extension_number: number } }
  | { all_extension_numbers_of_type: string }
  | Record<string, never>
);

/** The parts of a reflection response the tests read. */
export interface JsReflectionResponse {
  valid_host: string;
  original_request: Record<string, unknown> | null;
  message_response?: string;
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
  all_extension_numbers_response?: { base_type_name: string; extension_number: number[] };
  list_services_response?: { service: { name: string }[] };
  error_response?: { error_code: number; error_message: string };
}

export interface JsHealthResponse {
  status: "UNKNOWN" | "SERVING" | "NOT_SERVING" | "SERVICE_UNKNOWN";
}

function service(file: string, path: string[]): grpc.ServiceClientConstructor {
  let node: unknown = grpc.loadPackageDefinition(protoLoader.loadSync(file, loaderOptions));
  for (const key of path) {
    node = (node as Record<string, unknown>)[key];
  }
  return node as grpc.ServiceClientConstructor;
}

function method(ctor: grpc.ServiceClientConstructor, name: string): grpc.MethodDefinition<object, object> {
  const def = ctor.service[name];
  if (def === undefined) {
    throw new Error(`no method ${name}`);
  }
  return def;
}

/**
 * Sends `requests` on one ServerReflectionInfo stream, half-closes it, and
 * resolves with every response; rejects after `timeoutMs`.
 */
export function reflect(
  version: ReflectionVersion,
  address: string,
  requests: JsReflectionRequest[],
  timeoutMs = 5000,
): Promise<JsReflectionResponse[]> {
  const ctor = service(protoFiles[version], ["grpc", "reflection", version, "ServerReflection"]);
  const def = method(ctor, "ServerReflectionInfo");
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const call = client.makeBidiStreamRequest<JsReflectionRequest, JsReflectionResponse>(
    def.path,
    def.requestSerialize,
    def.responseDeserialize as (b: Buffer) => JsReflectionResponse,
    new grpc.Metadata(),
    { deadline: Date.now() + timeoutMs },
  );
  return new Promise<JsReflectionResponse[]>((resolve, reject) => {
    const out: JsReflectionResponse[] = [];
    call.on("data", (res: JsReflectionResponse) => out.push(res));
    call.on("error", (err: Error) => {
      client.close();
      reject(err);
    });
    call.on("end", () => {
      client.close();
      resolve(out);
    });
    for (const req of requests) {
      call.write(req);
    }
    call.end();
  });
}

/** A grpc-js client of grpc.health.v1.Health; `close()` when done. */
export class HealthClient {
  private readonly ctor = service(protoFiles.health, ["grpc", "health", "v1", "Health"]);
  private readonly client: grpc.Client;

  constructor(address: string) {
    this.client = new grpc.Client(address, grpc.credentials.createInsecure());
  }

  check(service: string, timeoutMs = 5000): Promise<JsHealthResponse> {
    return this.unary("Check", { service }, timeoutMs);
  }

  list(timeoutMs = 5000): Promise<{ statuses: Record<string, JsHealthResponse> }> {
    return this.unary("List", {}, timeoutMs);
  }

  /** Starts Watch; the stream emits "data", "error" and "end" events. */
  watch(service: string): grpc.ClientReadableStream<JsHealthResponse> {
    const def = method(this.ctor, "Watch");
    return this.client.makeServerStreamRequest<{ service: string }, JsHealthResponse>(
      def.path,
      def.requestSerialize,
      def.responseDeserialize as (b: Buffer) => JsHealthResponse,
      { service },
    );
  }

  close(): void {
    this.client.close();
  }

  private unary<Req extends object, Res>(name: string, req: Req, timeoutMs: number): Promise<Res> {
    const def = method(this.ctor, name);
    return new Promise<Res>((resolve, reject) => {
      this.client.makeUnaryRequest<Req, Res>(
        def.path,
        def.requestSerialize,
        def.responseDeserialize as (b: Buffer) => Res,
        req,
        new grpc.Metadata(),
        { deadline: Date.now() + timeoutMs },
        (err, res) => (err !== null || res === undefined ? reject(err ?? new Error("no response")) : resolve(res)),
      );
    });
  }
}
