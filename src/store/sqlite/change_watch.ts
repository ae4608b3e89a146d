/**
 * How a SQLite store hears other processes' commits without waking while
 * nothing happens. Polling `PRAGMA data_version` every 2 ms gives a 3 ms
 * p95 from another process's enqueue to the start of its job, but it wakes
 * an idle daemon some 470 times a second (34 ms of CPU a second, a fan that
 * never stops). Instead every store that commits touches a wake file
 * (`<db>.wake/commit`, see {@linkcode CommitSignal}), and a file watch on
 * that folder (inotify on Linux) says when another process committed;
 * `data_version` is read then, once: the touch comes after the commit, so
 * the commit is visible by the time its event is heard. Every event is
 * read at once, this store's own touches' too (a read costs microseconds;
 * putting off events taken for own ones by a poll put off another
 * process's enqueue that came at the same time). After a commit of another
 * process the fast poll runs for `busyMs`, so a stream of enqueues meets
 * the poll's latency; while idle only the safety-net poll runs, every
 * `idlePollMs`.
 *
 * Why a folder of its own, not the database's: `Deno.watchFs` opens and
 * closes each changed file of a watched folder, and closing any descriptor
 * of a file drops every POSIX lock the process holds on it. Watching the
 * database's folder dropped SQLite's locks on `jobs.db`, so the next process
 * to close the database took itself for the last one and removed the
 * running daemon's WAL (a daemon killed by SIGBUS, its writes lost). The
 * wake file holds no lock.
 *
 * A store touches only while another watch is there to hear it: each watch
 * keeps a presence file (`<db>.wake/watch-<pid>-<n>`) while it runs, and a
 * store about to touch looks for one other than its own: again whenever the
 * wake folder changed (one stat), else every {@linkcode PRESENCE_CHECK_MS}.
 * A daemon alone on its file touches nothing, and its own watch never hears
 * its own commits (each heard event woke this process's main thread and
 * the watch's thread in the middle of the work that followed the commit:
 * same-process p95 0.95 -> 1.6 ms).
 *
 * Not every commit touches at once. A commit that changed no row (an idle
 * node's claim, stager and planner passes, twice a second) touches
 * nothing: nobody has anything to hear. A quiet write (a node's heartbeat,
 * a lease renewal: nobody needs to hear it soon) touches at most every
 * {@linkcode QUIET_SIGNAL_MS}, its touch put off until then. So an idle
 * daemon wakes itself, and any other watching process, once in that time
 * rather than twice a second.
 *
 * The watch checks itself: every `selfCheckMs` it notes `data_version`,
 * which only other connections' commits move, and the events heard so far;
 * when the version moved between two looks but no event came from one look
 * before to one look after, the watch is blind (a file system inotify does
 * not see) and the fast poll runs from then on, as it did before. So does a
 * watch that cannot start or that ends. Either is told once through
 * `onBlind`. (The WAL's size was looked at before: this process's own
 * untouched heartbeats moved it.)
 *
 * With a clock injected every decision reads it and every wait is its
 * sleep, so tests step it with a FakeClock (else the monotonic clock and
 * plain timers pace it); the file watch and
 * the file's stat are injectable too.
 *
 * @module
 */

import { join, resolve } from "node:path";
import { type Clock, SystemClock } from "../../clock.ts";

/** The events a file watch yields: `Deno.watchFs`'s shape. */
export interface FileWatch extends AsyncIterable<{ kind: string; paths: string[] }> {
  close(): void;
}

