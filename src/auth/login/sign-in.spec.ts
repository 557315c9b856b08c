import { describe, expect, it } from "vitest";
import { testEventRecorder } from "../../../test/support/event-recorder.js";
import { migratedStorePerFile } from "../../../test/support/fresh-store.js";
import type { DatabaseHandle } from "../../db/index.js";
import type { TokenService } from "../tokens.js";
import { PlatformAdmins } from "./platform-admins.js";
import { signIn, type SignInDeps } from "./sign-in.js";
import type { SignedInPerson } from "./upstream.js";

// A sign-in that makes bindings tells the replica to clear its grants cache once it has committed,
// as an API write that grants does (the database's NOTIFY may reach the replica after the token).

const ISSUER = "https://login.example.com";
const NOW = new Date("2030-03-01T00:00:00.000Z");
let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));

function deps(cleared: string[]): SignInDeps {
  return {
    db: handle.db,
    tokens: { mint: async (subject: string) => ({ token: `token-of-${subject}`, expiry: NOW }) } as unknown as TokenService,
    audience: "https://platform.test",
    clock: () => NOW,
    admins: PlatformAdmins.parse(`${ISSUER}|ada`, ISSUER, (m) => new Error(m)),
    events: testEventRecorder(() => NOW),
    grantsChanged: () => cleared.push("cleared"),
  };
}

const person = (subject: string): SignedInPerson => ({ issuer: ISSUER, subject, email: "", emailVerified: false, name: subject });

describe("signIn and the grants cache", () => {
  it("clears it after a sign-in that made a binding, and only then", async () => {
    const cleared: string[] = [];
    // A platform administrator's first sign-in binds owner at the root.
    await signIn(deps(cleared), person("ada"), { invite: "", via: { kind: "global" } });
    expect(cleared).toEqual(["cleared"]);
    // The binding is there already; someone who is not an administrator gets none.
    await signIn(deps(cleared), person("ada"), { invite: "", via: { kind: "global" } });
    await signIn(deps(cleared), person("bob"), { invite: "", via: { kind: "global" } });
    expect(cleared).toEqual(["cleared"]);
  });
});
