import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { invalidArguments } from "../../errors/index.js";

// The v1 shape of the fields every resource shares, and the v1 update.

/** The v2 fields that v1 renames: uid → id, create_time → created_at, update_time → updated_at. */
export interface V2Record {
  uid: string;
  createTime?: Timestamp | undefined;
  updateTime?: Timestamp | undefined;
}

export function v1Record(r: V2Record): { id: string; createdAt: Timestamp | undefined; updatedAt: Timestamp | undefined } {
  return { id: r.uid, createdAt: r.createTime, updatedAt: r.updateTime };
}

/**
 * A v1 update replaces the whole resource: the v2 update with mask `*`, so
 * every writable field takes the body's value (omitted ones their zero
 * value) and output-only fields are ignored.
 */
export const REPLACE_ALL = { paths: ["*"] };

/**
 * Rewrites the BadRequest field names of an INVALID_ARGUMENT from v2 to v1
 * names (`role_uid` → `role`); any other error passes unchanged.
 */
export async function withV1Fields<T>(call: Promise<T>, names: Record<string, string>): Promise<T> {
  try {
    return await call;
  } catch (e) {
    const err = ConnectError.from(e);
    const bad = err.code === Code.InvalidArgument ? err.findDetails(BadRequestSchema)[0] : undefined;
    if (!bad) throw e;
    throw invalidArguments(
      bad.fieldViolations.map((v) => ({ field: names[v.field] ?? v.field, description: v.description, reason: v.reason })),
    );
  }
}
