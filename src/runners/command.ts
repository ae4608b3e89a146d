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
 *   for a fan-out's item job, or the job's scheduled time for a plain job
 *   and a workflow step). A `${NAME}` that is not set discards the job,
 *   naming the variable: retrying cannot help.
 * - stdin is `/dev/null`; stdout and stderr are read as they arrive,
 *   interleaved, into a rolling tail of `outputBytes` kept as the attempt's
 *   output (values filled from `${NAME}` are masked in it).
 * - The child is spawned `detached`, which on Unix makes it the leader of a
 *   new session and so of a new process group whose id is its pid; every
 *   signal below goes to the whole group.
 *
 * A step of a workflow run (a job whose `ctx.workflow` is set) also gets,
 * beside those:
 *
 * | variable            | value                                                       |
 * | ------------------- | ----------------------------------------------------------- |
 * | `JOBS_WORKFLOW_RUN` | the run's id                                                |
 * | `JOBS_WORKFLOW`     | the definition's id                                         |
 * | `JOBS_STEP`         | the step's id (for a compensation, the step it undoes)      |
 * | `JOBS_USE_CASE`     | the use case the job runs, empty when none                  |
 * | `JOBS_STEP_INPUT`   | a JSON file: the step document (step_document.ts)           |
 * | `JOBS_STEP_RESULT`  | a path the command may write its result to, as JSON         |
 *
 * The step document holds the run's input, the results of the steps it
 * depends on, the item of a fanned-out step, for a compensation the step it
 * undoes and its result, and the cursor an earlier attempt wrote:
 * `{ run, workflow, step, kind, use_case, input, results, index, item,
 * compensates, cursor }`. `JOBS_IDEMPOTENCY_KEY` is the step's identity
 * (`<run>/<step>`, `<run>/<step>#<item>`, `<run>/<step>:compensate`), the
 * same in every attempt. When the command exits 0 and has written the
 * result file, its JSON is the step's result, handed to the steps that
 * depend on it; no file means no result (null). A result file that is not
 * JSON discards the job, naming the file. Both files live in a directory of
 * their own (mode 0700) created before the command starts and removed once
 * the attempt has ended, so nothing of one attempt reaches the next. A plain
 * job gets none of these.
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
 * | `ctx.timeoutMs` passed       | error `timed out after <ms> ms`: retried with backoff       |
 * | `ctx.signal` aborted         | error naming the reason (the runtime records nothing)       |
 * | cannot start (no such file)  | error naming the program: retried with backoff             |
 *
 * Each of these errors is one expected failure, stored as a message and no
 * stack: `command "sh" exited with code 1` (the program as given, quoted and
 * escaped; a script's first 60 characters for `shell: true`), then, when the
 * command wrote to stderr, `stderr:` and the last {@linkcode ERROR_STDERR_BYTES}
 * of it (the output keeps more of both streams).
 *
 * On timeout or abort the group gets SIGTERM, then SIGKILL after
 * `killGraceMs` if anything of it is still alive. When the command exits by
 * itself, whatever it left running in its group is stopped the same way (the
 * same grace: a grandchild may have as much to clean up as its parent): a
 * run owns its group, so no orphan outlives it. (A process that starts a
 * session of its own, `setsid`, escapes this, as it escapes every group
 * kill.) Waits use the injected clock; `ProcessGroup` of process_group.ts is
 * the one kill sequence, shared with the fan-out's selection command.
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
import { JobFailure } from "../kernel/error_text.ts";
import {
  type ArgsSchema,
  defineWorker,
  type JobContext,
  type Outcome,
  type StepContext,
  type Worker,
} from "../kernel/worker.ts";
import { occurrenceInstant, parentOccurrence } from "../schedule/occurrences.ts";
import { expandVariables, MissingVariableError, referencedVariables } from "../process/env.ts";
import { ProcessGroup } from "../process/process_group.ts";
import { stepDocument } from "./step_document.ts";
import { escapeControl } from "../text/escape.ts";
import { shellQuote } from "../text/shell.ts";
import { COMMAND_WORKER, type CommandRun } from "../kernel/runs.ts";
import { ERROR_STDERR_BYTES, OutputTail, withStderr } from "../process/output.ts";
import { startCommand } from "../process/spawn.ts";

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
    // It ends the process group before returning, so it times itself.
    selfTimed: true,
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

/**
 * One attempt: environment, (for a workflow step) its files, spawn, wait,
 * stop the group, map the exit.
 */
async function runCommand(run: CommandRun, ctx: JobContext, settings: Settings): Promise<Outcome> {
  const label = labelOf(run);
  let env: Record<string, string>;
  try {
    env = childEnv(run, ctx, settings.env);
  } catch (error) {
    if (error instanceof MissingVariableError) return { discard: error.message };
    throw error;
  }
  if (ctx.signal.aborted) throw stoppedError(label, ctx.signal.reason);
  if (ctx.workflow === null) return await spawnAndWait(run, ctx, settings, env, label, null);
  const files = await StepFiles.create(ctx.workflow, ctx);
  try {
    return await spawnAndWait(run, ctx, settings, { ...env, ...files.env }, label, files);
  } finally {
    await files.remove();
  }
}

async function spawnAndWait(
  run: CommandRun,
  ctx: JobContext,
  settings: Settings,
  env: Record<string, string>,
  label: string,
  files: StepFiles | null,
): Promise<Outcome> {
  const output = new OutputTail(settings.outputBytes);
  const lastLine = new OutputTail(LAST_LINE_BYTES);
  const stderr = new OutputTail(ERROR_STDERR_BYTES);
  const child = startCommand(run, env, label);
  const group = new ProcessGroup(child, settings, {
    stdout(chunk) {
      output.push(chunk);
      lastLine.push(chunk);
    },
    stderr(chunk) {
      output.push(chunk);
      stderr.push(chunk);
    },
  });
  group.record({ job: ctx.job.id, fence: ctx.fence });
  try {
    const ended = await group.wait(ctx.signal, timeoutOf(ctx));
    await group.finish(ended.kind !== "exited");
    const secrets = secretsOf(run, settings.env);
    ctx.output(output.text(secrets));
    if (ended.kind === "aborted") throw stoppedError(label, ctx.signal.reason);
    const said = (message: string) => withStderr(message, stderr, secrets);
    if (ended.kind === "timeout") {
      throw new JobFailure(said(`${label} timed out after ${ended.ms} ms`));
    }
    const outcome = outcomeOf(ended.status, lastLine.text(), label, said);
    return outcome === undefined && files !== null ? await files.result(label) : outcome;
  } finally {
    group.release();
  }
}

/** Largest result file read; the executor then holds the result to its own, smaller limit. */
export const MAX_RESULT_FILE_BYTES = 16 * 1024 * 1024;

/**
 * A step attempt's private directory: the step document the command reads
 * (`JOBS_STEP_INPUT`) and the path it may write its result to
 * (`JOBS_STEP_RESULT`).
 */
class StepFiles {
  private constructor(
    readonly dir: string,
    readonly input: string,
    readonly output: string,
    readonly env: Record<string, string>,
  ) {}

  /** Makes the directory (0700, the temp dir's default) and writes the step document in it. */
  static async create(step: StepContext, ctx: JobContext): Promise<StepFiles> {
    const document = await stepDocument(step, ctx);
    const dir = await Deno.makeTempDir({ prefix: "jobs-step-" });
    const input = `${dir}/input.json`;
    const output = `${dir}/result.json`;
    try {
      await Deno.writeTextFile(input, JSON.stringify(document), { mode: 0o600 });
    } catch (error) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      throw error;
    }
    return new StepFiles(dir, input, output, {
      JOBS_WORKFLOW_RUN: String(step.run),
      JOBS_WORKFLOW: step.workflow,
      JOBS_STEP: step.step,
      JOBS_USE_CASE: step.useCase ?? "",
      JOBS_STEP_INPUT: input,
      JOBS_STEP_RESULT: output,
    });
  }

  /** What a command that exited 0 returns: its result file's JSON, if it wrote one. */
  async result(label: string): Promise<Outcome> {
    let size: number;
    try {
      size = (await Deno.stat(this.output)).size;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return undefined;
      throw error;
    }
    const where = `${label} result file "${escapeControl(this.output)}"`;
    if (size > MAX_RESULT_FILE_BYTES) {
      return { discard: `${where} has ${size} bytes, over ${MAX_RESULT_FILE_BYTES}` };
    }
    const text = await Deno.readTextFile(this.output);
    try {
      return { result: JSON.parse(text) };
    } catch (error) {
      return { discard: `${where} is not JSON: ${(error as Error).message}` };
    }
  }

  /** Removes the directory, whatever the command left in it. */
  async remove(): Promise<void> {
    await Deno.remove(this.dir, { recursive: true }).catch(() => {});
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
  // A step's identity (`12/3`) is no occurrence, though Date.parse may read it as a date.
  if (occurrence === null || ctx.workflow !== null) return ctx.job.scheduledAt;
  const instant = occurrenceInstant(parentOccurrence(occurrence));
  return Number.isFinite(instant) ? instant : ctx.job.scheduledAt;
}

/** The schedule's timeout (the job's run settings), else the worker's: none for the runner. */
function timeoutOf(ctx: JobContext): number | undefined {
  return ctx.timeoutMs;
}

/**
 * Maps the exit of a command that ended by itself; see the module doc's
 * table. `said` adds the tail of stderr to a message.
 */
function outcomeOf(
  status: Deno.CommandStatus,
  stdoutTail: string,
  label: string,
  said: (message: string) => string,
) {
  if (status.signal !== null) throw new JobFailure(said(`${label} was killed by ${status.signal}`));
  switch (status.code) {
    case 0:
      return undefined;
    case EXIT_SNOOZE:
      return { snooze: snoozeMs(stdoutTail) };
    case EXIT_CANCEL:
      return { cancel: said(`${label} exited with code ${EXIT_CANCEL} (cancel)`) };
    case EXIT_DISCARD:
      return { discard: said(`${label} exited with code ${EXIT_DISCARD} (discard)`) };
    default:
      throw new JobFailure(said(`${label} exited with code ${status.code}`));
  }
}

const SNOOZE_LINE = /^snooze\s+(\d+(?:\.\d+)?)$/;

/** `snooze <seconds>` on stdout's last non-empty line, else {@linkcode DEFAULT_SNOOZE_MS}. */
export function snoozeMs(stdoutTail: string): number {
  const last = stdoutTail.trimEnd().split("\n").at(-1)?.trim() ?? "";
  const match = SNOOZE_LINE.exec(last);
  return match ? Math.round(Number(match[1]) * 1000) : DEFAULT_SNOOZE_MS;
}

/** Values filled into the run's env from the daemon's: masked in the output. */
export function secretsOf(run: CommandRun, env: (name: string) => string | undefined): string[] {
  const names = Object.values(run.env ?? {}).flatMap(referencedVariables);
  return names.map(env).filter((v): v is string => v !== undefined);
}

function stoppedError(label: string, reason: unknown): Error {
  const why = reason instanceof Error ? reason.message : String(reason ?? "aborted");
  return new JobFailure(`${label} was stopped: ${why}`, { cause: reason });
}

/**
 * The command line a `jobs.command` job runs, for a person to read (and
 * paste): each word of `argv` quoted for a POSIX shell when it needs it,
 * control characters as `$'\x1b'` escapes so none reaches a terminal raw; a
 * `shell: true` script as `/bin/sh -c '<script>'`. Neither `cwd` nor `env`:
 * callers show those beside it.
 */
export function commandText(run: CommandRun): string {
  const words = run.shell ? ["/bin/sh", "-c", run.argv[0]!] : run.argv;
  return words.map(shellQuote).join(" ");
}

/**
 * How errors name the command: `command "<argv[0]>"`, or `shell command
 * "<the script's first 60 characters>…"`. The name is quoted as JSON (a
 * newline of a script reads `\n`, so the message stays one line) and its
 * other control characters escaped.
 */
export function labelOf(run: CommandRun): string {
  const name = run.argv[0]!;
  const short = name.length > 60 ? `${name.slice(0, 60)}…` : name;
  const quoted = escapeControl(JSON.stringify(short));
  return run.shell ? `shell command ${quoted}` : `command ${quoted}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
