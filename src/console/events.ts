/**
 * `GET /events`: the console's one server-sent-events stream per tab. It
 * subscribes to the console's shared {@linkcode LiveFeed} in the person's
 * scope (installation-wide, or their tenant's) and writes each snapshot the
 * feed hands it as a `snapshot` event; a comment every
 * {@linkcode KEEP_ALIVE_MS} keeps proxies from closing a quiet stream. The
 * stream ends when the tab closes it (hidden, left), when the session's
 * person is no longer signed in at the next page, or when the daemon stops
 * (the feed closes).
 *
 * @module
 */

import { streamSSE } from "hono/streaming";
import type { ConsoleRouter } from "./common.ts";
import type { LiveSnapshot } from "./live.ts";

/** How often a quiet stream says it is alive. */
export const KEEP_ALIVE_MS = 15_000;

/** Registers `GET /events`. */
export function registerEvents(router: ConsoleRouter): void {
  router.page("GET", "/events", (c, p) => {
    c.header("cache-control", "no-store");
    c.header("x-accel-buffering", "no");
    return Promise.resolve(streamSSE(c, async (stream) => {
      const ended = new AbortController();
      const end = () => ended.abort();
      const queue: LiveSnapshot[] = [];
      let wake: (() => void) | null = null;
      const unsubscribe = router.live.subscribe(p.tenant, (snapshot) => {
        queue.push(snapshot);
        wake?.();
      });
      stream.onAbort(end);
      router.live.closed.addEventListener("abort", end, { once: true });
      try {
        while (!ended.signal.aborted) {
          const next = queue.shift();
          if (next) {
            await stream.writeSSE({ event: "snapshot", data: JSON.stringify(next) });
            continue;
          }
          const idle = new AbortController();
          wake = () => idle.abort();
          // A clock's sleep may end early (resolved or rejected) when its signal aborts.
          await router.clock.sleep(KEEP_ALIVE_MS, AbortSignal.any([idle.signal, ended.signal]))
            .catch(() => {});
          wake = null;
          const quiet = !idle.signal.aborted && !ended.signal.aborted;
          if (quiet) await stream.write(": keep-alive\n\n");
        }
      } finally {
        unsubscribe();
        router.live.closed.removeEventListener("abort", end);
        if (!stream.closed) await stream.close().catch(() => {});
      }
    }));
  });
}
