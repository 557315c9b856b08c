// The rules the protos declare, read from their descriptors in one place:
// which standard method a method is, its declared authorization and event
// type, the request check (text, uid kinds, counts: docs/security.md,
// "Input") and INPUT_ONLY. Low in the layers: it depends on gen/, errors and
// src/db/uid.ts only, so auth, events, services and the CLI all import it.
export { declaredAuthorization, declaredEventType, declaredPublic } from "./method-options.js";
export { withoutInputOnly } from "./input-only.js";
export { checkRequest, checkText, MAX_MAP_KEY_LENGTH, MAX_REPEATED, uidKindOf } from "./request-check.js";
export { standardMethodOf, type StandardMethod } from "./standard-method.js";
