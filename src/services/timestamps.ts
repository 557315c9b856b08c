import { timestampFromDate, timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";

/** Rows keep millisecond Dates; the API renders them as Timestamps. */
export function toTimestamp(d: Date): Timestamp;
export function toTimestamp(d: Date | null): Timestamp | undefined;
export function toTimestamp(d: Date | null): Timestamp | undefined {
  return d ? timestampFromDate(d) : undefined;
}

export function fromTimestamp(t: Timestamp): Date {
  return timestampDate(t);
}

/** A bound on millisecond columns: a finer time is rounded up, so that `>=` (and `<`) stay exact. */
export function millisAtOrAfter(t: Timestamp): Date {
  return new Date(Number(t.seconds) * 1000 + Math.ceil(t.nanos / 1e6));
}
