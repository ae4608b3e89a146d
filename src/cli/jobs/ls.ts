/**
 * `jobs ls`: jobs, newest first, one line each (filtered by state, queue,
 * schedule, worker, tag or search), or with `--json` every field of each.
 * It reads through `src/admin/jobs.ts` and opens the store in `read` mode:
 * nothing is created or migrated.
 *
 * @module
 */

import type { Command } from "commander";
import { jobsView } from "../../admin/jobs.ts";
import { redact } from "../../kernel/redact.ts";
import { FINAL_STATES, type Job } from "../../kernel/types.ts";
import { when } from "../../schedule/describe.ts";
import type { JobFilter } from "../../store/store.ts";
import {
  type CliDeps,
  dbPath,
  filterOptions,
  globalOptions,
  jobFilter,
  type JobFilterOptions,
  parseCount,
  quiet,
} from "../common.ts";
import { openStore } from "../store/open.ts";
import { cell, firstLine, safeJson, table, truncate } from "../text.ts";
import { jobJson } from "../../admin/job_json.ts";

/** How many jobs `jobs ls` prints unless `--limit` says otherwise. */
export const LS_DEFAULT_LIMIT = 50;

/** How many characters of a job's last error `jobs ls` prints. */
export const LS_ERROR_CHARS = 80;

const NO_AUDIT = "it only reads: nothing to audit";

/** Registers `ls` on the program. */
export function registerLsCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      filterOptions(
        program.command("ls").description("jobs, newest first, one line each"),
        "only",
      ).option("--limit <n>", "how many jobs at most", parseCount, LS_DEFAULT_LIMIT),
      {
        db: { mode: "read" },
        config: { not: "it lists what the store holds; the file plays no part" },
        json: true,
        audit: { not: NO_AUDIT },
      },
    ).action(async (options: LsOptions & { db?: string; json?: boolean }) => {
      await lsCommand({
        db: dbPath(options.db, deps),
        filter: jobFilter(options, options.limit),
        json: !!options.json,
      }, deps);
    }),
    deps,
    "ls",
  );
}

interface LsOptions extends JobFilterOptions {
  limit: number;
}

/** `jobs ls`: one line per job, newest first. */
export async function lsCommand(
  options: { db: string; filter: JobFilter; json: boolean },
  deps: CliDeps,
): Promise<void> {
  const now = deps.clock.now();
  const { store } = await openStore("ls", options.db, "read", deps);
  try {
    const jobs = await jobsView(store, options.filter);
    if (options.json) {
      deps.out(safeJson(jobs.map(jobJson)));
      return;
    }
    if (jobs.length === 0) {
      deps.out("no jobs match");
      return;
    }
    const header = [
      "ID",
      "STATE",
      "QUEUE",
      "WORKER",
      "TRY",
      "NODE",
      "OCCURRENCE",
      "WHEN",
      "LAST ERROR",
    ];
    for (const line of table([header, ...jobs.map((j) => jobCells(j, now))])) deps.out(line);
  } finally {
    await store.close();
  }
}

function jobCells(job: Job, now: number): string[] {
  const finished = finishedAt(job);
  // A completed job's last error is an earlier attempt's, which the
  // completion made moot: shown beside it, it reads as the job's failure.
  const last = job.state === "completed" ? undefined : job.errors.at(-1)?.error;
  return [
    String(job.id),
    job.state,
    cell(job.queue),
    cell(job.worker),
    `${job.attempt}/${job.maxAttempts}`,
    // The node running an executing job, else the one that ran its last attempt.
    job.attemptedBy === null ? "-" : cell(job.attemptedBy),
    job.occurrence === null ? "-" : cell(job.occurrence),
    finished !== null
      ? `finished ${when(finished, now)}`
      : `scheduled ${when(job.scheduledAt, now)}`,
    last === undefined ? "" : cell(truncate(firstLine(redact(last)), LS_ERROR_CHARS)),
  ];
}

function finishedAt(job: Job): number | null {
  if (!FINAL_STATES.includes(job.state)) return null;
  return job.completedAt ?? job.cancelledAt ?? job.discardedAt;
}
