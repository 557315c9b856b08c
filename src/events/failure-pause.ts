/** The longest pause after failed rounds (the database unreachable). */
const MAX_FAILURE_PAUSE_MS = 30_000;

/**
 * How long the hub and the dispatcher stop asking the database after `failures` failed rounds in
 * a row: asking every poll would only push the driver's reconnect backoff up, and with it every
 * API call's wait (docs/design.md, "Webhooks"). Doubles from twice the poll, up to 30 s.
 */
export function failurePauseMs(pollMs: number, failures: number): number {
  return Math.min(pollMs * 2 ** failures, MAX_FAILURE_PAUSE_MS);
}
