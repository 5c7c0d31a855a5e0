/**
 * Polls `check` (sync or async) every `pollMs` until it holds; after `ms` throws naming `what` with
 * `explain()`'s account of the state. The bound only ends a hung run; it measures nothing.
 */
export async function until(what: string, ms: number, check: () => boolean | Promise<boolean>, explain: () => string, pollMs = 100): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${explain()}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** Polls `check` every 250 ms until it returns a value (not undefined) and resolves with it; after `ms` throws naming `what` with `explain()`. */
export async function untilValue<T>(what: string, ms: number, check: () => Promise<T | undefined>, explain: () => string | Promise<string> = () => ""): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${await explain()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
