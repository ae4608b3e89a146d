/**
 * Process groups of the runners' children (the command runner and a
 * fan-out's selection command): each child leads a group of its own, so a
 * stop reaches everything it started, and a group still alive when this
 * process exits is killed rather than orphaned. {@linkcode ProcessGroup} is
 * the one way both runners watch and stop a child, so they stop it the same
 * way.
 *
 * A process that is SIGKILLed runs no code, so it cannot kill its groups.
 * For that case a run may also record its group in a directory
 * ({@linkcode recordGroup}), and the next daemon to start on the same store
 * kills the groups whose owner is gone ({@linkcode reapOrphans}) before any
 * of their jobs can run again.
 *
 * @module
 */

import type { Clock } from "../clock.ts";

/**
 * Whether any process of group `pgid` is alive, from /proc (zombies do not
 * count: a reparented child stays one until init reaps it, and some inits
 * never do). `undefined` where /proc cannot tell.
 */
export function groupAlive(pgid: number): boolean | undefined {
  let entries: Iterable<Deno.DirEntry>;
  try {
    entries = Deno.readDirSync("/proc");
  } catch {
    return undefined;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry.name)) continue;
    let stat: string;
    try {
      stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
    } catch {
      continue; // Exited while we looked.
    }
    // pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") return true;
  }
  return false;
}

/** Sends `signal` to every process of the group; a group already gone is fine. */
export function signalGroup(pgid: number, signal: Deno.Signal): void {
  try {
    Deno.kill(-pgid, signal);
  } catch {
    // ESRCH: nothing left in the group.
  }
}

/** Reads a stream to its end, handing each chunk to `onChunk`. */
export async function pump(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  onChunk: (chunk: Uint8Array) => void,
): Promise<void> {
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      onChunk(value);
    }
  } catch {
    // Cancelled or broken pipe: what was read is kept.
  }
}

/**
 * Whether `promise` settles within `ms` of `clock`. The wait ends early
 * (answering false) when `signal` aborts.
 */
export async function within(
  promise: Promise<unknown>,
  ms: number,
  clock: Clock,
  signal?: AbortSignal,
): Promise<boolean> {
  const stop = new AbortController();
  try {
    return await Promise.race([
      promise.then(() => true),
      clock.sleep(ms, signal ? AbortSignal.any([signal, stop.signal]) : stop.signal)
        .then(() => false),
    ]);
  } finally {
    stop.abort();
  }
}

