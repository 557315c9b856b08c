import { invalidArgument } from "../errors/index.js";

export type Direction = "asc" | "desc";

export interface OrderBy {
  /** Canonical field name: uid, name, create_time, update_time or time. */
  field: string;
  direction: Direction;
}

// Accepted spellings of each sortable field (proto, JSON and v1 names).
const FIELD_ALIASES: Record<string, string> = {
  uid: "uid",
  name: "name",
  create_time: "create_time",
  createTime: "create_time",
  created_at: "create_time",
  createdAt: "create_time",
  update_time: "update_time",
  updateTime: "update_time",
  updated_at: "update_time",
  updatedAt: "update_time",
  time: "time",
};

/**
 * Parses `field`, `field asc` or `field desc` (AIP-132). `allowed` are the
 * canonical fields the resource has; anything else is INVALID_ARGUMENT on order_by.
 */
export function parseOrderBy(raw: string, allowed: readonly string[]): OrderBy {
  const text = raw.trim();
  if (text === "") return { field: "uid", direction: "asc" };
  const parts = text.split(/\s+/);
  const [name, dir, ...rest] = parts;
  const field = name === undefined ? undefined : FIELD_ALIASES[name];
  if (field === undefined || !allowed.includes(field)) {
    throw invalidArgument(
      "order_by",
      `unknown sort field "${name ?? ""}"; use one of ${allowed.join(", ")}, optionally followed by asc or desc`,
    );
  }
  if (rest.length > 0 || (dir !== undefined && !/^(asc|desc)$/i.test(dir))) {
    throw invalidArgument("order_by", `must be "<field>", "<field> asc" or "<field> desc"`);
  }
  return { field, direction: dir?.toLowerCase() === "desc" ? "desc" : "asc" };
}
