/**
 * `jobs enqueue <worker>`: one job of a worker, validated as the library's
 * enqueue validates it, and audited. A worker no daemon of this
 * configuration defines would be accepted and then discarded as unknown, so
 * it is refused, with the known workers and the nearest of them: the
 * daemon's runners (`jobs.command`, `jobs.http`, `jobs.fanout`), the workers
 * of the configuration's `workers:` module, and the workers jobs in the
 * store already use. `--force` enqueues anyway, for a worker defined
 * elsewhere (a library user's own process).
 *
 * The args come from `--args <json>`, `--args-file <path>` or `--args -`
 * (standard input): Linux caps one argv argument at 128 KiB, below the
 * 256 KiB args limit. The store must exist unless `--create` is given, so
 * a mistyped `--db` or a vanished file is an error, not a new empty store.
 *
 * @module
 */

import type { Command } from "commander";
import { enqueueJob } from "../../admin/jobs.ts";
import {
  buildJob,
  EnqueueError,
  type EnqueueOptions,
  serializeArgs,
} from "../../kernel/enqueue.ts";
import type { UniqueOptions } from "../../kernel/unique.ts";
import { defineWorker } from "../../kernel/worker.ts";
import { COMMAND_WORKER } from "../../kernel/runs.ts";
import { HTTP_WORKER } from "../../kernel/runs.ts";
import { checkRunnerArgs, RunnerArgsError } from "../../runners/builtin_args.ts";
import { FANOUT_WORKER } from "../../kernel/runs.ts";
import { didYouMean } from "../../text/suggest.ts";
import {
  type CliDeps,
  collect,
  CommandFailed,
  dbPath,
  globalOptions,
  parseDuration,
  parseInstant,
  parseJson,
  quiet,
  tryParseJson,
  who,
  wholeNumber,
} from "../common.ts";
import { configIfAny } from "../config.ts";
import { locationProblem, withStore } from "../store/open.ts";
import { storeOrigin } from "../project_file.ts";
import { cell, echo, firstLine } from "../text.ts";

/** The workers every daemon has, whatever its configuration. */
export const RUNNER_WORKERS: readonly string[] = [COMMAND_WORKER, HTTP_WORKER, FANOUT_WORKER];

interface EnqueueCliOptions {
  args?: string;
  argsFile?: string;
  create?: boolean;
  meta?: unknown;
  queue?: string;
  priority?: number;
  in?: number;
  at?: number;
  maxAttempts?: number;
  tag?: string[];
  tenant?: string;
  unique?: boolean;
  uniqueBy?: string;
  uniquePeriod?: number;
  uniqueStates?: string;
  debounce?: number;
  debounceExtend?: boolean;
  force?: boolean;
  reason?: string;
  actor?: string;
  config?: string;
  db?: string;
  json?: boolean;
}

/** Registers `jobs enqueue` on the program. */
export function registerEnqueueCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("enqueue")
        .description("enqueue one job of a worker; a daemon that defines the worker runs it")
        .argument("<worker>", "the worker's name")
        .option("--args <json>", "the job's args as JSON; - reads them from standard input")
        .option("--args-file <path>", "the job's args as JSON, read from this file")
        .option("--queue <name>", "the queue (default: default)")
        .option("--priority <n>", "0 (first) to 9 (last)", wholeNumber(0, 9))
        .option(
          "--in <duration>",
          "run no earlier than this long from now (90s, 15m, 1h30m)",
          parseDuration,
        )
        .option(
          "--at <instant>",
          "run no earlier than this ISO instant, with its offset",
          parseInstant,
        )
        .option(
          "--max-attempts <n>",
          "attempts before it is discarded (default 20)",
          wholeNumber(1, 1_000_000),
        )
        .option("--tag <tag>", "a tag (repeatable)", collect)
        .option("--meta <json>", "data kept with the job, as a JSON object", parseJson)
        .option("--tenant <name>", "the tenant the job belongs to")
        .option(
          "--unique",
          "refuse a duplicate (same worker and args) while the first is not final",
        )
        .option(
          "--unique-by <what>",
          "what makes a duplicate: args, worker, or keys:a,b (implies --unique)",
        )
        .option(
          "--unique-period <duration>",
          "duplicates only within this period (implies --unique)",
          parseDuration,
        )
        .option("--unique-states <which>", "incomplete or all (implies --unique)")
        .option(
          "--debounce <duration>",
          "wait this long; a later enqueue of the same key meanwhile replaces this job's args " +
            "instead of being refused (implies --unique)",
          parseDuration,
        )
        .option(
          "--debounce-extend",
          "each replacing enqueue also restarts the wait (with --debounce)",
        )
        .option(
          "--force",
          "enqueue a worker this configuration does not define (one run by another process)",
        )
        .option("--create", "create and migrate the store when its file is missing"),
      {
        db: { mode: "write" },
        config: { for: "whose workers: module names the workers (read when it exists)" },
        json: true,
        audit: { reason: "optional" },
      },
    ).action(async (worker: string, options: EnqueueCliOptions) => {
      await enqueueCommand(worker, options, deps);
    }),
    deps,
    "enqueue",
  );
}