/** Groups of runs that have not finished stopping: killed if the process exits first. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

/** Tracks `pgid` until its run releases it; the first call installs the exit hook. */
export function killOnExit(pgid: number): void {
  liveGroups.add(pgid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  globalThis.addEventListener("unload", () => {
    for (const group of liveGroups) signalGroup(group, "SIGKILL");
    liveGroups.clear();
  });
}

/** Stops tracking `pgid`: its run has made sure nothing of it is left. */
export function releaseOnExit(pgid: number): void {
  liveGroups.delete(pgid);
}

/** Where a group's output goes, chunk by chunk, as it arrives. */
export interface GroupOutput {
  stdout(chunk: Uint8Array): void;
  stderr(chunk: Uint8Array): void;
}

/** Options of {@linkcode ProcessGroup}. */
export interface ProcessGroupOptions {
  /** Times the run's timeout, the kill grace and the looks at the group during it. */
  clock: Clock;
  /** Between SIGTERM and SIGKILL to the group. */
  killGraceMs: number;
  /**
   * Where the group is recorded (`<pgid>.json`) while it may be alive, for
   * `reapOrphans` after a SIGKILL of this process. @default none: nothing recorded
   */
  groupsDir?: string;
  /** How often the group is looked at during the grace, once its leader is gone. @default 50 */
  pollMs?: number;
}

/** How the wait for a child ended: by itself, on its timeout, or by the job's signal. */
export type GroupEnd =
  | { kind: "exited"; status: Deno.CommandStatus }
  | { kind: "timeout"; ms: number }
  | { kind: "aborted" };

const DEFAULT_GROUP_POLL_MS = 50;

/**
 * A running child and its group, which the child leads (spawned `detached`):
 * pumps stdout and stderr into `output`, waits for the child's end, and makes
 * sure nothing of the group outlives the run.
 *
 * The one kill sequence, whatever ended the run (timeout, abort, or the
 * leader exiting with members still alive): SIGTERM to the whole group, then
 * up to `killGraceMs` for it to go (a member that let go of the pipes is
 * looked at every `pollMs`), then SIGKILL to whatever is left. Members that
 * outlive their leader get the same grace as the leader would: SIGTERM is a
 * request to clean up, and a grandchild has as much to clean up as its
 * parent. The group is killed on `unload` until {@linkcode release}d.
 */
export class ProcessGroup {
  /** The group's id: its leader's pid. */
  readonly pgid: number;
  /** The leader's exit. */
  readonly status: Promise<Deno.CommandStatus>;
  /** Both pipes reached their end (every writer in the group exited or closed them). */
  readonly drained: Promise<void>;
  readonly #options: ProcessGroupOptions;
  readonly #readers: ReadableStreamDefaultReader<Uint8Array>[];
  /** Ends every pending wait once the run has let go of the group. */
  readonly #released = new AbortController();

  constructor(child: Deno.ChildProcess, options: ProcessGroupOptions, output: GroupOutput) {
    this.pgid = child.pid;
    killOnExit(this.pgid);
    this.#options = options;
    this.status = child.status;
    this.#readers = [child.stdout.getReader(), child.stderr.getReader()];
    const [stdout, stderr] = this.#readers;
    this.drained = Promise.all([
      pump(stdout!, (chunk) => output.stdout(chunk)),
      pump(stderr!, (chunk) => output.stderr(chunk)),
    ]).then(() => {});
  }

  /** Records the group in `groupsDir`, if set, for a daemon that outlives this one. */
  record(run: { job: number; fence: number }): void {
    const dir = this.#options.groupsDir;
    if (dir !== undefined) recordGroup(dir, { pgid: this.pgid, ...run });
  }

  /**
   * Waits for the leader to exit, `timeoutMs` of the clock to pass (none
   * when undefined) or `signal` to abort, whichever is first.
   */
  async wait(signal: AbortSignal, timeoutMs: number | undefined): Promise<GroupEnd> {
    const done = new AbortController();
    const wake = AbortSignal.any([done.signal, signal]);
    const waits: Promise<GroupEnd>[] = [
      this.status.then((status) => ({ kind: "exited", status })),
      new Promise((resolve) => {
        if (signal.aborted) resolve({ kind: "aborted" });
        signal.addEventListener("abort", () => resolve({ kind: "aborted" }), {
          once: true,
          signal: done.signal,
        });
      }),
    ];
    if (timeoutMs !== undefined && timeoutMs > 0 && Number.isFinite(timeoutMs)) {
      waits.push(
        this.#options.clock.sleep(timeoutMs, wake).then(() =>
          wake.aborted ? new Promise<never>(() => {}) : { kind: "timeout", ms: timeoutMs }
        ),
      );
    }
    try {
      return await Promise.race(waits);
    } finally {
      done.abort();
    }
  }

  /**
   * Makes sure nothing of the group outlives the run, and that the output is
   * read to its end. `stop` is true when the run is stopped (timeout, abort,
   * too much output); otherwise only what the exited leader left is stopped.
   */
  async finish(stop: boolean): Promise<void> {
    const grace = this.#options.killGraceMs;
    const alive = stop || groupAlive(this.pgid);
    if (alive === true) {
      await this.#stop();
    } else if (alive === undefined) {
      // Without /proc: a leftover that keeps the pipes open is still running.
      if (!(await this.#within(this.drained, grace))) await this.#stop();
    }
    // Whatever escaped the group (its own session) may hold the pipes: stop reading.
    if (!(await this.#within(this.drained, grace))) {
      for (const reader of this.#readers) reader.cancel().catch(() => {});
    }
  }

  /** SIGTERM to the group; SIGKILL to what is left once the grace has passed. */
  async #stop(): Promise<void> {
    const { clock, killGraceMs } = this.#options;
    const pollMs = this.#options.pollMs ?? DEFAULT_GROUP_POLL_MS;
    const deadline = clock.now() + killGraceMs;
    const released = this.#released.signal;
    signalGroup(this.pgid, "SIGTERM");
    // The leader's exit and the pipes' end are events; a member that holds
    // neither is only seen by looking, every pollMs until the deadline.
    await this.#within(Promise.all([this.status, this.drained]), killGraceMs);
    let alive = groupAlive(this.pgid);
    while (alive === true && !released.aborted && clock.now() < deadline) {
      await clock.sleep(Math.min(pollMs, deadline - clock.now()), released);
      alive = groupAlive(this.pgid);
    }
    if (alive !== false) signalGroup(this.pgid, "SIGKILL");
    await this.status;
  }

  /** Whether `promise` settles within `ms` of the clock (false once the group is released). */
  #within(promise: Promise<unknown>, ms: number): Promise<boolean> {
    return within(promise, ms, this.#options.clock, this.#released.signal);
  }

  /**
   * Lets go of the group once the run has made sure it is gone: ends every
   * pending wait (a rejected attempt must not leave sleepers), stops killing
   * it on unload, and removes its record.
   */
  release(): void {
    this.#released.abort();
    releaseOnExit(this.pgid);
    if (this.#options.groupsDir !== undefined) forgetGroup(this.#options.groupsDir, this.pgid);
  }
}

/**
 * What a run writes to `<groupsDir>/<pgid>.json` while its group may be
 * alive, so that the next daemon on the same store can kill the group if
 * this process dies without running any code (SIGKILL, OOM killer).
 *
 * Start times are field 22 of `/proc/<pid>/stat` (clock ticks since boot):
 * with the pid they name one process, not whichever later gets its number.
 */
export interface GroupRecord {
  /** The group, whose leader's pid it is. */
  pgid: number;
  /** The leader's start time. */
  procStart: number;
  /** The daemon process that runs the group. */
  ownerPid: number;
  /** The owner's start time. */
  ownerStart: number;
  /** The kernel's boot id: pids and start times of another boot mean nothing. */
  boot: string;
  /** The job the group runs, and the attempt's fence. */
  job: number;
  fence: number;
}

/**
 * The start time of process `pid` (field 22 of `/proc/<pid>/stat`), or
 * `undefined` when it is gone or /proc cannot tell.
 */
export function processStart(pid: number): number | undefined {
  let stat: string;
  try {
    stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  } catch {
    return undefined;
  }
  // Field 3 (state) is the first after "(comm) ", so field 22 is the 20th from there.
  const start = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
  return Number.isSafeInteger(start) ? start : undefined;
}

function bootId(): string | undefined {
  try {
    return Deno.readTextFileSync("/proc/sys/kernel/random/boot_id").trim();
  } catch {
    return undefined;
  }
}

/**
 * Writes the record of group `pgid` (run by this process for `job` at
 * `fence`) into `dir`, creating `dir` if needed. Best effort: where /proc is
 * missing, or the file cannot be written, nothing is recorded and the run
 * goes on (the record only matters if this process is killed).
 */
export function recordGroup(dir: string, run: { pgid: number; job: number; fence: number }): void {
  const procStart = processStart(run.pgid);
  const ownerStart = processStart(Deno.pid);
  const boot = bootId();
  if (procStart === undefined || ownerStart === undefined || boot === undefined) return;
  const record: GroupRecord = { ...run, procStart, ownerPid: Deno.pid, ownerStart, boot };
  const file = `${dir}/${run.pgid}.json`;
  try {
    Deno.mkdirSync(dir, { recursive: true });
    // Written whole, then renamed: a reader never sees half a record.
    Deno.writeTextFileSync(`${file}.tmp`, JSON.stringify(record));
    Deno.renameSync(`${file}.tmp`, file);
  } catch {
    // Unwritable: the run still happens, unguarded against this process's SIGKILL.
  }
}

/** Removes the record of group `pgid`: its run has made sure nothing of it is left. */
export function forgetGroup(dir: string, pgid: number): void {
  removeQuietly(`${dir}/${pgid}.json`);
}

function removeQuietly(path: string): void {
  try {
    Deno.removeSync(path);
  } catch {
    // Already gone (another daemon reaped it): fine.
  }
}

/** Options of {@linkcode reapOrphans}. */
export interface ReapOptions {
  /** The records' directory, shared by the daemons of one store on this host. */
  dir: string;
  /** Told `command.orphan_reaped` for each group killed. */
  logger: (event: string, fields: Record<string, unknown>) => void;
  /** Times the wait between SIGTERM and SIGKILL. */
  clock: Clock;
  /** How long a group has after SIGTERM before SIGKILL. @default 3000 */
  graceMs?: number;
  /** How often the group is looked at during the grace. @default 50 */
  pollMs?: number;
}

/** A group {@linkcode reapOrphans} killed, and the last signal it needed. */
export interface ReapedGroup {
  pgid: number;
  job: number;
  fence: number;
  signal: "SIGTERM" | "SIGKILL";
}

const DEFAULT_REAP_GRACE_MS = 3_000;
const DEFAULT_REAP_POLL_MS = 50;

/**
 * Kills the groups recorded in `dir` whose owner is dead: SIGTERM, then
 * SIGKILL if anything of the group is still alive after the grace. A record
 * whose owner is alive (the same pid with the same start time) belongs to a
 * live daemon and is left alone; every other record is removed, with its
 * group killed only while that group is still the recorded one: its leader
 * has the recorded start time, or has exited while members of its group
 * live on (a pid is not handed out again while a group of that id has
 * members). Records of another boot, a reused pid and unreadable files are
 * removed without a signal. Where /proc is missing nothing can be verified,
 * and nothing is touched.
 */
export async function reapOrphans(options: ReapOptions): Promise<ReapedGroup[]> {
  const { dir, logger } = options;
  const boot = bootId();
  if (boot === undefined || processStart(Deno.pid) === undefined) {
    logger("command.orphan_reap_skipped", { dir, reason: "no /proc to verify processes" });
    return [];
  }
  const reaped: ReapedGroup[] = [];
  for (const name of recordNames(dir)) {
    const path = `${dir}/${name}`;
    const record = readRecord(path);
    if (record === undefined) {
      removeQuietly(path);
      continue;
    }
    if (record.boot === boot && processStart(record.ownerPid) === record.ownerStart) continue;
    if (record.boot === boot && isRecordedGroup(record)) {
      const signal = await killGroup(record.pgid, options);
      reaped.push({ pgid: record.pgid, job: record.job, fence: record.fence, signal });
      logger("command.orphan_reaped", {
        pgid: record.pgid,
        job: record.job,
        fence: record.fence,
        signal,
      });
    }
    removeQuietly(path);
  }
  return reaped;
}

function recordNames(dir: string): string[] {
  try {
    // A `.tmp` may be a record being written by a live daemon: only whole records count.
    return [...Deno.readDirSync(dir)]
      .filter((e) => e.isFile && e.name.endsWith(".json"))
      .map((e) => e.name);
  } catch {
    return []; // No directory: no daemon ever recorded a group here.
  }
}

function readRecord(path: string): GroupRecord | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Deno.readTextFileSync(path));
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const record = value as Record<string, unknown>;
  const whole = ["pgid", "procStart", "ownerPid", "ownerStart", "job", "fence"].every((key) =>
    Number.isSafeInteger(record[key])
  );
  return whole && typeof record.boot === "string" && (record.pgid as number) > 1
    ? value as GroupRecord
    : undefined;
}

/** Whether the group of `record.pgid` is still the one recorded, and alive. */
function isRecordedGroup(record: GroupRecord): boolean {
  const start = processStart(record.pgid);
  if (start !== undefined && start !== record.procStart) return false; // The pid was reused.
  return groupAlive(record.pgid) === true;
}

/** SIGTERM to the group; SIGKILL if it is still alive once the grace has passed. */
async function killGroup(pgid: number, options: ReapOptions): Promise<ReapedGroup["signal"]> {
  const { clock } = options;
  const deadline = clock.now() + (options.graceMs ?? DEFAULT_REAP_GRACE_MS);
  signalGroup(pgid, "SIGTERM");
  while (groupAlive(pgid) === true) {
    if (clock.now() >= deadline) {
      signalGroup(pgid, "SIGKILL");
      return "SIGKILL";
    }
    await clock.sleep(Math.min(options.pollMs ?? DEFAULT_REAP_POLL_MS, deadline - clock.now()));
  }
  return "SIGTERM";
}
