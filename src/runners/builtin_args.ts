/**
 * The args of the built-in runners, checked when a job is enqueued. Each
 * runner validates its args when it runs, and discards a job whose args it
 * refuses; an operator who enqueues one by hand (`jobs enqueue jobs.command
 * --args ...`, `jobs.enqueue("jobs.command", ...)`) would learn that only
 * from the daemon's log. So every door that enqueues (the command line, the
 * library, the admin action) runs the same schema the runner runs, here,
 * before anything is stored, and the refusal shows the shape expected.
 *
 * The kernel knows no runner, so it cannot do this itself: the layers above
 * (admin, `jobs.ts`, the command line) call {@linkcode checkRunnerArgs}.
 *
 * @module
 */

import { EnqueueError } from "../kernel/enqueue.ts";
import type { ArgsSchema } from "../kernel/worker.ts";
import { FANOUT_WORKER } from "../kernel/runs.ts";
import { commandRunSchema } from "./command.ts";
import { COMMAND_WORKER } from "../kernel/runs.ts";
import { fanOutRunSchema } from "./fanout.ts";
import { parseHttpRun } from "./http.ts";
import { HTTP_WORKER } from "../kernel/runs.ts";

/** One built-in runner's args: the schema its worker runs, and an example of the shape. */
interface RunnerArgs {
  schema: ArgsSchema<unknown>;
  /** The shape expected, as JSON with example values. */
  shape: string;
  /** The fields of `shape` that may be left out, if any. */
  optional?: string;
}

/** The built-in runners whose args are checked at enqueue, by worker name. */
export const RUNNER_ARGS: ReadonlyMap<string, RunnerArgs> = new Map<string, RunnerArgs>([
  [COMMAND_WORKER, {
    schema: commandRunSchema,
    shape: `{"kind":"command","argv":["prog","arg"],"shell":false,"cwd":"/srv/app",` +
      `"env":{"NAME":"value"}}`,
    optional: "shell, cwd and env",
  }],
  [HTTP_WORKER, {
    schema: { parse: parseHttpRun },
    shape: `{"kind":"http","method":"POST","url":"https://example.com/hook",` +
      `"headers":{"Content-Type":"application/json"},"body":"{}","timeoutMs":30000}`,
    optional: "headers, body and timeoutMs",
  }],
  [FANOUT_WORKER, {
    schema: fanOutRunSchema,
    shape: `{"kind":"fanout","schedule":"nightly","selection":{"kind":"command",` +
      `"argv":["list"]},"batchSize":100,"run":{"kind":"command","argv":["work"]},` +
      `"item":{"queue":"default","priority":0,"maxAttempts":20,"tags":[],"tenant":null,` +
      `"meta":{}}}`,
  }],
]);

/** Raised by {@linkcode checkRunnerArgs}: what is wrong, and the shape expected. */
export class RunnerArgsError extends EnqueueError {
  constructor(
    readonly worker: string,
    /** The runner's own words (they may quote the value refused). */
    readonly problem: string,
    /** The shape expected, with which fields are optional. */
    readonly expected: string,
  ) {
    super(`${worker} args: ${problem}; expected ${expected}`);
    this.name = "RunnerArgsError";
  }
}

/**
 * Checks the args of a job of `worker`, as stored (JSON text), as the
 * built-in runner of that name will when it runs; throws a
 * {@linkcode RunnerArgsError} (an `EnqueueError`) naming the runner, what is
 * wrong and the shape expected. Any other worker passes, and its args are
 * not parsed.
 */
export function checkRunnerArgs(worker: string, argsJson: string): void {
  const runner = RUNNER_ARGS.get(worker);
  if (!runner) return;
  try {
    runner.schema.parse(JSON.parse(argsJson));
  } catch (error) {
    const problem = error instanceof Error ? error.message : String(error);
    const optional = runner.optional ? ` (${runner.optional} optional)` : "";
    throw new RunnerArgsError(worker, problem, `${runner.shape}${optional}`);
  }
}
