/**
 * The pipeline commands: `jobs ingest <pipeline> [--wait]` (a run now, of a
 * pipeline the schedules file declares, audited; with `--wait` it runs to
 * the end in this process, or, when a live daemon serves the pipeline's
 * queue, waits for the daemon's run), `jobs pipelines` (each pipeline's
 * freshness, last runs and drops per reason over the last hour and day),
 * `jobs drops <pipeline> [--reason] [--run]` (the dropped records, newest
 * first) and `jobs drops replay <id> --reason` (one record again, through
 * the file's definition of now, audited). Each is a thin call into
 * `src/admin/pipelines.ts`, which the TUI shares.
 *
 * @module
 */

import type { Command } from "commander";
import {
  dropJson,
  PipelineActionRefused,
  pipelinesView,
  type PipelineView,
  pipelineViewJson,
  replayDrop,
  startIngestRun,
  totalDropped,
} from "../admin/pipelines.ts";
import type { CompiledPipeline, IngestDrop, IngestRun } from "../ingest/types.ts";
import type { Job } from "../kernel/types.ts";
import { ingestWorker } from "../runners/ingest.ts";
import { loadWorkersModule } from "../runners/workers_module.ts";
import { when } from "../schedule/describe.ts";
import type { ScheduleConfig } from "../config/types.ts";
import type { Store } from "../store/store.ts";
import { inOneUnit } from "../text/durations.ts";
import { prunerSettings } from "../runtime/pruner.ts";
import {
  type CliDeps,
  CommandFailed,
  configPath,
  dbPath,
  declaredIn,
  globalOptions,
  parseCount,
  positiveId,
  quiet,
  who,
} from "./common.ts";
import { configIfAny, requireConfig } from "./config.ts";
import { type Listing, listingOptions, printListing, tableLines } from "./listing.ts";
import { withStore } from "./store/open.ts";
import { daemonsServing, type RunHere, untilEnded } from "./run_here.ts";
import { cell, echo, safeJson, table } from "./text.ts";

/** How many drops `jobs drops` prints unless `--limit` says otherwise. */
export const DROPS_DEFAULT_LIMIT = 50;

/** How often `jobs ingest --wait` looks at a daemon's run. */

/** Registers `ingest`, `pipelines` and `drops [replay]` on the program. */
export function registerPipelineCommands(program: Command, deps: CliDeps): void {
  ingestCommand(program, deps);
  pipelinesCommand(program, deps);
  dropsCommand(program, deps);
}

// ------------------------------------------------------------------- ingest

interface IngestOptions {
  wait?: boolean;
  db?: string;
  config?: string;
  json?: boolean;
  actor?: string;
  reason?: string;
}

function ingestCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("ingest")
        .description(
          "run a pipeline the schedules file declares, now (audited); --wait runs it to the end",
        )
        .argument("<pipeline>", "the pipeline's id")
        .option(
          "--wait",
          "run it to the end in this process (or wait for the run of a live daemon that serves " +
            "its queue) and print its counts; exit 1 when it did not complete",
        ),
      {
        db: { mode: "write" },
        config: { for: "which declares the pipeline" },
        json: true,
        audit: { reason: "optional" },
      },
    ).action(async (id: string, options: IngestOptions) => {
      const file = configPath(options.config, deps);
      const { config } = await requireConfig("ingest", file, deps);
      const pipeline = declaredIn("ingest", "pipeline", config.pipelines, file, id);
      const db = dbPath(options.db, deps);
      await withStore("ingest", db, "write", deps, async (store) => {
        const actor = who(options, deps);
        const job = await startIngestRun(store, pipeline, actor);
        if (!options.wait) {
          const serving = await daemonsServing(store, pipeline.queue, actor.now);
          if (options.json) {
            deps.out(JSON.stringify({ job, pipeline: pipeline.id, queue: pipeline.queue }));
          } else deps.out(String(job));
          deps.err(
            `jobs ingest: enqueued job ${job} on queue ${cell(pipeline.queue)}: ` +
              (serving.length > 0
                ? `${serving.map(cell).join(", ")} will run it`
                : `no live daemon serves the queue; --wait runs it in this process`),
          );
          return;
        }
        const ran = await untilEnded(store, job, ingestHere(pipeline, config, deps), deps);
        const run = await store.ingestRunByJob({ jobId: job });
        report(ran.job, run, pipeline, ran.by, options, deps);
      });
    }),
    deps,
    "ingest",
  );
}

