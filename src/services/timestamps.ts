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
