import type { JsonObject, JsonValue } from "./api-client.js";

export type OutputFormat = "table" | "json";

export interface Column {
  header: string;
  value: (item: JsonObject) => string;
  /** Never shortened (uids, codes: they are copied into the next command). */
  full?: boolean;
}

// Longer cells are cut with "…" so a row stays on one line; -o json has everything.
const MAX_CELL = 48;

/** Pretty JSON, exactly the REST JSON it was given. */
export function renderJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

function fit(text: string, full: boolean | undefined): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return full || oneLine.length <= MAX_CELL ? oneLine : `${oneLine.slice(0, MAX_CELL - 1)}…`;
}

/** Aligned columns under upper-case headers, two spaces apart; no trailing blanks. */
export function renderTable(columns: Column[], items: JsonObject[]): string {
  const rows = [columns.map((c) => c.header), ...items.map((item) => columns.map((c) => fit(c.value(item), c.full)))];
  const widths = columns.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map(
      (r) =>
        `${r
          .map((cell, i) => cell.padEnd(widths[i]!))
          .join("  ")
          .trimEnd()}\n`,
    )
    .join("");
}

// Cell formatters for the REST JSON.

export function text(value: JsonValue | undefined): string {
  if (value === undefined || value === null) return "";
  if (Array.isArray(value)) return value.map(text).join(",");
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** `2026-11-22T14:00:00.123Z` → `2026-11-22T14:00:00Z`. */
export function time(value: JsonValue | undefined): string {
  return typeof value === "string" ? value.replace(/\.\d+Z$/, "Z") : "";
}

export function field(item: JsonObject | undefined, path: string): JsonValue | undefined {
  let v: JsonValue | undefined = item;
  for (const key of path.split(".")) {
    v = v && typeof v === "object" && !Array.isArray(v) ? v[key] : undefined;
  }
  return v;
}

/** A column showing the field at `path` (dotted), as text or as a time. */
export function col(header: string, path: string, format: "text" | "time" = "text", full = false): Column {
  return { header, value: (item) => (format === "time" ? time(field(item, path)) : text(field(item, path))), full };
}
