import { Code } from "@connectrpc/connect";
import type { DescriptorIndex } from "./descriptor-index.js";

/**
 * A reflection request, as both grpc.reflection.v1 and v1alpha shape it: the
 * two versions are field-for-field identical, so one implementation serves both.
 */
export interface ReflectionRequest {
  readonly host: string;
  readonly messageRequest:
    | { readonly case: "fileByFilename"; readonly value: string }
    | { readonly case: "fileContainingSymbol"; readonly value: string }
    | {
        readonly case: "fileContainingExtension";
        readonly value: { readonly containingType: string; readonly extensionNumber: number };
      }
    | { readonly case: "allExtensionNumbersOfType"; readonly value: string }
    | { readonly case: "listServices"; readonly value: string }
    | { readonly case: undefined; readonly value?: undefined };
}

/** The `message_response` oneof of a reflection response, as a message initializer. */
export type ReflectionAnswer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

/**
 * The state of one ServerReflectionInfo stream. The reflection spec lets a
 * server leave out files it already sent earlier on the same stream; like
 * grpc-go we do, which keeps the answers to grpcurl's and buf curl's many
 * lookups small (google/protobuf/descriptor.proto alone is 13 kB).
 */
export class ReflectionSession {
  private readonly sent = new Set<string>();

  constructor(private readonly index: DescriptorIndex) {}

  /** Answers one request. Lookup failures become an error_response, so the stream carries on. */
  answer(request: ReflectionRequest): ReflectionAnswer {
    const req = request.messageRequest;
    switch (req.case) {
      case "listServices":
        return {
          case: "listServicesResponse",
          value: { service: this.index.services().map((name) => ({ name })) },
        };
      case "fileByFilename":
        return this.index.hasFile(req.value) ? this.files(req.value) : notFound(`file not found: ${req.value}`);
      case "fileContainingSymbol": {
        const file = this.index.fileContainingSymbol(req.value);
        return file === undefined ? notFound(`symbol not found: ${req.value}`) : this.files(file);
      }
      case "fileContainingExtension": {
        const { containingType, extensionNumber } = req.value;
        const file = this.index.fileContainingExtension(containingType, extensionNumber);
        return file === undefined ? notFound(`extension ${extensionNumber} of ${containingType} not found`) : this.files(file);
      }
      case "allExtensionNumbersOfType": {
        const numbers = this.index.extensionNumbersOf(req.value);
        return numbers === undefined
          ? notFound(`message type not found: ${req.value}`)
          : {
              case: "allExtensionNumbersResponse",
              value: { baseTypeName: req.value, extensionNumber: numbers },
            };
      }
      case undefined:
        return {
          case: "errorResponse",
          value: { errorCode: Code.InvalidArgument, errorMessage: "reflection request has no message_request" },
        };
    }
  }

  private files(name: string): ReflectionAnswer {
    const files = this.index.fileWithImports(name, this.sent);
    for (const file of files) {
      this.sent.add(file.name);
    }
    return { case: "fileDescriptorResponse", value: { fileDescriptorProto: files.map((f) => f.bytes) } };
  }
}

function notFound(message: string): ReflectionAnswer {
  // Connect's codes are gRPC's codes: Code.NotFound is 5.
  return { case: "errorResponse", value: { errorCode: Code.NotFound, errorMessage: message } };
}
