/**
 * The checkpointer's thread (see checkpointer.ts): its own connection to
 * the store's file, and every {@linkcode CHECK_MS} a passive checkpoint when
 * another connection committed since the last one. A passive checkpoint
 * never waits for a lock and never blocks a writer; its fsync of the main
 * file happens here, off the thread that runs the jobs.
 *
 * Told `{ path, everyMs }` once; answers `{ checkpointed }` after each
 * checkpoint that moved frames (tests count them) and `{ error }` when the
 * connection fails, then stops. Told `{ stop: true }`, it closes its
 * connection and stops listening, and the thread ends by itself, its event
 * loop empty: a thread terminated from outside keeps its connection's files
 * open until its isolate is torn down, some time later.
 *
 * @module
 */

import { DatabaseSync, type StatementSync } from "node:sqlite";
import { parentPort } from "node:worker_threads";

const port = parentPort!;

/** What the checkpointer tells its thread. */
type Message = { path: string; everyMs: number } | { stop: true };

let db: DatabaseSync | null = null;
let timer: ReturnType<typeof setInterval> | undefined;

/** Ends the thread's work: without the timer and the listener its event loop is empty. */
function stop(): void {
  clearInterval(timer);
  db?.close();
  db = null;
  port.off("message", listen);
}

function start(path: string, everyMs: number): void {
  let conn: DatabaseSync | null = null;
  let version: StatementSync, checkpoint: StatementSync;
  try {
    conn = new DatabaseSync(path);
    conn.exec("PRAGMA busy_timeout = 0");
    // Preparing reads the schema: locked while the store's last connection
    // closes, which can happen before this thread is told to stop.
    version = conn.prepare("PRAGMA data_version");
    checkpoint = conn.prepare("PRAGMA wal_checkpoint(PASSIVE)");
  } catch (error) {
    conn?.close();
    port.postMessage({ error: String(error) });
    return;
  }
  db = conn;
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
        db?.close();
        db = null;
      }
    }
  };
  timer = setInterval(tick, everyMs);
}

function listen(message: Message): void {
  if ("stop" in message) stop();
  else start(message.path, message.everyMs);
}

port.on("message", listen);
