// The REST/JSON transcoder (DESIGN §1, §4): the only public surface of src/rest.
export { ClientGone, createRestHandler, type RestHandler, type RestHandlerOptions, type RestInvoke, type RestResponse } from "./rest-handler.js";
