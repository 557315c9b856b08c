import type { Grants } from "./grants.js";

/** The NOTIFY channel the grants triggers use (migration 0004). */
export const GRANTS_CHANGED_CHANNEL = "platform_grants_changed";

const MAX_ENTRIES = 10_000;
/** A safety net: even without any notification, grants are re-read this often. */
const MAX_AGE_MS = 60_000;

interface Entry {
  grants: Grants;
  loadedAt: number;
}

/**
 * Callers' grants, kept until anything that grants capabilities changes:
 * database triggers NOTIFY every replica on commit, and a replica also
 * clears its own cache after each write it serves. A load that started
 * before a clear is not stored (the generation moved on), so a stale read
 * never outlives the change.
 */
export class GrantsCache {
  private readonly entries = new Map<string, Entry>();
  /**
   * Loads under way, one per identity: after a clear, every request and open stream of one
   * identity waits for the same load instead of each running its own.
   */
  private readonly loading = new Map<string, { generation: number; grants: Promise<Grants> }>();
  private generation = 0;

  constructor(
    private readonly load: (identityUid: string) => Promise<Grants>,
    private readonly clock: () => Date,
    /** Told of each lookup: whether the cache had the grants (metrics). */
    private readonly onLookup: (hit: boolean) => void = () => {},
  ) {}

  async get(identityUid: string): Promise<Grants> {
    const now = this.clock().getTime();
    const hit = this.entries.get(identityUid);
    const fresh = hit !== undefined && now - hit.loadedAt < MAX_AGE_MS;
    this.onLookup(fresh);
    if (fresh) return hit.grants;
    const generation = this.generation;
    const pending = this.loading.get(identityUid);
    // Only a load that started after the last clear: one from before may have read old grants.
    if (pending?.generation === generation) return pending.grants;
    const grants = this.load(identityUid);
    const mine = { generation, grants };
    this.loading.set(identityUid, mine);
    try {
      const loaded = await grants;
      if (generation === this.generation) {
        if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
        this.entries.set(identityUid, { grants: loaded, loadedAt: now });
      }
      return loaded;
    } finally {
      if (this.loading.get(identityUid) === mine) this.loading.delete(identityUid);
    }
  }

  invalidate(): void {
    this.generation++;
    this.entries.clear();
  }
}
