/**
 * A signal that aborts when any of `signals` does. Unlike AbortSignal.any,
 * the links are removed by `dispose`, so a long-lived signal (the server's
 * shutdown) does not collect a listener per finished call.
 */
export function linkSignals(...signals: AbortSignal[]): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const abort = (): void => controller.abort();
  const dispose = (): void => {
    for (const s of signals) {
      s.removeEventListener("abort", abort);
    }
  };
  for (const s of signals) {
    if (s.aborted) {
      controller.abort();
      break;
    }
    s.addEventListener("abort", abort, { once: true });
  }
  if (controller.signal.aborted) {
    dispose();
  }
  return { signal: controller.signal, dispose };
}

/** Waits `ms`, or less if `signal` aborts first; never rejects. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Settles with `promise`, or with undefined as soon as `signal` aborts. */
export function unlessAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) {
    return Promise.resolve(undefined);
  }
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = (): void => resolve(undefined);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(error);
      },
    );
  });
}

/** Resolves once `signal` aborts. */
export function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
