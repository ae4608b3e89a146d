/**
 * The `command` runner: runs a schedule's `command` run (a job of worker
 * `jobs.command` whose args are the {@linkcode CommandRun}) as a child
 * process, in a process group of its own, and maps how it ended to an
 * outcome.
 *
 * How a run starts:
 *
 * - `argv` is executed directly (`argv[0]` looked up on `PATH`, the rest
 *   passed as literal arguments): no shell sees them, so `$(...)`, `;`,
 *   backticks and newlines reach the program as they are. With
 *   `shell: true`, `argv` is one script run as `/bin/sh -c <script>`.
 * - The child inherits the daemon's whole environment, then `env` (each
 *   value with `${NAME}` filled from the daemon's environment, `$$` for a
 *   literal `$`), then these, which always win:
 *   `JOBS_OCCURRENCE` (the occurrence identity, empty for a plain job),
 *   `JOBS_IDEMPOTENCY_KEY`, `JOBS_ATTEMPT`, `JOBS_FENCE` and
 *   `JOBS_SCHEDULED_FOR` (the occurrence's ISO instant before jitter, also
 *   for a fan-out's item job, or the job's scheduled time for a plain job). A `${NAME}` that is not set
 *   discards the job, naming the variable: retrying cannot help.
 * - stdin is `/dev/null`; stdout and stderr are read as they arrive,
 *   interleaved, into a rolling tail of `outputBytes` kept as the attempt's
 *   output (values filled from `${NAME}` are masked in it).
 * - The child is spawned `detached`, which on Unix makes it the leader of a
 *   new session and so of a new process group whose id is its pid; every
 *   signal below goes to the whole group.
 *
 * How a run ends:
 *
 * | exit                         | outcome                                                    |
 * | ---------------------------- | ---------------------------------------------------------- |
 * | 0                            | completed                                                  |
 * | 75 (`EX_TEMPFAIL`)           | snoozed: `<s>` seconds if stdout's last line is `snooze <s>`, else 60 s |
 * | 76                           | cancelled                                                  |
 * | 77                           | discarded                                                  |
 * | any other code, or a signal  | error naming the code or signal: retried with backoff      |
 * | `meta.timeoutMs` passed      | error `timed out after <ms> ms`: retried with backoff       |
 * | `ctx.signal` aborted         | error naming the reason (the runtime records nothing)       |
 * | cannot start (no such file)  | error naming the program: retried with backoff             |
 *
 * On timeout or abort the group gets SIGTERM, then SIGKILL after
 * `killGraceMs` if anything of it is still alive. When the command exits by
 * itself, whatever it left running in its group is stopped the same way: a
 * run owns its group, so no orphan outlives it. (A process that starts a
 * session of its own, `setsid`, escapes this, as it escapes every group kill.)
 * Waits use the injected clock.
 *
 * When the process exits (the `unload` event that `Deno.exit` dispatches)
 * while a run's group is still alive, for instance because the daemon's
 * shutdown grace ran out and it exits before the kill grace has passed, the
 * group gets SIGKILL at once: a group that ignores SIGTERM must not outlive
 * the daemon. A SIGKILL of the daemon itself leaves the group running
 * (nothing in the process runs then). With `groupsDir`, each run records its
 * group there until it has made sure the group is gone, and the next daemon
 * on the same store kills the groups a dead daemon left behind before their
 * jobs can run again (`reapOrphans` of process_group.ts). Without it, the
 * orphan may still be going when the job's lease expires and it runs again.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { JobTimeoutError } from "../kernel/executor.ts";
import { type ArgsSchema, defineWorker, type JobContext, type Worker } from "../kernel/worker.ts";
import { occurrenceInstant } from "../schedule/occurrences.ts";
import type { RunSpec } from "../schedule/types.ts";
import { expandVariables, maskValues, MissingVariableError, referencedVariables } from "./env.ts";
import {
  forgetGroup,
  groupAlive,
  killOnExit,
  pump,
  recordGroup,
  releaseOnExit,
  signalGroup,
  within,
} from "./process_group.ts";

/** The args of a `jobs.command` job: the `command` variant of a run spec. */
export type CommandRun = Extract<RunSpec, { kind: "command" }>;

