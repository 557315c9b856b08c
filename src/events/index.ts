export {
  EventRecorder,
  actorOf,
  newEventUid,
  type Change,
  type ChangeCall,
  type PlainEvent,
  type EventRecorderOptions,
} from "./recorder.js";
export { WebhookDispatcher, subscriptionSecretContext, type DispatcherOptions } from "./dispatcher.js";
export { cloudEvent, type EventRow } from "./cloud-event.js";
export { EventHub, DELIVERIES_CHANNEL, EVENTS_CHANNEL, type HubEvent, type LiveBatch, type LiveEvents } from "./hub.js";
export { EventRetention, type RetentionOptions } from "./retention.js";
export { CreatorCheck, creatorRefusal, type CreatorCheckOptions, type GrantsOf } from "./creator-check.js";
export { CREATOR_DELETED, creatorMayNotList, stopSubscriptions } from "./stop-subscriptions.js";
// services/iam/binding-events.ts reads event types through here; the rule itself is src/descriptors/.
