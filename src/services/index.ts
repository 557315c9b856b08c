import { GroupsService } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/platform/iam/v2beta1/identities_pb.js";
import { RolesService } from "../../gen/platform/iam/v2beta1/roles_pb.js";
import { RoleBindingsService } from "../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { RootRoleBindingsService } from "../../gen/platform/iam/v2beta1/root_role_bindings_pb.js";
import { AccountAssociationsService } from "../../gen/platform/iam/v2beta1/account_associations_pb.js";
import { GroupInvitesService } from "../../gen/platform/iam/v2beta1/group_invites_pb.js";
import { IdentityProvidersService } from "../../gen/platform/iam/v2beta1/identity_providers_pb.js";
import { ReposService } from "../../gen/platform/registry/v2beta1/repos_pb.js";
import { TagsService } from "../../gen/platform/registry/v2beta1/tags_pb.js";
import { AdvisoriesService } from "../../gen/platform/vulnerabilities/v2beta1/advisories_pb.js";
import { EventsService } from "../../gen/platform/events/v2beta1/events_pb.js";
import { SubscriptionsService } from "../../gen/platform/events/v2beta1/subscriptions_pb.js";
import { eventsService } from "./events/events.js";
import { subscriptionsService } from "./events/subscriptions.js";
import { apiService, type ApiService } from "./api-service.js";
import { groupsService } from "./iam/groups.js";
import { reposService } from "./registry/repos.js";
import { tagsService } from "./registry/tags.js";
import { advisoriesService } from "./vulnerabilities/advisories.js";
import { identitiesService } from "./iam/identities.js";
import { rolesService } from "./iam/roles.js";
import { roleBindingsService } from "./iam/role-bindings.js";
import { rootRoleBindingsService } from "./iam/root-role-bindings.js";
import { accountAssociationsService } from "./iam/account-associations.js";
import { groupInvitesService } from "./iam/group-invites.js";
import { identityProvidersService } from "./iam/identity-providers.js";
import { V1_API_SERVICES } from "./v1/index.js";
import { API_SERVICE_DESCRIPTORS } from "../../gen/api-index.js";
import { assertEveryServiceImplemented } from "./service-coverage.js";

export type { ServiceContext } from "./context.js";
export type { ApiService, BoundService } from "./api-service.js";
export { ResourceCatalog } from "./resource-catalog.js";

/** Every API service the server exposes, in the order reflection lists them. */
export const API_SERVICES: ApiService[] = [
  apiService(GroupsService, groupsService),
  apiService(IdentitiesService, identitiesService),
  apiService(RolesService, rolesService),
  apiService(RoleBindingsService, roleBindingsService),
  apiService(RootRoleBindingsService, rootRoleBindingsService),
  apiService(IdentityProvidersService, identityProvidersService),
  apiService(AccountAssociationsService, accountAssociationsService),
  apiService(GroupInvitesService, groupInvitesService),
  apiService(ReposService, reposService),
  apiService(TagsService, tagsService),
  apiService(AdvisoriesService, advisoriesService),
  apiService(EventsService, eventsService),
  apiService(SubscriptionsService, subscriptionsService),
  ...V1_API_SERVICES,
];

// At load, so at start: a proto service without an implementation fails loudly (docs/design.md, "Tokens and access").
assertEveryServiceImplemented(API_SERVICE_DESCRIPTORS, API_SERVICES);