/** Runs the pipeline's queue here when no daemon serves it (see run_here.ts). */
function ingestHere(pipeline: CompiledPipeline, config: ScheduleConfig, deps: CliDeps): RunHere {
  const { batch, retention } = prunerSettings(config.pruner);
  return {
    command: "ingest",
    queue: pipeline.queue,
    // The ingest runner with the workers of the file's `workers:` module
    // (the TypeScript steps and sinks), the pruner as the file sets it.
    workers: async (logger, jobs) => {
      const workers = config.workersModule === undefined
        ? []
        : await loadWorkersModule(config.workersModule).catch((error) => {
          throw new CommandFailed(`jobs ingest: ${(error as Error).message}`);
        });
      return [
        ingestWorker({
          store: () => jobs().store,
          clock: deps.clock,
          env: deps.env,
          logger,
          workers: () => jobs().registry,
        }),
        ...workers,
      ];
    },
    pruner: { batch, retention },
    resumes: "its run resumes where it stood when a daemon (or jobs ingest --wait) runs the queue",
  };
}

/** Prints the run's counts; fails when the run did not complete. */
function report(
  job: Job,
  run: IngestRun | null,
  pipeline: CompiledPipeline,
  daemons: string[] | null,
  options: IngestOptions,
  deps: CliDeps,
): void {
  const counts = run?.counts ?? null;
  const state = run?.state ?? job.state;
  const error = run?.error ?? job.errors.at(-1)?.error ?? null;
  if (options.json) {
    deps.out(safeJson({
      run: run?.id ?? null,
      job: job.id,
      pipeline: pipeline.id,
      state,
      received: counts?.received ?? 0,
      kept: counts?.kept ?? 0,
      sunk: counts?.sunk ?? 0,
      dropped: counts?.dropped ?? {},
      failed: counts?.failed ?? 0,
      pending: counts?.pending ?? 0,
      error,
      ranBy: daemons ?? "here",
    }));
  } else if (counts) {
    deps.out(
      `pipeline ${cell(pipeline.id)} run ${run!.id} ${state}: received ${counts.received}, ` +
        `sunk ${counts.sunk}, dropped ${droppedText(counts.dropped)}, failed ${counts.failed}, ` +
        `pending ${counts.pending}`,
    );
  }
  if (state !== "completed") {
    throw new CommandFailed(
      `jobs ingest: pipeline "${echo(pipeline.id)}" ` +
        (run ? `run ${run.id} ended ${state}` : `job ${job.id} ended ${job.state} before a run`) +
        (error ? `: ${echo(error, 400)}` : ""),
    );
  }
}

/** `duplicate 3, below-threshold 1` (or `none`). */
function droppedText(dropped: Record<string, number>): string {
  const parts = Object.entries(dropped).filter(([, n]) => n > 0).map(([r, n]) => `${cell(r)} ${n}`);
  return parts.length > 0 ? parts.join(", ") : "none";
}

// ---------------------------------------------------------------- pipelines

function pipelinesCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("pipelines")
        .description(
          "each pipeline's freshness, last runs and drops per reason over the last hour and day",
        )
        .option("--runs <n>", "how many of each pipeline's last runs", parseCount, 5),
      {
        db: { mode: "read" },
        config: { for: "for the declared pipelines and their freshness (when there is one)" },
        json: true,
        audit: { not: "it only reads: nothing to audit" },
      },
    ).action(async (options: { db?: string; config?: string; json?: boolean; runs: number }) => {
      const loaded = await configIfAny("pipelines", options.config, deps, { lenient: true });
      const pipelines = loaded.config?.pipelines ?? [];
      const list = (store: Store, now: number) =>
        pipelinesView({ store, pipelines, now, recent: options.runs });
      await printListing("pipelines", options, deps, list, PIPELINES);
    }),
    deps,
    "pipelines",
  );
}

/** How `jobs pipelines` prints its pipelines. */
const PIPELINES: Listing<PipelineView> = {
  json: pipelineViewJson,
  none: "no pipelines: none declared and none with runs in the store",
  lines: pipelinesText,
};

/** `fresh (last complete run 3m ago, within 15m)`, `STALE (...)`, `advisory: erp is right`. */
export function freshnessText(view: PipelineView, now: number): string {
  const f = view.freshness;
  if (!f) return "no freshness declared";
  if (f.mode === "advisory") return `advisory: ${cell(f.authority ?? "")} is right`;
  const last = f.lastCompletedAt === null
    ? "no complete run yet"
    : `last complete run ${when(f.lastCompletedAt, now)}`;
  return `${f.stale ? "STALE" : "fresh"} (${last}; promised within ${inOneUnit(f.withinMs ?? 0)})`;
}

