import { withoutTrailingSlash } from "../../http/url.js";
import type { SignInVia } from "./sign-in-via.js";
import type { SignedInPerson } from "./upstream.js";

/**
 * PLATFORM_ADMINS (docs/operations.md, "Configuration"; docs/iam.md, "Platform administrators (root role bindings)"): people
 * of the deployment's upstream provider who are made `owner` at the root
 * when they sign in with a browser. Each entry names one person:
 *
 * - `<issuer>|<subject>`: the upstream's issuer URL (as PLATFORM_OIDC_ISSUER
 *   names it) and the person's `sub` claim there;
 * - `email:<address>`: whoever the upstream vouches for with that address
 *   and `email_verified: true` (compared without regard to case).
 *
 * Entries are separated by commas; spaces around an entry are ignored.
 */
export class PlatformAdmins {
  private constructor(
    private readonly subjects: ReadonlySet<string>,
    private readonly emails: ReadonlySet<string>,
    private readonly issuer: string,
  ) {}

  static readonly none = new PlatformAdmins(new Set(), new Set(), "");

  /**
   * Parses the variable; `upstreamIssuer` is PLATFORM_OIDC_ISSUER (undefined:
   * none configured). `fail` makes the error thrown for a bad value.
   */
  static parse(raw: string | undefined, upstreamIssuer: string | undefined, fail: (message: string) => Error): PlatformAdmins {
    if (raw === undefined || raw.trim() === "") return PlatformAdmins.none;
    // Only the deployment's own upstream is trusted to say who an administrator is.
    if (!upstreamIssuer) throw fail("PLATFORM_ADMINS needs PLATFORM_OIDC_ISSUER: administrators are people of that upstream provider");
    const issuer = withoutTrailingSlash(upstreamIssuer);
    const subjects = new Set<string>();
    const emails = new Set<string>();
    for (const [n, part] of raw.split(",").entries()) {
      const entry = part.trim();
      const where = `PLATFORM_ADMINS entry ${n + 1}`;
      if (entry === "") throw fail(`${where} is empty: separate entries with single commas`);
      if (/[\u0000-\u001f\u007f]/.test(entry)) throw fail(`${where} contains a control character`);
      if (entry.startsWith("email:")) {
        const address = entry.slice("email:".length);
        if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(address) || address.length > 320) {
          throw fail(`${where} ("${entry}") is not email:<address>`);
        }
        emails.add(address.toLowerCase());
        continue;
      }
      const bar = entry.indexOf("|");
      if (bar < 0) throw fail(`${where} ("${entry}") must be <issuer>|<subject> or email:<address>`);
      const entryIssuer = entry.slice(0, bar).trim();
      const subject = entry.slice(bar + 1).trim();
      if (withoutTrailingSlash(entryIssuer) !== issuer) {
        throw fail(`${where} names issuer "${entryIssuer}", but administrators are people of PLATFORM_OIDC_ISSUER (${upstreamIssuer})`);
      }
      // OIDC Core: `sub` is at most 255 ASCII characters.
      if (subject === "" || subject.length > 255) throw fail(`${where} ("${entry}") needs a subject of 1 to 255 characters after the |`);
      subjects.add(subject);
    }
    return new PlatformAdmins(subjects, emails, issuer);
  }

  get size(): number {
    return this.subjects.size + this.emails.size;
  }

  /**
   * Whether `person`, signed in `via` a provider, is named. Only the global
   * upstream counts: an organization's identity provider may assert any
   * subject or e-mail, and the development provider checks nothing.
   */
  includes(person: SignedInPerson, via: SignInVia): boolean {
    if (via.kind !== "global" || withoutTrailingSlash(person.issuer) !== this.issuer) return false;
    if (this.subjects.has(person.subject)) return true;
    return person.emailVerified && person.email !== "" && this.emails.has(person.email.toLowerCase());
  }
}
