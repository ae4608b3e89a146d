/**
 * What a job runs, as a schedule, a workflow step, a pipeline's source or
 * step, or the CLI declares it, and the names of the built-in workers that
 * run it. Pure data: the runners live in `src/runners/`.
 *
 * @module
 */

/** What a job runs; the runners come with the daemon, here it is only stored. */
export type RunSpec =
  | {
    kind: "command";
    argv: string[];
    shell: boolean;
    cwd?: string;
    env?: Record<string, string>;
  }
  | {
    kind: "http";
    method: string;
    url: string;
    headers?: Record<string, string>;
    body?: string;
    timeoutMs?: number;
  }
  | { kind: "worker"; worker: string; args: unknown };

/**
 * Where a fan-out schedule's items come from: a command whose stdout lists
 * them (one per line, or one JSON array), run as a `command` run is; or a
 * worker of the `workers:` module whose `perform` returns the list.
 */
export type Selection =
  | Extract<RunSpec, { kind: "command" }>
  | { kind: "worker"; worker: string; args: unknown };

/** The args of a `jobs.command` job: the `command` variant of a run spec. */
export type CommandRun = Extract<RunSpec, { kind: "command" }>;

/** The args of a `jobs.http` job: the schedule's `http` run spec. */
export type HttpRun = Extract<RunSpec, { kind: "http" }>;

/** The worker that runs `command` runs. */
export const COMMAND_WORKER = "jobs.command";

/** The worker that runs `http` runs. */
export const HTTP_WORKER = "jobs.http";

/** The worker that runs a fan-out schedule's occurrences (`src/runners/fanout.ts`). */
export const FANOUT_WORKER = "jobs.fanout";

/** The worker that starts a workflow run from a schedule's occurrence. */
export const WORKFLOW_START_WORKER = "jobs.workflow";

/** The job worker that runs one pipeline run. */
export const INGEST_WORKER = "jobs.ingest";

/** The job worker that runs one report run. */
export const REPORT_WORKER = "jobs.report";

/** The job worker that walks one bulk run's snapshot (`src/admin/bulk_worker.ts`). */
export const BULK_WORKER = "jobs.bulk";

/**
 * The workers of this program itself: each runs what its args say (a
 * command line, a request, a run of a definition), so only a trusted source
 * (the schedules file, the command line on the host, the program's own
 * doors) may enqueue one.
 */
export const BUILT_IN_WORKERS: ReadonlySet<string> = new Set([
  COMMAND_WORKER,
  HTTP_WORKER,
  FANOUT_WORKER,
  WORKFLOW_START_WORKER,
  INGEST_WORKER,
  REPORT_WORKER,
  BULK_WORKER,
]);