function pipelinesText(views: readonly PipelineView[], now: number): string[] {
  const lines: string[] = [];
  for (const view of views) {
    if (lines.length > 0) lines.push("");
    lines.push(
      `pipeline ${cell(view.id)}${view.declared ? "" : " (not in the schedules file)"}: ` +
        `${freshnessText(view, now)}; ${view.runs} run${view.runs === 1 ? "" : "s"}`,
    );
    lines.push(
      `  dropped last hour: ${droppedText(view.droppedLastHour)} ` +
        `(${totalDropped(view.droppedLastHour)}); last day: ${droppedText(view.droppedLastDay)} ` +
        `(${totalDropped(view.droppedLastDay)})`,
    );
    if (view.recent.length === 0) continue;
    const header = ["RUN", "STATE", "STARTED", "RECEIVED", "SUNK", "DROPPED", "FAILED", "ERROR"];
    const rows = view.recent.map((r) => [
      String(r.id),
      r.state,
      when(r.startedAt, now),
      String(r.counts.received),
      String(r.counts.sunk),
      droppedText(r.counts.dropped),
      String(r.counts.failed),
      r.error === null ? "" : cell(r.error),
    ]);
    lines.push(...table([header, ...rows]).map((l) => `  ${l}`));
  }
  return lines;
}

// -------------------------------------------------------------------- drops

interface DropsOptions {
  reason?: string;
  run?: number;
  limit: number;
  db?: string;
  json?: boolean;
}

interface ReplayOptions {
  again?: boolean;
  db?: string;
  config?: string;
  json?: boolean;
  actor?: string;
  reason: string;
}

function dropsCommand(program: Command, deps: CliDeps): void {
  const group = quiet(
    listingOptions(
      program.command("drops")
        .description(
          "a pipeline's dropped records, newest first (jobs drops replay <id> replays one)",
        )
        .argument("<pipeline>", "the pipeline's id")
        .option("--reason <reason>", "only drops with this reason")
        .option("--run <id>", "only drops of this run", positiveId("run id"))
        .option("--limit <n>", "how many drops at most", parseCount, DROPS_DEFAULT_LIMIT)
        // `--reason` after `replay` is the replay's (the audit's why), not the filter.
        .enablePositionalOptions(),
      { reasonFilters: true },
    ).action((pipeline: string, options: DropsOptions) => {
      const filter = {
        pipeline,
        ...(options.reason === undefined ? {} : { reason: options.reason }),
        ...(options.run === undefined ? {} : { runId: options.run }),
        limit: options.limit,
      };
      const list = (store: Store) => store.ingestDropsList(filter);
      return printListing("drops", options, deps, list, dropsListing(pipeline));
    }),
    deps,
    "drops",
  );
  quiet(
    globalOptions(
      group.command("replay")
        .description(
          "run one dropped record again, through the schedules file's definition of now (audited)",
        )
        .argument("<id>", "the drop's id (jobs drops <pipeline> lists them)", positiveId("drop id"))
        .option("--again", "replay a drop that was replayed before"),
      {
        db: { mode: "write" },
        config: { for: "whose definition of the pipeline the record runs through" },
        json: true,
        audit: { reason: "required" },
      },
    ).action(async (id: number, options: ReplayOptions) => {
      const file = configPath(options.config, deps);
      const { config } = await requireConfig("drops replay", file, deps);
      await withStore("drops replay", dbPath(options.db, deps), "write", deps, async (store) => {
        const actor = who(options, deps);
        const replayed = await replayDrop(store, {
          id,
          pipeline: (p) => config.pipelines.find((c) => c.id === p) ?? null,
          who: { ...actor, reason: options.reason },
          again: options.again,
        }).catch((error) => {
          if (error instanceof PipelineActionRefused) {
            throw new CommandFailed(`jobs drops replay: ${echo(error.message, 400)}`);
          }
          throw error;
        });
        if (options.json) {
          deps.out(
            JSON.stringify({ drop: id, job: replayed.job, pipeline: replayed.drop.pipeline }),
          );
          return;
        }
        deps.out(String(replayed.job));
        deps.err(
          `jobs drops replay: drop ${id} (${cell(replayed.drop.reason)}, key ` +
            `${cell(replayed.drop.recordKey ?? "-")}) replays as job ${replayed.job} of pipeline ` +
            `${cell(replayed.drop.pipeline)}`,
        );
      });
    }),
    deps,
    "drops replay",
  );
}

/** How `jobs drops <pipeline>` prints the pipeline's drops. */
function dropsListing(pipeline: string): Listing<IngestDrop> {
  const header = ["ID", "RUN", "KEY", "REASON", "STEP", "AT", "REPLAYED", "EXCERPT"];
  const none = `no drops of pipeline ${cell(pipeline)} match`;
  return { json: dropJson, none, lines: tableLines(header, dropCells) };
}

function dropCells(d: IngestDrop, now: number): string[] {
  return [
    String(d.id),
    String(d.runId),
    d.recordKey === null ? "-" : cell(d.recordKey),
    cell(d.reason),
    cell(d.step),
    when(d.at, now),
    d.replayedAt === null ? (d.replayable ? "no" : "not replayable") : `job ${d.replayedJob}`,
    cell(d.excerpt),
  ];
}