async function enqueueCommand(
  worker: string,
  options: EnqueueCliOptions,
  deps: CliDeps,
): Promise<void> {
  if (!isWorkerName(worker)) {
    throw new CommandFailed(
      `jobs enqueue: worker "${echo(worker)}" is not a printable identifier: 1-128 letters, ` +
        `digits or ._:/- starting with a letter or digit`,
      2,
    );
  }
  const enqueue = enqueueOptions(options);
  const args = await readArgs(options, deps);
  // Refused args and options are a wrong command line (exit 2), whatever the worker.
  usage(() => {
    const job = buildJob(worker, args, enqueue, deps.clock.now());
    checkRunnerArgs(job.worker, job.args);
  });
  const db = dbPath(options.db, deps);
  const check = !options.force && !RUNNER_WORKERS.includes(worker);
  const defined = check
    ? [
      ...RUNNER_WORKERS,
      ...(await configIfAny("enqueue", options.config, deps, { workers: true, lenient: true }))
        .workers,
    ]
    : [];
  const known = !check || defined.includes(worker);
  // Without a store no job uses any worker: refuse before creating one.
  if (!known && await locationProblem(db, "read", deps.program)) unknownWorker(worker, defined);
  if (!options.create) await requireStoreFile(db, deps.program, storeOrigin(db, deps));
  await withStore("enqueue", db, options.create ? "create" : "write", deps, async (store) => {
    if (!known) {
      const used = await store.workersList();
      if (!used.includes(worker)) unknownWorker(worker, [...defined, ...used]);
    }
    const result = await enqueueJob(store, worker, args, enqueue, who(options, deps));
    if (options.json) {
      deps.out(JSON.stringify(result));
    } else if (result.replaced) {
      deps.out(
        `replaced the args of job ${result.id} (${result.state} on ${
          cell(result.queue)
        }), which holds the same unique key (debounce)`,
      );
    } else if (result.duplicate) {
      deps.out(
        `duplicate of ${result.id}: job ${result.id} (${result.state} on ` +
          `${cell(result.queue)}) holds the same unique key; nothing enqueued`,
      );
    } else {
      deps.out(
        `enqueued job ${result.id}: ${cell(worker)} on queue ${
          cell(result.queue)
        }, ${result.state}`,
      );
    }
  });
}

/**
 * A missing store file is an error naming it, with the ways to create one:
 * `enqueue` creates the store only when asked (`--create`), so a vanished
 * file or a mistyped `--db` never becomes a fresh empty store.
 */
async function requireStoreFile(
  db: string,
  program: string,
  origin: string | null,
): Promise<void> {
  const problem = await locationProblem(db, "write", program, origin);
  if (problem === null) return;
  // Only the file is missing when `create` would find nothing wrong.
  const onlyFile = await locationProblem(db, "create", program) === null;
  throw new CommandFailed(`jobs enqueue: ${problem}${onlyFile ? ", or add --create" : ""}`);
}

/**
 * The job's args: `--args`, `--args-file` or standard input (`--args -`),
 * parsed and size-checked, every refusal naming where they came from.
 * Without either option the args are `{}`.
 */
async function readArgs(options: EnqueueCliOptions, deps: CliDeps): Promise<unknown> {
  if (options.args !== undefined && options.argsFile !== undefined) {
    throw new CommandFailed(`jobs enqueue: give --args or --args-file, not both`, 2);
  }
  // `where` names the source in a refusal; `quoted` also quotes an inline value.
  let text: string;
  let where: string;
  let quoted: string;
  if (options.argsFile !== undefined) {
    where = quoted = `--args-file "${echo(options.argsFile)}"`;
    text = await readArgsFile(options.argsFile, where);
  } else if (options.args === "-") {
    where = quoted = "--args - (standard input)";
    text = await deps.readStdin();
  } else if (options.args !== undefined) {
    where = "--args";
    quoted = `--args "${echo(options.args)}"`;
    text = options.args;
  } else return {};
  const parsed = tryParseJson(text);
  if (!parsed.ok) throw new CommandFailed(`jobs enqueue: ${quoted} ${parsed.reason}`, 2);
  // The kernel's limit, checked here so that the refusal names the source.
  usage(() => serializeArgs(parsed.value, where));
  return parsed.value;
}

