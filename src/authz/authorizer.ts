import { withoutTrailingSlash } from "../http/index.js";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { createContextKey, type ContextValues } from "@connectrpc/connect";
import { Authorization_ResourceKind, Authorization_Scope, type Authorization } from "../../gen/platform/common/v1/authorization_pb.js";
import { grantsUnchangedKey, isPublicService, principalKey, type Principal } from "../caller/index.js";
import type { Database } from "../db/index.js";
import { declaredAuthorization } from "../descriptors/index.js";
import { invalidArgument, permissionDenied, unauthenticated } from "../errors/index.js";
import { listVisibilityKey, type ListVisibility } from "../list/index.js";
import type { Grants } from "./grants.js";
import { roleScope } from "./grants.js";
import type { GrantsCache } from "./grants-cache.js";

/** The caller's grants, for services that record who did something (e.g. the creator of an organization). */
export const grantsKey = createContextKey<Grants | undefined>(undefined, { description: "caller grants" });

/** `group.uid` → the property names to follow in a message (`["group", "uid"]`, camel-cased). */
function propertyPath(field: string): string[] {
  return field.split(".").map((part) => part.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()));
}

function readPath(message: unknown, path: readonly string[]): string {
  let cur: unknown = message;
  for (const part of path) {
    if (cur === null || typeof cur !== "object") return "";
    cur = (cur as Record<string, unknown>)[part];
  }
  return typeof cur === "string" ? cur : "";
}

/** A method's declaration, with its resource field's property path worked out once. */
type Declared = Authorization & { resourcePath: string[] };

/** Who may found an organization (PLATFORM_ORG_CREATION; docs/security.md). */
export type OrgCreationPolicy = "people" | "admins" | "anyone";

export interface AuthorizationOptions {
  db: Database;
  grants: GrantsCache;
  /**
   * Clear the grants cache after every write this replica serves. Needed where the database's
   * NOTIFY reaches this replica after the write's response (PostgreSQL: another connection); not
   * where it is delivered before the commit resolves (PGlite, in-process), where clearing after
   * every write only made the next request read its grants again (docs/design.md, "Tokens and access").
   */
  clearGrantsAfterWrites: boolean;
  /** Tokens for this audience may call only the registry domain. */
  registryAudience: string;
  orgCreation: OrgCreationPolicy;
  /**
   * The issuers of this deployment's own sign-in: the upstream (PLATFORM_OIDC_ISSUER) and the
   * development provider where it is on. Under `people`, only persons they signed in may found
   * organizations.
   */
  founderIssuers: readonly string[];
  /** The server's clock, against which a stream's token expires. */
  clock: () => Date;
}

/**
 * A stream's access, checked again while it runs (docs/design.md, "Tokens and access"): the
 * first check only admits it, and a stream may outlive its token, its caller or its caller's
 * bindings.
 */
export interface StreamAccess {
  /**
   * What the caller may see now through `method` (a List-scoped method), or the error that ends the
   * stream: the token has expired, the identity is gone, or the caller holds the capability nowhere.
   */
  visibilityNow(principal: Principal, method: DescMethod): Promise<ListVisibility>;
}

/**
 * Founding an organization makes the caller its owner, so it is not for
 * everyone: `admins` are holders of groups.create at the root; `people` adds
 * people signed in through the deployment's own sign-in (root-level
 * identities whose issuer is one of `founderIssuers`), not those an
 * organization's identity provider vouched for: that provider's owners can
 * make up any number of people, who belong to that organization; `anyone`
 * adds every identity (docs/security.md, "Founding organizations").
 */
function mayFoundOrganization(grants: Grants, policy: OrgCreationPolicy, founderIssuers: readonly string[]): boolean {
  if (policy === "anyone" || grants.holdsAtRoot("groups.create")) return true;
  if (policy !== "people" || !grants.identity.rootLevel) return false;
  const issuer = withoutTrailingSlash(grants.identity.issuer);
  return issuer !== "" && founderIssuers.some((i) => withoutTrailingSlash(i) === issuer);
}

const ORG_FOUNDERS: Record<OrgCreationPolicy, string> = {
  admins: "only platform administrators",
  people: "only people signed in through its own sign-in (not an organization's identity provider) and platform administrators",
  anyone: "anyone",
};

/**
 * Grants live in IAM's tables (role bindings, root bindings, roles, identities), which of the
 * API's services only IAM's write: after a registry push, an advisory import or a subscription
 * the writing replica keeps its cache (docs/design.md, "Tokens and access"). Sign-in writes
 * bindings too, outside the API; it clears the cache itself (SignInDeps.grantsChanged).
 */
const GRANTING_DOMAIN = "platform.iam.";

function mayChangeGrants(service: string, decl: Authorization): boolean {
  return service.startsWith(GRANTING_DOMAIN) && decl.scope !== Authorization_Scope.LIST && !decl.capability.endsWith(".list");
}

