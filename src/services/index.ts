import { GroupsService } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { apiService, type ApiService } from "./api-service.js";
import { groupsService } from "./iam/groups.js";

export type { ServiceContext } from "./context.js";
export type { ApiService } from "./api-service.js";

/** Every API service the server exposes, in the order reflection lists them. */
export const API_SERVICES: ApiService[] = [
  apiService(GroupsService, groupsService),
];
