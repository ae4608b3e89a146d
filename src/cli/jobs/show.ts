/**
 * `jobs show <job>`: one job (by id, or by an occurrence in any spelling of
 * its instant) with every field, its attempts (with their errors and the
 * tail of their output) and its audit trail; with `--json`, stable JSON.
 * It reads through `src/admin/jobs.ts` and opens the store in `read` mode:
 * nothing is created or migrated.
 *
 * @module
 */

import type { Command } from "commander";
import { shortHash } from "../../admin/definitions.ts";
import { type JobDetail, jobDetail, occurrenceMiss, type ZoneOf } from "../../admin/jobs.ts";
import { redact } from "../../kernel/redact.ts";
import type { Attempt, Job } from "../../kernel/types.ts";
import { when } from "../../schedule/describe.ts";
import { describeLocation } from "../../store/open.ts";
import {
  type CliDeps,
  CommandFailed,
  dbPath,
  globalOptions,
  HINT_CUT,
  quiet,
  REF_CUT,
} from "../common.ts";
import { fileZones } from "../config.ts";
import { openStore } from "../store/open.ts";
import { block, cell, echo, safeJson } from "../text.ts";
import { formatDuration } from "../../text/durations.ts";
import { nextAttemptWhen } from "../../text/next_attempt.ts";
import { attemptJson, auditJson, jobJson } from "../../admin/job_json.ts";

/** How many trailing lines of an attempt's output `jobs show` prints. */
export const OUTPUT_TAIL_LINES = 20;

const NO_AUDIT = "it only reads: nothing to audit";

/** Registers `show` on the program. */
export function registerShowCommand(program: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      program.command("show")
        .description("one job with every field, its attempts and its audit trail")
        .argument(
          "<job>",
          "a job id or an occurrence identity such as nightly@2026-03-08T07:00:00.000Z",
        ),
      {
        db: { mode: "read" },
        config: {
          for: "whose zones read an occurrence typed as a local time without offset " +
            "(default ./schedules.yaml when present)",
        },
        json: true,
        audit: { not: NO_AUDIT },
      },
    ).action(async (ref: string, options: { db?: string; json?: boolean; config?: string }) => {
      await showCommand({
        db: dbPath(options.db, deps),
        ref,
        json: !!options.json,
        zoneOf: await fileZones(options.config, deps),
      }, deps);
    }),
    deps,
    "show",
  );
}

/** `jobs show <id | occurrence>`: exit 1 when there is no such job. */
export async function showCommand(
  options: { db: string; ref: string; json: boolean; zoneOf?: ZoneOf },
  deps: CliDeps,
): Promise<void> {
  const now = deps.clock.now();
  const { store } = await openStore("show", options.db, "read", deps);
  try {
    const detail = await jobDetail(store, options.ref, options.zoneOf);
    if (!detail) {
      const kind = /^\d+$/.test(options.ref) ? "job" : "job with occurrence";
      const where = echo(describeLocation(options.db));
      const miss = await occurrenceMiss(store, options.ref, options.zoneOf);
      throw new CommandFailed(
        `jobs show: no ${kind} "${echo(options.ref, miss === "" ? undefined : REF_CUT)}" in ` +
          `the store "${where}"${echo(miss, HINT_CUT)}`,
      );
    }
    if (options.json) {
      deps.out(safeJson({
        job: jobJson(detail.job),
        attempts: detail.attempts.map(attemptJson),
        audit: detail.audit.map(auditJson),
      }));
      return;
    }
    for (const line of showText(detail, now)) deps.out(line);
  } finally {
    await store.close();
  }
}

