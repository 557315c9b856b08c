export {
  ListEngine,
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  type ListSource,
  type ListParams,
  type ListPage,
  type ExtraFilters,
} from "./list-engine.js";
export { parseOrderBy, type OrderBy } from "./order-by.js";
export { PAGE_TOKEN_LIFETIME_MS } from "./page-token.js";
export { scopeMatcher, type HeldRow, type UidpFilter } from "./scope.js";
export { INLINE_ROOTS, listVisibilityKey, visibilityCondition, visibilityMatcher, type ListVisibility } from "./visibility.js";