/** The worker name that plans and runners agree on. */
export const COMMAND_WORKER = "jobs.command";

/** Exit code asking for a snooze (`EX_TEMPFAIL` of sysexits.h). */
export const EXIT_SNOOZE = 75;
/** Exit code asking to cancel the job. */
export const EXIT_CANCEL = 76;
/** Exit code asking to discard the job. */
export const EXIT_DISCARD = 77;
/** Snooze when exit 75 names no duration. */
export const DEFAULT_SNOOZE_MS = 60_000;

/** Options of {@linkcode commandWorker}. */
export interface CommandWorkerOptions {
  /** Reads the daemon's environment, for `${NAME}` in a run's `env` (e.g. `Deno.env.get`). */
  env: (name: string) => string | undefined;
  /** Times the run's timeout and the kill grace. */
  clock: Clock;
  /** Between SIGTERM and SIGKILL to the process group. @default 5000 */
  killGraceMs?: number;
  /** The last this many bytes of stdout and stderr are kept. @default 65536 */
  outputBytes?: number;
  /**
   * Where each running group is recorded (`<pgid>.json`), for
   * `reapOrphans` after a SIGKILL of this process. @default none: nothing recorded
   */
  groupsDir?: string;
}

const DEFAULT_KILL_GRACE_MS = 5_000;
const DEFAULT_OUTPUT_BYTES = 64 * 1024;
/** How much of stdout alone is kept to find its last line (`snooze <s>`). */
const LAST_LINE_BYTES = 1024;

/** The `jobs.command` worker: runs a command run spec as a child process group. */
export function commandWorker(options: CommandWorkerOptions): Worker<CommandRun> {
  const settings: Settings = {
    env: options.env,
    clock: options.clock,
    killGraceMs: options.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
    outputBytes: options.outputBytes ?? DEFAULT_OUTPUT_BYTES,
    groupsDir: options.groupsDir,
  };
  if (!(settings.killGraceMs >= 0)) {
    throw new RangeError(`killGraceMs must be >= 0, got ${settings.killGraceMs}`);
  }
  if (!(settings.outputBytes >= 1)) {
    throw new RangeError(`outputBytes must be >= 1, got ${settings.outputBytes}`);
  }
  return defineWorker<CommandRun>({
    name: COMMAND_WORKER,
    args: commandRunSchema,
    perform: (run, ctx) => runCommand(run, ctx, settings),
  });
}

interface Settings {
  env: (name: string) => string | undefined;
  clock: Clock;
  killGraceMs: number;
  outputBytes: number;
  groupsDir: string | undefined;
}

/** Validates a command run spec; what it refuses is discarded at once. */
export const commandRunSchema: ArgsSchema<CommandRun> = {
  parse(input: unknown): CommandRun {
    if (!isRecord(input)) throw new TypeError(`command run must be an object, got ${show(input)}`);
    if (input.kind !== "command") {
      throw new TypeError(`command run kind must be "command", got ${show(input.kind)}`);
    }
    const { argv, shell = false, cwd, env } = input;
    if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === "string")) {
      throw new TypeError(`command argv must be a non-empty list of strings, got ${show(argv)}`);
    }
    if (argv[0] === "") throw new TypeError(`command argv[0] must not be empty`);
    if (typeof shell !== "boolean") {
      throw new TypeError(`command shell must be true or false, got ${show(shell)}`);
    }
    if (shell && argv.length !== 1) {
      throw new TypeError(`command argv must be one script with shell: true, got ${argv.length}`);
    }
    if (cwd !== undefined && (typeof cwd !== "string" || cwd === "")) {
      throw new TypeError(`command cwd must be a non-empty string, got ${show(cwd)}`);
    }
    if (
      env !== undefined &&
      (!isRecord(env) || !Object.values(env).every((v) => typeof v === "string"))
    ) {
      throw new TypeError(`command env must map names to strings, got ${show(env)}`);
    }
    const run: CommandRun = { kind: "command", argv: [...argv], shell };
    if (cwd !== undefined) run.cwd = cwd;
    if (env !== undefined) run.env = { ...(env as Record<string, string>) };
    return run;
  },
};

