/**
 * A background job run at start and then every `everyMs`, never two runs at once; `stop()` ends
 * the runs and waits for the one under way, which may read `stopped` to end early. A run's
 * failure goes to `onError`, and the next run happens as planned.
 */
export class Periodic {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private halted = false;

  constructor(
    private readonly run: () => Promise<unknown>,
    private readonly everyMs: number,
    private readonly onError: (e: unknown) => void,
  ) {}

  /** Whether stop() was called: a long run checks it between its steps. */
  get stopped(): boolean {
    return this.halted;
  }

  /** A run now, then one every `everyMs` (the timer keeps no process alive). */
  start(): void {
    const tick = () => {
      this.running ??= this.run()
        .then(() => undefined, this.onError)
        .finally(() => (this.running = undefined));
    };
    tick();
    this.timer = setInterval(tick, this.everyMs);
    this.timer.unref();
  }

  /** No more runs; the one under way is waited for. */
  async stop(): Promise<void> {
    this.halted = true;
    clearInterval(this.timer);
    await this.running;
  }
}
