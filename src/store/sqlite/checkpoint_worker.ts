/**
 * The checkpointer's thread (see checkpointer.ts): its own connection to
 * the store's file, and every {@linkcode CHECK_MS} a passive checkpoint when
 * another connection committed since the last one. A passive checkpoint
 * never waits for a lock and never blocks a writer; its fsync of the main
 * file happens here, off the thread that runs the jobs.
 *
 * Told `{ path, everyMs }` once; answers `{ checkpointed }` after each
 * checkpoint that moved frames (tests count them) and `{ error }` when the
 * connection fails, then stops.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { parentPort } from "node:worker_threads";

const port = parentPort!;

port.once("message", ({ path, everyMs }: { path: string; everyMs: number }) => {
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(path);
    db.exec("PRAGMA busy_timeout = 0");
  } catch (error) {
    port.postMessage({ error: String(error) });
    return;
  }
  const version = db.prepare("PRAGMA data_version");
  const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)");
  let seen = -1;
  const tick = () => {
    try {
      const now = Number((version.get() as { data_version: number }).data_version);
      if (now !== seen) {
        seen = now;
        const row = checkpoint.get() as { busy: number; log: number; checkpointed: number };
        if (row.checkpointed > 0) port.postMessage({ checkpointed: row.checkpointed });
      }
    } catch (error) {
      // A checkpoint another connection runs at the same moment is not an error.
      if (!/busy|locked/i.test(String(error))) {
        port.postMessage({ error: String(error) });
        clearInterval(timer);
        db.close();
      }
    }
  };
  const timer = setInterval(tick, everyMs);
});