/** One attempt: environment, spawn, wait, stop the group, map the exit. */
async function runCommand(run: CommandRun, ctx: JobContext, settings: Settings) {
  const label = labelOf(run);
  let env: Record<string, string>;
  try {
    env = childEnv(run, ctx, settings.env);
  } catch (error) {
    if (error instanceof MissingVariableError) return { discard: error.message };
    throw error;
  }
  if (ctx.signal.aborted) throw stoppedError(label, ctx.signal.reason);
  const output = new OutputTail(settings.outputBytes);
  const lastLine = new OutputTail(LAST_LINE_BYTES);
  let child: Deno.ChildProcess;
  try {
    child = spawnCommand(run, env);
  } catch (error) {
    throw new Error(`${label} cannot start: ${(error as Error).message}`, { cause: error });
  }
  const group = new ProcessGroup(child, settings, output, lastLine);
  group.record(ctx);
  try {
    const ended = await waitForEnd(group, ctx, settings.clock);
    await group.finish(ended.kind !== "exited");
    ctx.output(output.text(secretsOf(run, settings.env)));
    if (ended.kind === "timeout") throw new JobTimeoutError(ended.ms);
    if (ended.kind === "aborted") throw stoppedError(label, ctx.signal.reason);
    return outcomeOf(ended.status, lastLine.text(), label);
  } finally {
    group.release();
  }
}

/** The child's extra environment: the run's `env`, expanded, then the JOBS_* variables. */
export function childEnv(
  run: CommandRun,
  ctx: JobContext,
  daemonEnv: (name: string) => string | undefined,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(run.env ?? {})) {
    env[name] = expandVariables(value, daemonEnv, `command env "${name}"`);
  }
  env.JOBS_OCCURRENCE = ctx.job.occurrence ?? "";
  env.JOBS_IDEMPOTENCY_KEY = ctx.idempotencyKey;
  env.JOBS_ATTEMPT = String(ctx.attempt);
  env.JOBS_FENCE = String(ctx.fence);
  env.JOBS_SCHEDULED_FOR = new Date(scheduledFor(ctx)).toISOString();
  return env;
}

/**
 * The occurrence's pre-jitter instant (a fan-out item, `<occurrence>#<key>`,
 * has its run's), or the job's scheduled time for a plain job.
 */