/** What authorization looks at: the same for an RPC interceptor and for the REST entry point. */
export interface AuthorizedCall {
  service: DescService;
  method: DescMethod;
  message: unknown;
  values: ContextValues;
}

/**
 * The one authorization check (docs/design.md, "Tokens and access"): each method's declared capability
 * must be held where the declaration says, on every protocol. A method
 * without a declaration fails closed. `authorize` is a plain function of the
 * call, so the Connect interceptor and the REST entry point run the same code.
 */
export class Authorizer implements StreamAccess {
  private readonly declarations = new Map<DescMethod, Declared | undefined>();

  constructor(private readonly opts: AuthorizationOptions) {}

  private declared(method: DescMethod): Declared | undefined {
    if (!this.declarations.has(method)) {
      const found = declaredAuthorization(method);
      this.declarations.set(method, found && Object.assign(found, { resourcePath: propertyPath(found.resourceField) }));
    }
    return this.declarations.get(method);
  }

  /** Checks `call`, records the caller's grants in its context values, then runs `invoke`. */
  async authorize<T>(call: AuthorizedCall, invoke: () => Promise<T>): Promise<T> {
    const opts = this.opts;
    const service = call.service.typeName;
    if (isPublicService(service)) return invoke();
    const principal = call.values.get(principalKey);
    if (!principal) throw unauthenticated("missing credentials");
    if (principal.audience === opts.registryAudience && !service.startsWith("platform.registry.")) {
      throw unauthenticated("a registry token is valid only for the registry API", true);
    }
    const decl = this.declared(call.method);
    if (!decl) throw permissionDenied(`${call.method.name} declares no authorization`);

    const grants = await opts.grants.get(principal.identityUid);
    if (!grants.identity.exists) throw unauthenticated("the identity this token was issued to no longer exists", true);
    const denied = () => permissionDenied(`the caller lacks ${decl.capability} here`);
    switch (decl.scope) {
      case Authorization_Scope.RESOURCE: {
        const uid = readPath(call.message, decl.resourcePath);
        if (!uid) {
          if (!decl.emptyMeansNewRoot) throw invalidArgument(decl.resourceField, "is required");
          if (!mayFoundOrganization(grants, opts.orgCreation, opts.founderIssuers)) {
            throw permissionDenied(`this server lets ${ORG_FOUNDERS[opts.orgCreation]} found organizations`, "ORG_CREATION");
          }
          break;
        }
        // Anyone may read their own identity (who am I, by what name): it tells nothing new.
        if (decl.capability === "identity.list" && uid === principal.identityUid) break;
        let path = uid;
        if (decl.resourceKind === Authorization_ResourceKind.ROLE) {
          const role = await roleScope(opts.db, uid);
          // Built-in roles are global: whoever may read roles somewhere may read them.
          if (role?.global && decl.capability.endsWith(".list")) {
            if (!grants.holdsAnywhere(decl.capability)) throw denied();
            break;
          }
          path = role?.path ?? uid;
        }
        if (!grants.holdsAt(decl.capability, path)) throw denied();
        break;
      }
      case Authorization_Scope.LIST:
        call.values.set(listVisibilityKey, grants.visibility(decl.capability));
        break;
      case Authorization_Scope.ANY:
        if (!grants.holdsAnywhere(decl.capability)) throw denied();
        break;
      case Authorization_Scope.ROOT:
        if (!grants.holdsAtRoot(decl.capability)) throw denied();
        break;
      default:
        throw permissionDenied(`${call.method.name} declares an unknown scope`);
    }
    call.values.set(grantsKey, grants);
    if (!opts.clearGrantsAfterWrites || !mayChangeGrants(service, decl)) return invoke();
    // A write may have changed grants: clear this replica's cache once it is
    // committed (other replicas hear of it through NOTIFY), unless the handler vouched that it
    // touched no grant table.
    try {
      return await invoke();
    } finally {
      if (!call.values.get(grantsUnchangedKey)) opts.grants.invalidate();
    }
  }

  async visibilityNow(principal: Principal, method: DescMethod): Promise<ListVisibility> {
    const decl = this.declared(method);
    if (decl?.scope !== Authorization_Scope.LIST) throw permissionDenied(`${method.name} is not a list`);
    if (this.opts.clock().getTime() >= principal.expiry.getTime()) {
      throw unauthenticated(
        "the token this stream was opened with has expired: open it again with a new token (resume after the last event id received)",
        true,
      );
    }
    const grants = await this.opts.grants.get(principal.identityUid);
    if (!grants.identity.exists) throw unauthenticated("the identity this token was issued to no longer exists", true);
    const visibility = grants.visibility(decl.capability);
    if (!visibility.all && visibility.roots.length === 0) {
      throw permissionDenied(`the caller holds ${decl.capability} nowhere, so there is nothing to stream`);
    }
    return visibility;
  }
}
