/**
 * WAL checkpoints off the store's thread. SQLite's automatic checkpoint
 * runs inside the commit that crosses its threshold, fsync of the main file
 * included: that commit (a job's enqueue, a batch of results) waits for the
 * disk while the event loop stands still. A writer that keeps writing hands
 * the checkpoints to a thread of its own (checkpoint_worker.ts), whose
 * connection checkpoints passively a few times a second; the store's own
 * connection keeps an automatic checkpoint only as a safety net, far out.
 *
 * The thread starts once the store has committed {@linkcode START_AFTER}
 * writes, so a command, or a burst, that writes a few thousand rows and
 * exits never pays for it.
 * It does not keep the process alive, and it is stopped when the store
 * closes: told to stop, it closes its connection and ends by itself, and is
 * terminated only when it has not ended within {@linkcode STOP_WAIT_MS}.
 * (A terminated thread's connection kept its four descriptors, the file
 * twice, the WAL and the shared memory, open until the thread was torn
 * down, some time later: 4 or 5 stores of 20 closed in a row.) Its
 * connection closes after the store's, so it is the last one and moves the
 * WAL into the file: a close takes some 15-20 ms where terminating took 1-2.
 * If it fails, the automatic checkpoint comes back where it was.
 *
 * Measured on this machine, one awaited enqueue at a time: 42-44k jobs/s
 * with the automatic checkpoint on the commit path, 50-52k without it.
 *
 * @module
 */

import type { DatabaseSync } from "node:sqlite";
import { Worker } from "node:worker_threads";

/** The automatic checkpoint, in frames, while no thread checkpoints (SQLite's default is 1000). */
export const INLINE_CHECKPOINT_FRAMES = 8000;
/** The automatic checkpoint, in frames, while the thread does: only if it falls far behind. */
export const SAFETY_CHECKPOINT_FRAMES = 40_000;
/**
 * Commits before the thread starts: starting it (a new isolate, the
 * driver loaded again) costs some 50 ms of CPU, more than a short burst of
 * writes saves (2,000 awaited enqueues ran at 26k/s with it started at the
 * 256th commit, 47k without).
 */
export const START_AFTER = 4096;
/** How often the thread looks for new commits, in ms. */
export const CHECK_MS = 200;
/**
 * How long the store's close waits for the thread to end by itself, in ms,
 * before terminating it: room for a checkpoint in progress and the last
 * connection's own (15-20 ms here), and a bound on a close that would
 * otherwise wait for a slow disk.
 */
export const STOP_WAIT_MS = 1000;

/** The checkpoints of one writable file store. */
export class Checkpointer {
  #commits = 0;
  #worker: Worker | null = null;
  #failed = false;
  #closed = false;
  /** Frames the thread checkpointed so far. */
  checkpointed = 0;

  constructor(
    readonly path: string,
    /** The store's own connection, whose automatic checkpoint is moved. */
    readonly db: DatabaseSync,
    readonly options: { startAfter?: number; everyMs?: number } = {},
  ) {}

  /** Whether the thread runs. */
  get running(): boolean {
    return this.#worker !== null;
  }

  /** Told after each commit of the store's connection. */
  committed(): void {
    if (this.#worker !== null || this.#failed || this.#closed) return;
    if (++this.#commits < (this.options.startAfter ?? START_AFTER)) return;
    this.#start();
  }

  #start(): void {
    let worker: Worker;
    try {
      worker = new Worker(new URL("./checkpoint_worker.ts", import.meta.url));
    } catch {
      this.#failed = true;
      return;
    }
    worker.unref();
    worker.on("message", (message: { checkpointed?: number; error?: string }) => {
      if (message.checkpointed) this.checkpointed += message.checkpointed;
      if (message.error !== undefined) this.#fallBack();
    });
    worker.on("error", () => this.#fallBack());
    worker.postMessage({ path: this.path, everyMs: this.options.everyMs ?? CHECK_MS });
    this.#worker = worker;
    this.db.exec(`PRAGMA wal_autocheckpoint = ${SAFETY_CHECKPOINT_FRAMES}`);
  }

  /** The thread failed: the commits checkpoint again, as before it started. */
  #fallBack(): void {
    this.#failed = true;
    const worker = this.#worker;
    this.#worker = null;
    void worker?.terminate();
    if (!this.#closed) this.db.exec(`PRAGMA wal_autocheckpoint = ${INLINE_CHECKPOINT_FRAMES}`);
  }

  /**
   * Stops the thread: resolves once it closed its connection and ended, or
   * was terminated after {@linkcode STOP_WAIT_MS}.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const worker = this.#worker;
    this.#worker = null;
    if (worker === null) return;
    const exited = new Promise<true>((resolve) => worker.once("exit", () => resolve(true)));
    worker.postMessage({ stop: true });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<false>((resolve) => timer = setTimeout(resolve, STOP_WAIT_MS, false));
    const ended = await Promise.race([exited, late]);
    clearTimeout(timer);
    if (!ended) await worker.terminate();
  }
}
