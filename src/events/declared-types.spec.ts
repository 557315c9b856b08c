import { getOption } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { API_SERVICE_DESCRIPTORS } from "../../gen/api-index.js";
import { authorization } from "../../gen/platform/common/v1/authorization_pb.js";
import { declaredEventType, standardMethodOf } from "../descriptors/index.js";

// Every write RPC declares the event it records (docs/design.md, "Events"):
// a new write method without one fails here, not silently in production.

const methods = API_SERVICE_DESCRIPTORS.flatMap((s) => s.methods.map((m) => ({ key: `${s.typeName}/${m.name}`, method: m })));
/** A method writes when the capability it needs is not a `.list` one (reads are all declared as lists). */
const writes = (m: (typeof methods)[number]) => !getOption(m.method, authorization).capability.endsWith(".list");

describe("declared event types", () => {
  it("every write method declares a platform event type; no read method declares one", () => {
    expect(methods.filter(writes).length).toBeGreaterThan(30);
    const missing = methods.filter((m) => writes(m) && !declaredEventType(m.method)).map((m) => m.key);
    expect(missing).toEqual([]);
    const onReads = methods.filter((m) => !writes(m) && declaredEventType(m.method)).map((m) => m.key);
    expect(onReads).toEqual([]);
  });

  it("names them platform.<area>.<resource>.<verb>.v1, the verb matching the method", () => {
    for (const { key, method } of methods.filter(writes)) {
      const type = declaredEventType(method);
      expect(type, key).toMatch(/^platform\.(iam|registry|vulnerabilities|events)\.[a-z_]+\.(created|updated|deleted|imported)\.v1$/);
      // A batch records its single method's event; a custom method's is named for its verb (ImportAdvisories: imported).
      const verb = (standardMethodOf(method)?.replace(/^Batch/, "") ?? /^[A-Z][a-z]+/.exec(method.name)?.[0])?.toLowerCase();
      expect(type.split(".")[3], key).toBe(`${verb}${verb?.endsWith("e") ? "d" : "ed"}`);
    }
  });

  it("gives a v1 method the type of its v2 twin", () => {
    const byName = new Map(
      methods.filter((m) => m.key.includes(".v2beta1.")).map((m) => [m.key.replace(".v2beta1.", "."), declaredEventType(m.method)]),
    );
    for (const { key, method } of methods.filter((m) => writes(m) && m.key.includes(".v1."))) {
      expect(declaredEventType(method), key).toBe(byName.get(key.replace(".v1.", ".")));
    }
  });
});
