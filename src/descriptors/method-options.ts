import { getOption, type DescMethod } from "@bufbuild/protobuf";
import { Authorization_Scope, authorization, type Authorization } from "../../gen/platform/common/v1/authorization_pb.js";
import { event_type } from "../../gen/platform/common/v1/events_pb.js";

/** The authorization `method` declares (`option (platform.common.v1.authorization)`), or undefined when it has none (refused). */
export function declaredAuthorization(method: DescMethod): Authorization | undefined {
  const decl = getOption(method, authorization);
  return decl.capability && decl.scope !== Authorization_Scope.UNSPECIFIED ? decl : undefined;
}

/** Whether `method` declares itself public (no API token: its request carries its own credential). */
export function declaredPublic(method: DescMethod): boolean {
  return getOption(method, authorization).public;
}

const eventTypes = new Map<DescMethod, string>();

/** The event type `method` declares (`option (platform.common.v1.event_type)`), or "" for a method that writes nothing. */
export function declaredEventType(method: DescMethod): string {
  let type = eventTypes.get(method);
  if (type === undefined) {
    type = getOption(method, event_type);
    eventTypes.set(method, type);
  }
  return type;
}
