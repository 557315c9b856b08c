import { GroupsService } from "../../../gen/platform/iam/v1/groups_pb.js";
import { IdentitiesService } from "../../../gen/platform/iam/v1/identities_pb.js";
import { RoleBindingsService } from "../../../gen/platform/iam/v1/role_bindings_pb.js";
import { RolesService } from "../../../gen/platform/iam/v1/roles_pb.js";
import { ReposService } from "../../../gen/platform/registry/v1/repos_pb.js";
import { TagsService } from "../../../gen/platform/registry/v1/tags_pb.js";
import { apiService, type ApiService } from "../api-service.js";
import { v1GroupsService } from "./groups.js";
import { v1IdentitiesService } from "./identities.js";
import { v1RoleBindingsService } from "./role-bindings.js";
import { v1RolesService } from "./roles.js";
import { v1ReposService } from "./repos.js";
import { v1TagsService } from "./tags.js";

/** The v1 API (docs/design.md, "v1 beside v2"): adapters over the v2 implementations, so the same store and behaviour. */
export const V1_API_SERVICES: ApiService[] = [
  apiService(GroupsService, v1GroupsService),
  apiService(IdentitiesService, v1IdentitiesService),
  apiService(RolesService, v1RolesService),
  apiService(RoleBindingsService, v1RoleBindingsService),
  apiService(ReposService, v1ReposService),
  apiService(TagsService, v1TagsService),
];