/** Options of the change watch, for tests and for processes that need no speed (the TUI). */
export interface ChangeWatchOptions {
  /** The clock every wait and decision uses. @default a SystemClock */
  clock?: Clock;
  /** Starts a watch of `folder`. @default `Deno.watchFs(folder, { recursive: false })` */
  watch?: (folder: string) => FileWatch;
  /**
   * How often the safety-net poll reads `data_version` while nothing
   * happens, in ms.
   * @default 500
   */
  idlePollMs?: number;
  /**
   * How often the watch checks itself, in ms: longer than the spacing of
   * quiet touches ({@linkcode QUIET_SIGNAL_MS}), or another process's
   * heartbeat would look unheard.
   * @default 6000
   */
  selfCheckMs?: number;
  /**
   * How long the fast poll runs after a commit of another process was
   * seen, in ms: a stream of enqueues gets the poll's latency, not the
   * watch's. 0: only after a watch event (a reader that needs no speed).
   * @default 200
   */
  busyMs?: number;
  /**
   * Told once when the watch is found blind or cannot run, and the fast poll
   * takes over. @default a `store.change_watch_blind` JSON line on stderr
   */
  onBlind?: (reason: string) => void;
}

/** What the change watch asks of its store. */
export interface ChangeWatchHost {
  /** The database file's path. */
  readonly path: string;
  /** The fast poll's period, in ms (`changePollMs`). */
  readonly pollMs: number;
  /** How often the file's identity is checked, in ms (`fileCheckMs`). */
  readonly fileCheckMs: number;
  /** `PRAGMA data_version`, or null when it cannot be read now (a transaction holds the connection). */
  readVersion(): number | null;
  /** Whether the file at the path is no longer the one opened (then the watch stops). */
  checkFile(): boolean;
  /** Another connection committed. */
  changed(): void;
}

/** Looks for other connections' commits, cheaply while idle (see the module doc). */
export class ChangeWatch {
  readonly #host: ChangeWatchHost;
  readonly #clock: Clock;
  readonly #sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly #now: () => number;
  readonly #options: Required<Omit<ChangeWatchOptions, "clock" | "watch">>;
  readonly #file: string;
  #watch: FileWatch | null = null;
  #presence: string | null = null;
  #version: number;
  #stopped = false;
  /** Why the watch is blind (the fast poll runs for good), or null. */
  #blind: string | null = null;
  /** Until when the fast poll runs, on the clock. */
  #fastUntil = -Infinity;
  /** When the next look is due, on the clock. */
  #nextAt = -Infinity;
  /** Ends the current wait early: a watch event or stop. */
  #wake = new AbortController();
  #fileCheckedAt: number;
  #selfCheckedAt: number;
  /** Watch events heard for the file or its WAL. */
  #heard = 0;
  /** The last three self-checks: `data_version` and the events heard by then. */
  #looks: { version: number; heard: number }[] = [];
  /** Reads of `data_version` (tests count them). */
  reads = 0;

  constructor(host: ChangeWatchHost, options: ChangeWatchOptions = {}) {
    this.#host = host;
    this.#clock = options.clock ?? new SystemClock();
    // Without a clock injected, time is the monotonic one, to the µs: a
    // 2 ms poll paced in whole ms of wall time ran at 2.9 ms.
    this.#now = options.clock ? () => this.#clock.now() : () => performance.now();
    // Waits only batch: a plain timer unless a clock is injected. The system
    // clock's sleep checks the time again on waking (ms resolution) and
    // may wait once more, which made a 2 ms poll one of about 3.
    this.#sleep = options.clock ? (ms, signal) => this.#clock.sleep(ms, signal) : timerSleep;
    this.#options = {
      idlePollMs: options.idlePollMs ?? 500,
      selfCheckMs: options.selfCheckMs ?? QUIET_SIGNAL_MS + 1000,
      busyMs: options.busyMs ?? 200,
      // One line on stderr, as the daemon logs: the store has no logger.
      onBlind: options.onBlind ?? ((reason) =>
        console.error(JSON.stringify({
          time: new Date(this.#clock.now()).toISOString(),
          event: "store.change_watch_blind",
          db: host.path,
          reason,
          pollMs: host.pollMs,
        }))),
    };
    this.#file = resolve(host.path);
    this.#version = this.#read() ?? 0;
    // The first look a whole period after the start, not at it: a writer
    // may not know of this watch yet for PRESENCE_CHECK_MS, and a commit of
    // then, unheard, must not make it blind.
    this.#fileCheckedAt = this.#selfCheckedAt = this.#now();
    this.#start(options.watch ?? watchFolder);
    void this.#loop();
  }