function showText({ job, attempts, audit }: JobDetail, now: number): string[] {
  const at = (ms: number | null) => when(ms, now);
  const text = (value: string | null) => value === null ? "-" : cell(value);
  const fields: [string, string][] = [
    ["state", job.state],
    ["queue", cell(job.queue)],
    ["worker", cell(job.worker)],
    ["occurrence", text(job.occurrence)],
    ["schedule", text(job.scheduleId)],
    ["scheduled for", at(job.scheduledFor)],
    ["attempt", `${job.attempt} of ${job.maxAttempts}`],
    // A retryable job's scheduled_at is when it tries again: say so, and how far off.
    ...(job.state === "retryable"
      ? [["next attempt", nextAttemptWhen(job.scheduledAt, now)] as [string, string]]
      : []),
    ["fence", String(job.fence)],
    ["priority", String(job.priority)],
    ["attempted by", text(job.attemptedBy)],
    ["lease expires", at(job.leaseExpiresAt)],
    ["inserted", at(job.insertedAt)],
    ["scheduled at", at(job.scheduledAt)],
    ["attempted at", at(job.attemptedAt)],
    ["completed at", at(job.completedAt)],
    ["cancelled at", at(job.cancelledAt)],
    ["discarded at", at(job.discardedAt)],
    ["unique key", text(job.uniqueKey)],
    ["unique states", text(job.uniqueStates)],
    ["tenant", text(job.tenant)],
    ["tags", job.tags.length > 0 ? job.tags.map(cell).join(", ") : "-"],
    ["args", cell(JSON.stringify(job.args) ?? "null")],
    ["meta", cell(JSON.stringify(job.meta))],
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  const lines = [`job ${job.id}`, ...fields.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)];

  const { byAttempt, loose } = errorsByAttempt(job, attempts);
  lines.push("", `attempts (${attempts.length}):`);
  if (attempts.length === 0) lines.push("  none");
  for (const a of attempts) lines.push(...attemptLines(a, byAttempt.get(a) ?? [], now));

  // Errors whose attempt has no row (pruned, or written by an operator's
  // action after the last attempt): shown once, here.
  if (loose.length > 0) {
    lines.push("", `other errors (${loose.length}, oldest first):`);
    for (const e of loose) {
      lines.push(`  attempt ${e.attempt} at ${at(e.at)}:`, ...block(e.error, "    "));
    }
  }

  lines.push("", `audit (${audit.length}):`);
  if (audit.length === 0) lines.push("  none");
  for (const row of audit) {
    const details = Object.keys(row.details).length > 0 ? ` ${JSON.stringify(row.details)}` : "";
    lines.push(
      `  ${at(row.at)}  ${cell(row.actor)}  ${cell(row.action)}${
        row.reason ? `: ${cell(row.reason)}` : ""
      }${cell(details)}`,
    );
  }
  return lines;
}

/**
 * Each distinct error once. A node or the lifeline writes a failure twice in
 * one transaction, to the job's errors and to its attempt row, with the same
 * attempt number and instant: such an error belongs to that attempt and is
 * shown under it. The attempt number alone does not say it (a snooze reuses
 * the number; an operator's cancel of a waiting job records the previous
 * one), so an error without an attempt row of its number and instant
 * (pruned, or an operator's) is shown once among the other errors.
 */
function errorsByAttempt(
  job: Job,
  attempts: Attempt[],
): { byAttempt: Map<Attempt, string[]>; loose: Job["errors"] } {
  const byAttempt = new Map<Attempt, string[]>();
  for (const a of attempts) byAttempt.set(a, a.error === null ? [] : [redact(a.error)]);
  const loose: Job["errors"] = [];
  for (const e of job.errors) {
    const error = redact(e.error);
    const owner = attempts.find((a) => a.attempt === e.attempt && a.finishedAt === e.at);
    if (!owner) {
      if (!loose.some((l) => l.attempt === e.attempt && l.error === error)) {
        loose.push({ ...e, error });
      }
      continue;
    }
    const shown = byAttempt.get(owner)!;
    if (!shown.includes(error)) shown.push(error);
  }
  return { byAttempt, loose };
}

function attemptLines(a: Attempt, errors: string[], now: number): string[] {
  const took = a.finishedAt !== null && a.finishedAt > a.startedAt
    ? ` (took ${formatDuration(a.finishedAt - a.startedAt)})`
    : "";
  const lines = [
    `  #${a.attempt} ${a.kind} on ${a.node === null ? "-" : cell(a.node)}, fence ${a.fence}: ${
      a.outcome ?? "running"
    }`,
    `    started ${when(a.startedAt, now)}, finished ${when(a.finishedAt, now)}${took}`,
  ];
  if (a.definition !== null) lines.push(`    definition ${shortHash(a.definition)}`);
  if (a.actor !== null || a.reason !== null) {
    lines.push(
      `    by ${a.actor === null ? "-" : cell(a.actor)}${
        a.reason === null ? "" : `: ${cell(a.reason)}`
      }`,
    );
  }
  for (const error of errors) lines.push("    error:", ...block(error, "      "));
  if (a.output !== null && a.output !== "") {
    const all = a.output.replace(/\n$/, "").split("\n");
    const tail = all.slice(-OUTPUT_TAIL_LINES);
    const cut = all.length - tail.length;
    lines.push(
      `    output${cut > 0 ? ` (last ${tail.length} of ${all.length} lines)` : ""}:`,
      ...tail.map((l) => `      | ${cell(redact(l))}`),
    );
  }
  return lines;
}
