export type ServingStatus = "SERVING" | "NOT_SERVING";

/** Where the health service learns whether the process can serve, e.g. database reachable and not draining. */
export interface HealthSource {
  status(): Promise<ServingStatus>;
}

/**
 * Reads a HealthSource on behalf of many callers: concurrent reads share one
 * call, and a result younger than `maxAgeMs` is reused, so a crowd of health
 * watchers costs the source one probe per interval rather than one each.
 */
export class SharedStatusReader {
  private inflight: Promise<ServingStatus> | undefined;
  private last: { status: ServingStatus; at: number } | undefined;

  constructor(
    private readonly source: HealthSource,
    private readonly maxAgeMs: number,
  ) {}

  /** The status, possibly up to `maxAgeMs` old. */
  read(): Promise<ServingStatus> {
    if (this.last !== undefined && Date.now() - this.last.at < this.maxAgeMs) {
      return Promise.resolve(this.last.status);
    }
    return this.readFresh();
  }

  /** The status from a probe started no earlier than this call, or one already in flight. */
  readFresh(): Promise<ServingStatus> {
    if (this.inflight === undefined) {
      this.inflight = this.probe().finally(() => {
        this.inflight = undefined;
      });
    }
    return this.inflight;
  }

  private async probe(): Promise<ServingStatus> {
    let status: ServingStatus;
    try {
      status = await this.source.status();
    } catch {
      // A source that cannot tell whether we can serve (the database probe
      // failed) is the very case health checks exist to report.
      status = "NOT_SERVING";
    }
    this.last = { status, at: Date.now() };
    return status;
  }
}
