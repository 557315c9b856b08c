import { randomBytes } from "node:crypto";

/** A root group uid: 20 random bytes as 40 hex characters. */
export function newRootUid(): string {
  return randomBytes(20).toString("hex");
}

/** A uid inside `parent`: `<parent>/<16 hex>` (8 random bytes). */
export function newChildUid(parent: string): string {
  return `${parent}/${randomBytes(8).toString("hex")}`;
}

/** The uid of the group holding `uid`, or "" for a single-segment uid. */
export function parentOf(uid: string): string {
  const i = uid.lastIndexOf("/");
  return i < 0 ? "" : uid.slice(0, i);
}