function scheduledFor(ctx: JobContext): number {
  const occurrence = ctx.job.occurrence;
  if (occurrence === null) return ctx.job.scheduledAt;
  const instant = occurrenceInstant({
    at: ctx.job.scheduledAt,
    occurrence: occurrence.replace(/#[^#@]*$/, ""),
    local: "",
    note: null,
  });
  return Number.isFinite(instant) ? instant : ctx.job.scheduledAt;
}

/** Starts `run`'s argv (or its script under /bin/sh) as the leader of a new process group. */
export function spawnCommand(run: CommandRun, env: Record<string, string>): Deno.ChildProcess {
  const [program, ...args] = run.shell ? ["/bin/sh", "-c", run.argv[0]!] : run.argv;
  return new Deno.Command(program!, {
    args,
    cwd: run.cwd,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    // A new session, hence a new process group led by the child (pgid = pid).
    detached: true,
  }).spawn();
}

type Ended =
  | { kind: "exited"; status: Deno.CommandStatus }
  | { kind: "timeout"; ms: number }
  | { kind: "aborted" };

/** Waits for the child to exit, the timeout (`meta.timeoutMs`) or an abort, whichever is first. */
async function waitForEnd(group: ProcessGroup, ctx: JobContext, clock: Clock): Promise<Ended> {
  const timeoutMs = timeoutOf(ctx);
  const done = new AbortController();
  const wake = AbortSignal.any([done.signal, ctx.signal]);
  const waits: Promise<Ended>[] = [
    group.status.then((status) => ({ kind: "exited", status })),
    new Promise((resolve) => {
      if (ctx.signal.aborted) resolve({ kind: "aborted" });
      ctx.signal.addEventListener("abort", () => resolve({ kind: "aborted" }), {
        once: true,
        signal: done.signal,
      });
    }),
  ];
  if (timeoutMs !== undefined) {
    waits.push(
      clock.sleep(timeoutMs, wake).then(() =>
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

function timeoutOf(ctx: JobContext): number | undefined {
  const ms = ctx.job.meta.timeoutMs;
  return typeof ms === "number" && ms > 0 && Number.isFinite(ms) ? ms : undefined;
}

/** Maps the exit of a command that ended by itself; see the module doc's table. */
function outcomeOf(status: Deno.CommandStatus, stdoutTail: string, label: string) {
  if (status.signal !== null) throw new Error(`${label} was killed by ${status.signal}`);
  switch (status.code) {
    case 0:
      return undefined;
    case EXIT_SNOOZE:
      return { snooze: snoozeMs(stdoutTail) };
    case EXIT_CANCEL:
      return { cancel: `${label} exited with code ${EXIT_CANCEL} (cancel)` };
    case EXIT_DISCARD:
      return { discard: `${label} exited with code ${EXIT_DISCARD} (discard)` };
    default:
      throw new Error(`${label} exited with code ${status.code}`);
  }
}

const SNOOZE_LINE = /^snooze\s+(\d+(?:\.\d+)?)$/;

/** `snooze <seconds>` on stdout's last non-empty line, else {@linkcode DEFAULT_SNOOZE_MS}. */
export function snoozeMs(stdoutTail: string): number {
  const last = stdoutTail.trimEnd().split("\n").at(-1)?.trim() ?? "";
  const match = SNOOZE_LINE.exec(last);
  return match ? Math.round(Number(match[1]) * 1000) : DEFAULT_SNOOZE_MS;
}

/**
 * The running child and its group: pumps stdout and stderr into the tails,
 * and stops the group with SIGTERM, then SIGKILL after the grace.
 */
class ProcessGroup {
  readonly status: Promise<Deno.CommandStatus>;
  /** Both pipes reached their end (every writer in the group exited or closed them). */
  readonly drained: Promise<void>;
  readonly #pgid: number;
  readonly #settings: Settings;
  readonly #readers: ReadableStreamDefaultReader<Uint8Array>[];
  readonly #stopWaits = new AbortController();

  constructor(child: Deno.ChildProcess, settings: Settings, output: OutputTail, last: OutputTail) {
    this.#pgid = child.pid;
    killOnExit(this.#pgid);
    this.#settings = settings;
    this.status = child.status;
    this.#readers = [child.stdout.getReader(), child.stderr.getReader()];
    const [stdout, stderr] = this.#readers;
    this.drained = Promise.all([
      pump(stdout!, (chunk) => {
        output.push(chunk);
        last.push(chunk);
      }),
      pump(stderr!, (chunk) => output.push(chunk)),
    ]).then(() => {});
  }

  /**
   * Makes sure nothing of the group outlives the attempt, and that the output
   * is read to its end. `stop` is true on timeout or abort.
   */
  async finish(stop: boolean): Promise<void> {
    const grace = this.#settings.killGraceMs;
    const alive = stop || groupAlive(this.#pgid);
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

  /** SIGTERM to the group; SIGKILL once the grace has passed and something is left. */
  async #stop(): Promise<void> {
    const { clock, killGraceMs } = this.#settings;
    const deadline = clock.now() + killGraceMs;
    signalGroup(this.#pgid, "SIGTERM");
    const settled = Promise.all([this.status, this.drained]);
    await this.#within(settled, killGraceMs);
    const alive = groupAlive(this.#pgid);
    if (alive === false) return;
    const left = deadline - clock.now();
    if (alive === true && left > 0) await clock.sleep(left, this.#stopWaits.signal);
    signalGroup(this.#pgid, "SIGKILL");
    await this.status;
  }

  /** Whether `promise` settles within `ms` of the clock (false once the group is released). */
  #within(promise: Promise<unknown>, ms: number): Promise<boolean> {
    return within(promise, ms, this.#settings.clock, this.#stopWaits.signal);
  }

  /** Records the group in `groupsDir`, if set, for a daemon that outlives this one. */
  record(ctx: JobContext): void {
    const dir = this.#settings.groupsDir;
    if (dir !== undefined) {
      recordGroup(dir, { pgid: this.#pgid, job: ctx.job.id, fence: ctx.fence });
    }
  }

  /** Ends every pending wait of this group (a rejected attempt must not leave sleepers). */
  release(): void {
    this.#stopWaits.abort();
    releaseOnExit(this.#pgid);
    if (this.#settings.groupsDir !== undefined) forgetGroup(this.#settings.groupsDir, this.#pgid);
  }
}

/** A rolling tail of bytes: memory stays at `capacity` whatever the output. */
export class OutputTail {
  readonly #buffer: Uint8Array;
  #end = 0;
  #length = 0;
  /** Bytes pushed out of the tail so far. */
  dropped = 0;

  constructor(readonly capacity: number) {
    this.#buffer = new Uint8Array(capacity);
  }

  push(chunk: Uint8Array): void {
    const cap = this.capacity;
    if (chunk.length >= cap) {
      this.dropped += this.#length + chunk.length - cap;
      this.#buffer.set(chunk.subarray(chunk.length - cap));
      this.#end = 0;
      this.#length = cap;
      return;
    }
    const first = Math.min(chunk.length, cap - this.#end);
    this.#buffer.set(chunk.subarray(0, first), this.#end);
    this.#buffer.set(chunk.subarray(first), 0);
    this.#end = (this.#end + chunk.length) % cap;
    const length = this.#length + chunk.length;
    this.dropped += Math.max(0, length - cap);
    this.#length = Math.min(cap, length);
  }

  /** The kept bytes, in order. */
  bytes(): Uint8Array {
    const start = (this.#end - this.#length + this.capacity) % this.capacity;
    if (start + this.#length <= this.capacity) {
      return this.#buffer.slice(start, start + this.#length);
    }
    const out = new Uint8Array(this.#length);
    const head = this.#buffer.subarray(start);
    out.set(head);
    out.set(this.#buffer.subarray(0, this.#length - head.length), head.length);
    return out;
  }

  /**
   * The kept text, with a `[truncated N bytes] …` marker (the kernel's) when
   * the start was dropped, and each of `secrets` masked. Fits `capacity`.
   */
  text(secrets: string[] = []): string {
    let text = new TextDecoder().decode(this.bytes());
    text = maskValues(text, secrets);
    if (this.dropped === 0) return text;
    // A cut inside a character leaves continuation bytes: they decode to U+FFFD.
    text = text.replace(/^\uFFFD+/, "");
    const marker = `[truncated ${this.dropped} bytes] …`;
    const bytes = new TextEncoder().encode(text);
    const room = Math.max(0, this.capacity - new TextEncoder().encode(marker).length);
    if (bytes.length <= room) return marker + text;
    const tail = new TextDecoder().decode(bytes.subarray(bytes.length - room));
    return marker + tail.replace(/^\uFFFD+/, "");
  }
}

/** Values filled into the run's env from the daemon's: masked in the output. */
export function secretsOf(run: CommandRun, env: (name: string) => string | undefined): string[] {
  const names = Object.values(run.env ?? {}).flatMap(referencedVariables);
  return names.map(env).filter((v): v is string => v !== undefined);
}

function stoppedError(label: string, reason: unknown): Error {
  const why = reason instanceof Error ? reason.message : String(reason ?? "aborted");
  return new Error(`${label} was stopped: ${why}`, { cause: reason });
}

/** How errors name the command: its program, or the start of its script. */
function labelOf(run: CommandRun): string {
  const name = run.argv[0]!;
  const short = name.length > 60 ? `${name.slice(0, 60)}…` : name;
  return run.shell ? `shell command "${short}"` : `command "${short}"`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
