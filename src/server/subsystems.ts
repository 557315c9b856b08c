interface Started {
  name: string;
  close: () => unknown;
  early: boolean;
}

/**
 * What the server has started, each with how to close it. Each is added right after it starts, so
 * that a start failing part-way closes what it had started, and close() undoes the start in
 * reverse: the last started is closed first.
 */
export class Subsystems {
  private readonly started: Started[] = [];

  /** `onError` hears of each close that fails (the rest are still closed). */
  constructor(private readonly onError: (name: string, error: unknown) => void) {}

  /**
   * Registers `value`, just started, and returns it; close() closes it after every subsystem added
   * later. With `early`, its close begins as soon as close() is called, beside the others' (it
   * ends what they would otherwise wait for, or it must run while they do), and is awaited in its
   * place.
   */
  add<T>(name: string, value: T, close: (value: T) => unknown, opts: { early?: boolean } = {}): T {
    this.started.push({ name, close: () => close(value), early: opts.early ?? false });
    return value;
  }

  /**
   * Closes every subsystem added so far, the last added first, each awaited, the early ones begun
   * first. A close that fails is reported to `onError` and the rest are still closed; close()
   * then rejects with the first failure.
   */
  async close(): Promise<void> {
    const started = this.started.splice(0).reverse();
    const failures: unknown[] = [];
    const attempt = (s: Started): Promise<unknown> =>
      // A close that throws at once fails like one that rejects.
      new Promise((resolve) => resolve(s.close())).catch((e: unknown) => {
        failures.push(e);
        this.onError(s.name, e);
      });
    const begun = new Map(started.filter((s) => s.early).map((s) => [s, attempt(s)]));
    for (const s of started) await (begun.get(s) ?? attempt(s));
    if (failures.length) throw failures[0];
  }
}
