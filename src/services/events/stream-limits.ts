// The caps on open WatchEvents streams, apart from their bookkeeping (streams.ts): the configuration
// reads them without loading the store and the services.

/** Open WatchEvents streams one identity may hold on one server, by default (PLATFORM_MAX_EVENT_STREAMS_PER_IDENTITY). */
export const MAX_STREAMS_PER_IDENTITY = 16;
/**
 * Open streams that may read one organization's events on one server, whoever holds them, by
 * default (PLATFORM_MAX_EVENT_STREAMS_PER_ORG): an owner can make identities at will (its own, or
 * people through its identity provider).
 */
export const MAX_STREAMS_PER_ORGANIZATION = 64;
/** Open streams on one server, whoever holds them, by default (PLATFORM_MAX_EVENT_STREAMS). */
export const MAX_STREAMS_PER_SERVER = 1024;

/** The caps on open WatchEvents streams (docs/security.md, "Event streams"). */
export interface EventStreamLimits {
  perIdentity: number;
  perOrganization: number;
  perServer: number;
}

export const DEFAULT_EVENT_STREAM_LIMITS: EventStreamLimits = {
  perIdentity: MAX_STREAMS_PER_IDENTITY,
  perOrganization: MAX_STREAMS_PER_ORGANIZATION,
  perServer: MAX_STREAMS_PER_SERVER,
};