/** The text of `path`, or the command fails naming it and why it cannot be read. */
async function readArgsFile(path: string, where: string): Promise<string> {
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(path);
  } catch (error) {
    throw new CommandFailed(`jobs enqueue: cannot read ${where}: ${readProblem(error)}`, 2);
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new CommandFailed(`jobs enqueue: ${where} is not UTF-8 text`, 2);
  }
}

/** Why a file could not be read, in a few words. */
function readProblem(error: unknown): string {
  if (error instanceof Deno.errors.NotFound) return "no such file";
  if (error instanceof Deno.errors.PermissionDenied) return "permission denied";
  if (error instanceof Deno.errors.IsADirectory) return "it is a directory";
  if (error instanceof Deno.errors.NotADirectory) return "a part of the path is not a directory";
  // Deno appends `: readfile '<path>'`, which the message names already.
  const message = error instanceof Error ? error.message : String(error);
  return echo(firstLine(message).replace(/: \w+ '[\s\S]*$/, ""), 160);
}

/** Runs `check`; an {@linkcode EnqueueError} it throws fails the command with exit code 2. */
function usage(check: () => unknown): void {
  try {
    check();
  } catch (error) {
    if (error instanceof RunnerArgsError) {
      // Cut the runner's words (they quote the args), never the shape.
      throw new CommandFailed(
        `jobs enqueue: ${error.worker} args: ${echo(error.problem, 160)}; expected ` +
          error.expected,
        2,
      );
    }
    if (error instanceof EnqueueError) {
      // The kernel's message quotes the value it refuses (a queue name): cut it.
      throw new CommandFailed(`jobs enqueue: ${echo(error.message, 400)}`, 2);
    }
    throw error;
  }
}

/** Whether `name` is a worker name the library accepts (its rule, from `defineWorker`). */
function isWorkerName(name: string): boolean {
  try {
    defineWorker({ name, perform: () => {} });
    return true;
  } catch {
    return false;
  }
}

function unknownWorker(worker: string, known: string[]): never {
  const names = [...new Set(known)].sort();
  throw new CommandFailed(
    `jobs enqueue: no daemon of this configuration defines worker "${echo(worker)}"; ` +
      `known: ${names.map((n) => `"${echo(n)}"`).join(", ")} (--force enqueues it anyway, ` +
      `for a worker another process defines)${echo(didYouMean(worker, names))}`,
  );
}

/** The CLI's options as the kernel's enqueue options; bad unique settings exit 2. */
function enqueueOptions(options: EnqueueCliOptions): EnqueueOptions {
  if (options.meta !== undefined && !isObject(options.meta)) {
    throw new CommandFailed(`jobs enqueue: --meta must be a JSON object`, 2);
  }
  const wantsUnique = options.unique || options.uniqueBy !== undefined ||
    options.uniquePeriod !== undefined || options.uniqueStates !== undefined ||
    options.debounce !== undefined;
  if (options.debounceExtend && options.debounce === undefined) {
    throw new CommandFailed(`jobs enqueue: --debounce-extend needs --debounce <duration>`, 2);
  }
  return {
    queue: options.queue,
    priority: options.priority,
    in: options.in,
    at: options.at,
    maxAttempts: options.maxAttempts,
    tags: options.tag,
    meta: options.meta as Record<string, unknown> | undefined,
    tenant: options.tenant,
    unique: wantsUnique ? uniqueOptions(options) : undefined,
  };
}

function uniqueOptions(options: EnqueueCliOptions): UniqueOptions {
  const by = options.uniqueBy;
  let parsedBy: UniqueOptions["by"];
  if (by === undefined || by === "args" || by === "worker") parsedBy = by;
  else if (by.startsWith("keys:") && by.length > 5) {
    parsedBy = { keys: by.slice(5).split(",").map((k) => k.trim()) };
  } else {
    throw new CommandFailed(
      `jobs enqueue: --unique-by "${echo(by)}" must be args, worker or keys:a,b`,
      2,
    );
  }
  const statesGiven = options.uniqueStates;
  if (statesGiven !== undefined && statesGiven !== "incomplete" && statesGiven !== "all") {
    throw new CommandFailed(
      `jobs enqueue: --unique-states "${echo(statesGiven)}" must be incomplete or all`,
      2,
    );
  }
  return {
    by: parsedBy,
    period: options.uniquePeriod,
    states: statesGiven,
    ...(options.debounce !== undefined
      ? { debounce: { window: options.debounce, extend: options.debounceExtend ?? false } }
      : {}),
  };
}

function isObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