  /** Why the watch is blind and the fast poll runs for good, or null while it hears. */
  get blind(): string | null {
    return this.#blind;
  }

  /** Stops the watch and the polls. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#wake.abort();
    try {
      this.#watch?.close();
    } catch {
      // Already closed.
    }
    this.#watch = null;
    if (this.#presence !== null) removeQuietly(this.#presence);
  }

  /** This watch's presence file (see the module doc), or null without one. */
  get presence(): string | null {
    return this.#presence;
  }

  #start(watch: (folder: string) => FileWatch): void {
    let folder: string;
    try {
      folder = Deno.realPathSync(prepareWakeFolder(this.#file));
      this.#watch = watch(folder);
    } catch (error) {
      this.#goBlind(`the wake folder cannot be watched: ${firstLine(error)}`);
      return;
    }
    this.#presence = announcePresence(folder);
    // Events name the folder as watched: compare with its real path.
    const wake = join(folder, WAKE_FILE);
    const events = this.#watch;
    (async () => {
      try {
        for await (const event of events) {
          if (this.#stopped) return;
          if (event.paths.some((p) => p === wake)) this.#event(event.kind);
        }
        if (!this.#stopped) this.#goBlind("the file watch ended");
      } catch (error) {
        if (!this.#stopped) this.#goBlind(`the file watch failed: ${firstLine(error)}`);
      }
    })();
  }

  #event(kind: string): void {
    this.#heard++;
    const now = this.#now();
    // The wake file removed or replaced: look at the database file at once too.
    if (kind !== "modify" && kind !== "access") this.#fileCheckedAt = -Infinity;
    // One read is enough: the wake file is touched after the commit, which
    // is visible by then (a change seen starts the fast poll for busyMs).
    this.#wakeAt(now);
  }

  /** Brings the next look forward to `at` (never later than planned). */
  #wakeAt(at: number): void {
    if (at >= this.#nextAt) return;
    this.#nextAt = at;
    this.#wake.abort();
  }

  #goBlind(reason: string): void {
    if (this.#blind !== null) return;
    this.#blind = reason;
    this.#options.onBlind(reason);
    this.#wakeAt(this.#now());
  }

  async #loop(): Promise<void> {
    while (!this.#stopped) {
      let now = this.#now();
      if (now >= this.#nextAt) {
        this.#tick(now);
        if (this.#stopped) return;
        now = this.#now();
        const fast = this.#blind !== null || now < this.#fastUntil;
        const period = fast
          ? this.#host.pollMs
          : Math.min(this.#options.idlePollMs, this.#host.fileCheckMs);
        // At a fixed rate while on time, as setInterval keeps it: a timer
        // set after each look, from then, made a 2 ms poll one of 3.4 ms.
        this.#nextAt = (this.#nextAt > now - period ? this.#nextAt : now) + period;
      }
      if (this.#wake.signal.aborted) this.#wake = new AbortController();
      await this.#sleep(this.#nextAt - now, this.#wake.signal);
    }
  }

  #tick(now: number): void {
    if (now - this.#fileCheckedAt >= this.#host.fileCheckMs) {
      this.#fileCheckedAt = now;
      if (this.#host.checkFile()) return this.stop();
    }
    const version = this.#read();
    if (version !== null && version !== this.#version) {
      this.#version = version;
      if (this.#options.busyMs > 0) this.#fastUntil = now + this.#options.busyMs;
      this.#host.changed();
    }
    if (this.#blind === null && now - this.#selfCheckedAt >= this.#options.selfCheckMs) {
      this.#selfCheckedAt = now;
      this.#selfCheck();
    }
  }

  #read(): number | null {
    this.reads++;
    try {
      return this.#host.readVersion();
    } catch {
      return null; // locked or gone: the producers' timers still run
    }
  }

  /**
   * Blind when another connection committed between the look before last
   * and the last one (`data_version` moved) and no event was heard from the
   * look before last to this one: a whole period for its touch to come.
   */
  #selfCheck(): void {
    const look = { version: this.#version, heard: this.#heard };
    this.#looks.push(look);
    if (this.#looks.length > 3) this.#looks.shift();
    const [before, middle] = this.#looks;
    if (
      this.#looks.length === 3 && middle!.version !== before!.version &&
      look.heard === before!.heard
    ) {
      this.#goBlind("another process's commit went unheard for a whole period");
    }
  }
}

/** Resolves after `ms` of one timer, or at once when `signal` aborts. */
function timerSleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal.addEventListener("abort", done, { once: true });
  });
}

/** The file every committing store touches, in the folder `<db>.wake`. */
const WAKE_FILE = "commit";

/**
 * At most one touch of the wake file per this many ms of one store's
 * commits, the last of a burst always signalled at its end: a reader that
 * hears one runs its fast poll for `busyMs` (200 ms by default), which finds
 * the commits the window left unsignalled. (20 ms put an enqueue that
 * came a little under 20 ms after the last one behind a timer: cross-process
 * p50 1.7 ms at one enqueue per 20 ms, 1.15 ms at 5.)
 */
export const SIGNAL_EVERY_MS = 5;

/**
 * At most one touch per this many ms for quiet writes (heartbeats, lease
 * renewals), the last always signalled by then: often enough for the
 * watches' self-check (every `selfCheckMs`), rarely enough that an idle
 * daemon's heartbeat wakes nobody, itself included, more than this often.
 */
export const QUIET_SIGNAL_MS = 5000;

/** The wake folder of the database at `file` (`<db>.wake`), and its wake file, created. */
function prepareWakeFolder(file: string): string {
  const folder = `${file}.wake`;
  Deno.mkdirSync(folder, { recursive: true });
  const wake = join(folder, WAKE_FILE);
  try {
    Deno.statSync(wake);
  } catch {
    Deno.writeTextFileSync(wake, "");
  }
  return folder;
}

/**
 * A store's side of the wake file: after each commit that changed rows it
 * touches `<db>.wake/commit`, so the change watches of other processes hear
 * it. Nothing is created here: with no watch on the database (no daemon or
 * dashboard has made the folder) the touch fails, at the same spacing.
 * Touches are spaced {@linkcode SIGNAL_EVERY_MS} apart, quiet writes'
 * {@linkcode QUIET_SIGNAL_MS}, with one more at the end of a burst, so a
 * batch of commits costs a few `utime` calls, not one each.
 */
export class CommitSignal {
  readonly #wake: string;
  readonly #folder: string;
  readonly #own: () => string | null;
  /**
   * Whether another watch was there at the last look, when that was
   * (monotonic) and the wake folder's time of change then: a presence file
   * made or removed changes it.
   */
  #listened = { at: -Infinity, any: false, folderMtime: NaN };
  #lastAt = -Infinity;
  #touches = 0;
  #trailing: ReturnType<typeof setTimeout> | null = null;
  /** When the pending trailing touch is due (Infinity: none). */
  #trailingAt = Infinity;
  #closed = false;

  /** For the database at `path`; `own` is the presence file of the store's own watch, if any. */
  constructor(path: string, own: () => string | null = () => null) {
    this.#folder = `${resolve(path)}.wake`;
    this.#wake = join(this.#folder, WAKE_FILE);
    this.#own = own;
  }

  /** This store committed a change; `quiet`: nobody needs to hear it soon. */
  committed(quiet = false): void {
    if (this.#closed) return;
    // Monotonic time on purpose: this only spaces touches, it decides nothing.
    const now = performance.now();
    const spacing = quiet ? QUIET_SIGNAL_MS : SIGNAL_EVERY_MS;
    if (now - this.#lastAt >= spacing) {
      this.#touch(now);
      return;
    }
    const at = this.#lastAt + spacing;
    if (at >= this.#trailingAt) return;
    if (this.#trailing !== null) clearTimeout(this.#trailing);
    this.#trailingAt = at;
    this.#trailing = setTimeout(() => {
      this.#trailing = null;
      this.#trailingAt = Infinity;
      if (!this.#closed) this.#touch(performance.now());
    }, at - now);
    Deno.unrefTimer(this.#trailing as unknown as number);
  }

  /**
   * Whether a watch other than the store's own is there: read again when the
   * wake folder changed (a watch came or went), else at most every
   * {@linkcode PRESENCE_CHECK_MS} (a watch's process may have died).
   */
  #othersListen(now: number): boolean {
    let folderMtime: number;
    try {
      folderMtime = Deno.statSync(this.#folder).mtime?.getTime() ?? NaN;
    } catch {
      return false; // no wake folder: nobody watches
    }
    const seen = this.#listened;
    if (folderMtime === seen.folderMtime && now - seen.at < PRESENCE_CHECK_MS) return seen.any;
    const any = otherWatches(this.#folder, this.#own());
    this.#listened = { at: now, any, folderMtime };
    return any;
  }

  /** Stops signalling (the store closed). */
  close(): void {
    this.#closed = true;
    this.#cancelTrailing();
  }

  #cancelTrailing(): void {
    if (this.#trailing !== null) clearTimeout(this.#trailing);
    this.#trailing = null;
    this.#trailingAt = Infinity;
  }

  #touch(now: number): void {
    this.#lastAt = now;
    // This touch signals every commit so far.
    this.#cancelTrailing();
    if (!this.#othersListen(now)) return;
    try {
      // Any new time will do (the event is what counts): no clock is read.
      const at = new Date(++this.#touches);
      Deno.utimeSync(this.#wake, at, at);
    } catch {
      // No wake file: nobody watches this database (yet).
    }
  }
}

/** How often a committing store looks for other watches' presence files, in ms. */
export const PRESENCE_CHECK_MS = 1000;

const PRESENCE_PREFIX = "watch-";
let presences = 0;

/** Creates this watch's presence file in `folder`: its path, or null when it cannot. */
function announcePresence(folder: string): string | null {
  const path = join(folder, `${PRESENCE_PREFIX}${Deno.pid}-${++presences}`);
  try {
    Deno.writeFileSync(path, new Uint8Array());
    return path;
  } catch {
    return null; // then writers do not touch for it, and its safety-net poll hears them
  }
}

/**
 * Whether `folder` holds the presence file of a watch other than `own`
 * whose process lives. A file of a process that ended without removing it
 * (killed) is removed here, where /proc tells; without /proc it counts.
 */
function otherWatches(folder: string, own: string | null): boolean {
  let names: string[];
  try {
    names = [...Deno.readDirSync(folder)].map((e) => e.name);
  } catch {
    return false; // no wake folder: nobody watches
  }
  let any = false;
  for (const name of names) {
    if (!name.startsWith(PRESENCE_PREFIX)) continue;
    const path = join(folder, name);
    if (path === own) continue;
    const pid = Number(name.slice(PRESENCE_PREFIX.length).split("-")[0]);
    if (pid === Deno.pid || processLives(pid)) any = true;
    else removeQuietly(path);
  }
  return any;
}

/** Whether process `pid` lives: true unless /proc says it does not. */
function processLives(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch (error) {
    // No such process where /proc is; elsewhere (no /proc, no permission) assume it lives.
    if (!(error instanceof Deno.errors.NotFound)) return true;
    try {
      Deno.statSync("/proc/self");
      return false;
    } catch {
      return true;
    }
  }
}

function removeQuietly(path: string): void {
  try {
    Deno.removeSync(path);
  } catch {
    // Gone already.
  }
}

function watchFolder(folder: string): FileWatch {
  return Deno.watchFs(folder, { recursive: false });
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0]!;
}
