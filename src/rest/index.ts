// The REST/JSON transcoder (docs/design.md, "Protocols and the one port", "Writes"): the only public surface of src/rest.
export {
  createJsonRenderer,
  createRestHandler,
  type RestHandler,
  type RestHandlerOptions,
  type RestResponse,
} from "./rest-handler.js";
export type { JsonRenderer } from "./json-render.js";
export { buildOpenApiDocument, type OpenApiOptions } from "./openapi.js";
