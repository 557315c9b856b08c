import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

/** An events row as SQL returns it (snake_case; time as a Date or a string, by driver). */
export interface EventRow {
  uid: string;
  type: string;
  source: string;
  subject: string;
  actor: string;
  parent_uid: string | null;
  time: Date | string;
  data: JsonValue | string;
}

/**
 * The structured-mode CloudEvents 1.0 JSON of an event: the context
 * attributes at the top level, `actor` and `group` as extension attributes,
 * the change under `data`.
 */
export function cloudEvent(e: EventRow): JsonObject {
  return {
    specversion: "1.0",
    id: e.uid,
    source: e.source,
    type: e.type,
    subject: e.subject,
    time: new Date(e.time).toISOString(),
    datacontenttype: "application/json",
    actor: e.actor,
    group: e.parent_uid ?? "",
    data: typeof e.data === "string" ? (JSON.parse(e.data) as JsonValue) : e.data,
  };
}
