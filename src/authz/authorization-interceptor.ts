import { getOption, type DescMethod } from "@bufbuild/protobuf";
import { createContextKey, type Interceptor } from "@connectrpc/connect";
import {
  Authorization_ResourceKind,
  Authorization_Scope,
  authorization,
  type Authorization,
} from "../../gen/platform/common/v1/authorization_pb.js";
import { isPublicService, principalKey } from "../auth/index.js";
import type { Database } from "../db/index.js";
import { invalidArgument, permissionDenied, unauthenticated } from "../errors/index.js";
import { listVisibilityKey } from "../list/index.js";
import type { Grants } from "./grants.js";
import { roleScope } from "./grants.js";
import type { GrantsCache } from "./grants-cache.js";

/** The caller's grants, for services that record who did something (e.g. the creator of an organization). */
export const grantsKey = createContextKey<Grants | undefined>(undefined, { description: "caller grants" });


/** The declaration of a method, or undefined when it has none (refused). */
export function declaredAuthorization(method: DescMethod): Authorization | undefined {
  const decl = getOption(method, authorization);
  return decl.capability && decl.scope !== Authorization_Scope.UNSPECIFIED ? decl : undefined;
}

function readPath(message: unknown, path: string): string {
  let cur: unknown = message;
  for (const part of path.split(".")) {
    if (cur === null || typeof cur !== "object") return "";
    cur = (cur as Record<string, unknown>)[part.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())];
  }
  return typeof cur === "string" ? cur : "";
}

/** Who may found an organization (PLATFORM_ORG_CREATION; docs/security.md). */
export type OrgCreationPolicy = "people" | "admins" | "anyone";

export interface AuthorizationOptions {
  db: Database;
  grants: GrantsCache;
  /** Tokens for this audience may call only the registry domain. */
  registryAudience: string;
  orgCreation: OrgCreationPolicy;
}

/**
 * Founding an organization makes the caller its owner, so it is not for
 * everyone: `admins` are holders of groups.create at the root; `people` adds
 * root-level identities (signed in with a browser); `anyone` adds workload
 * identities assumed through the token exchange.
 */
function mayFoundOrganization(grants: Grants, policy: OrgCreationPolicy): boolean {
  if (policy === "anyone" || grants.holdsAtRoot("groups.create")) return true;
  return policy === "people" && grants.identity.rootLevel;
}

const ORG_FOUNDERS: Record<OrgCreationPolicy, string> = {
  admins: "only platform administrators",
  people: "only people signed in with a browser and platform administrators",
  anyone: "anyone",
};

/**
 * The one authorization check (DESIGN §5): each method's declared capability
 * must be held where the declaration says, on every protocol. A method
 * without a declaration fails closed.
 */
export function authorizationInterceptor(opts: AuthorizationOptions): Interceptor {
  const declarations = new Map<string, Authorization | undefined>();
  return (next) => async (req) => {
    const service = req.service.typeName;
    if (isPublicService(service)) return next(req);
    const principal = req.contextValues.get(principalKey);
    if (!principal) throw unauthenticated("missing credentials");
    if (principal.audience === opts.registryAudience && !service.startsWith("platform.registry.")) {
      throw unauthenticated("a registry token is valid only for the registry API");
    }
    const key = `${service}/${req.method.name}`;
    if (!declarations.has(key)) declarations.set(key, declaredAuthorization(req.method));
    const decl = declarations.get(key);
    if (!decl) throw permissionDenied(`${req.method.name} declares no authorization`);

    const grants = await opts.grants.get(principal.identityUid);
    if (!grants.identity.exists) throw unauthenticated("the identity this token was issued to no longer exists");
    const denied = () => permissionDenied(`the caller lacks ${decl.capability} here`);
    switch (decl.scope) {
      case Authorization_Scope.RESOURCE: {
        const uid = readPath(req.message, decl.resourceField);
        if (!uid) {
          if (!decl.emptyMeansNewRoot) throw invalidArgument(decl.resourceField, "is required");
          if (!mayFoundOrganization(grants, opts.orgCreation)) {
            throw permissionDenied(`this server lets ${ORG_FOUNDERS[opts.orgCreation]} found organizations`, "ORG_CREATION");
          }
          break;
        }
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
        req.contextValues.set(listVisibilityKey, grants.visibility(decl.capability));
        break;
      case Authorization_Scope.ANY:
        if (!grants.holdsAnywhere(decl.capability)) throw denied();
        break;
      case Authorization_Scope.ROOT:
        if (!grants.holdsAtRoot(decl.capability)) throw denied();
        break;
      default:
        throw permissionDenied(`${req.method.name} declares an unknown scope`);
    }
    req.contextValues.set(grantsKey, grants);
    if (decl.scope === Authorization_Scope.LIST || decl.capability.endsWith(".list")) return next(req);
    // A write may have changed grants: clear this replica's cache once it is
    // committed (other replicas hear of it through NOTIFY).
    try {
      return await next(req);
    } finally {
      opts.grants.invalidate();
    }
  };
}
