/** Test support for the runners' process groups: pids in files, liveness, a clock driven on. */

import type { FakeClock } from "../../src/clock.ts";
import { waitUntil } from "../../src/testing.ts";

/** Alive and not a zombie: a killed grandchild stays a zombie until init reaps it. */
export function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

/** The pid a script wrote to `path` (`echo $! > path`), once its line is whole. */
export async function readPid(path: string): Promise<number> {
  const text = await waitUntil(`pid in ${path}`, async () => {
    const text = await Deno.readTextFile(path).catch(() => "");
    return text.endsWith("\n") ? text : "";
  });
  return Number(text.trim());
}

/**
 * Settles `promise`, moving `clock` on by `stepMs` each time it looks (every
 * few ms of real time), for a run whose waits on the injected clock the test
 * does not time step by step. `onLook` runs at each look, before the step.
 */
export async function driven<T>(
  clock: FakeClock,
  promise: Promise<T>,
  stepMs: number,
  onLook: () => void = () => {},
): Promise<T> {
  let over = false;
  const settled = promise.finally(() => over = true);
  settled.catch(() => {}); // Rejections are the caller's, at the await below.
  // A run of real processes on a loaded machine (load 10 on 2 cores seen)
  // may take longer than the default 10 s of real time to end.
  await waitUntil("the run to end while the clock moves on", () => {
    onLook();
    if (!over) clock.advance(stepMs);
    return over;
  }, { timeoutMs: 30_000 });
  return await settled;
}
