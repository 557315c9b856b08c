import { clone, create } from "@bufbuild/protobuf";
import { UIDPFilterSchema, type UIDPFilter } from "../../../gen/platform/common/v1/uidp_pb.js";
import { invalidArgument, outOfRange } from "../../errors/index.js";
import { MAX_PAGE_SIZE } from "../../list/index.js";

/** The most results a v1 List returns; beyond it the caller narrows the filter or pages through v2. */
export const V1_LIST_LIMIT = 10_000;

/**
 * The largest v1 List answer, in bytes of its items rendered as JSON (docs/security.md,
 * "Input"): 4 MiB, the most a gRPC client receives by default. v1 has no paging, so an
 * answer over it is OUT_OF_RANGE like one over V1_LIST_LIMIT, found as the pages come in
 * (at most this much and one page is held).
 */
export const V1_ANSWER_BYTES = 4 * 1024 * 1024;

/** The filters every v1 List shares: `id` (exact) and the uidp scopes. */
export interface V1ListFilter {
  id: string;
  uidp?: UIDPFilter | undefined;
}

/** What the v2 List is asked for on each page. */
export interface V2PageRequest {
  uidp: UIDPFilter | undefined;
  pageSize: number;
  pageToken: string;
}

/** The paging fields of a v2 List response. */
export interface V2Page {
  nextPageToken: string;
  totalCount: bigint;
}

/** v1 `id` is v2 `uidp.ids` of one. */
function v2Scope(req: V1ListFilter): UIDPFilter | undefined {
  if (!req.id) return req.uidp;
  if (req.uidp?.ids.length) throw invalidArgument("id", "give either id or uidp.ids, not both");
  const scope = req.uidp ? clone(UIDPFilterSchema, req.uidp) : create(UIDPFilterSchema);
  scope.ids = [req.id];
  return scope;
}

/**
 * A v1 List (no paging envelope): every page of the v2 List, in uid order,
 * through the one List engine and with the caller's visibility (`fetch`
 * calls the v2 List with the caller's HandlerContext). More than
 * V1_LIST_LIMIT matches is OUT_OF_RANGE, decided on the first page's exact
 * total, and so is an answer over `maxBytes` (`size` tells an item's).
 * `items` converts a page's results to v1.
 */
export async function listAll<Page extends V2Page, Item>(
  req: V1ListFilter,
  fetch: (request: V2PageRequest) => Promise<Page>,
  items: (page: Page) => Item[],
  size: (item: Item) => number,
  maxBytes = V1_ANSWER_BYTES,
): Promise<{ items: Item[] }> {
  const uidp = v2Scope(req);
  const all: Item[] = [];
  let bytes = 0;
  let pageToken = "";
  do {
    const page = await fetch({ uidp, pageSize: MAX_PAGE_SIZE, pageToken });
    if (page.totalCount > V1_LIST_LIMIT) {
      throw outOfRange(
        `${page.totalCount} results match and v1 returns at most ${V1_LIST_LIMIT}; narrow the filter or use the paged v2 List`,
      );
    }
    for (const item of items(page)) {
      bytes += size(item);
      if (bytes > maxBytes) {
        throw outOfRange(
          `the ${page.totalCount} results come to more than ${maxBytes} bytes and v1 answers with at most that; narrow the filter or use the paged v2 List`,
        );
      }
      all.push(item);
    }
    pageToken = page.nextPageToken;
  } while (pageToken);
  return { items: all };
}
