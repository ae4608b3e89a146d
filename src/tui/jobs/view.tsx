/**
 * The jobs list (one page of a filtered listing, a line per job) and the
 * detail of one job: args (redacted; a command job's as its command line),
 * errors, attempts with their output excerpt, and the audit trail.
 *
 * @module
 */

import type { ReactNode } from "react";
import type { JobDetail } from "../../admin/jobs.ts";
import { redact } from "../../kernel/redact.ts";
import { FINAL_STATES, type Job } from "../../kernel/types.ts";
import { commandRunSchema, commandText } from "../../runners/command.ts";
import { COMMAND_WORKER, type CommandRun } from "../../kernel/runs.ts";
import { when } from "../../schedule/describe.ts";
import { ago } from "../../text/durations.ts";
import { nextAttemptText } from "../../text/next_attempt.ts";
import { shellQuote } from "../../text/shell.ts";
import { Lines, type Seg, seg } from "../line.tsx";
import { filterText, type JobsFilter, type JobsTotal, newestText, totalText } from "../search.ts";
import { clean, firstLine, fit, STATE_COLOR } from "../text.ts";

/** Props of {@linkcode JobsList}. */
export interface JobsListProps {
  jobs: Job[] | null;
  filter: JobsFilter;
  desc: boolean;
  /** 1-based page number. */
  page: number;
  /** How many jobs a page holds. */
  pageSize: number;
  /** How many jobs match the filter (every page), or null until counted. */
  total: JobsTotal | null;
  cursor: number;
  width: number;
  height: number;
  now: number;
}

/** The jobs list screen. */
export function JobsList(props: JobsListProps): ReactNode {
  return <Lines lines={jobsLines(props)} width={props.width} height={props.height} />;
}

/** From this many columns the schedule column shows the whole occurrence identity. */
export const OCCURRENCE_COLUMNS = 140;

/** Column widths of the jobs list for a terminal `width` wide. */
function columns(width: number) {
  if (width >= OCCURRENCE_COLUMNS) {
    return { id: 8, state: 10, queue: 14, worker: 20, schedule: 42, tries: 6, when: 10 };
  }
  if (width >= 120) {
    return { id: 8, state: 10, queue: 14, worker: 20, schedule: 20, tries: 6, when: 10 };
  }
  if (width >= 100) {
    return { id: 8, state: 10, queue: 10, worker: 14, schedule: 16, tries: 6, when: 10 };
  }
  return { id: 6, state: 10, queue: 8, worker: 11, schedule: 12, tries: 6, when: 9 };
}

/**
 * `page 2 of 8 · 391 jobs match`, `page 2 of 20+ · 1000+ jobs match`, or
 * `page 2` until the matches are counted.
 */
export function pageText(page: number, pageSize: number, total: JobsTotal | null): string {
  if (total === null) return `page ${page}`;
  const pages = Math.max(page, Math.ceil(total.count / Math.max(1, pageSize)), 1);
  return `page ${page} of ${pages}${total.atLeast ? "+" : ""} · ${totalText(total)}`;
}

/** The line of an empty page: past the last, or no match (among the newest jobs, for a search). */
function emptyText(page: number, total: JobsTotal | null): string {
  const among = newestText(total);
  if (page > 1) return `  no more jobs${among} (b: previous page)`;
  return among === ""
    ? "  no jobs match"
    : `  no jobs match${among} (jobs ls --search reads them all)`;
}

/** What the schedule column shows: the occurrence (its schedule when not `wide`), or `-`. */
function scheduleCell(job: Job, wide: boolean): string {
  if (wide && job.occurrence !== null) return clean(job.occurrence);
  return clean(job.scheduleId ?? job.occurrence?.split("@", 1)[0] ?? "-");
}

/**
 * The run of a job of the built-in command runner, or null for any other
 * job (and for args that runner would refuse, shown as JSON like any other).
 */
function commandRun(job: Job): CommandRun | null {
  if (job.worker !== COMMAND_WORKER) return null;
  try {
    return commandRunSchema.parse(job.args);
  } catch {
    return null;
  }
}

/**
 * What the list shows of a job's args: a command job's command line (with
 * its folder, if it names one), else the args as JSON.
 */
function argsCell(job: Job): string {
  const run = commandRun(job);
  if (run === null) return clean(JSON.stringify(job.args) ?? "null");
  return clean(commandText(run) + (run.cwd === undefined ? "" : `  (in ${shellQuote(run.cwd)})`));
}

/** The jobs list as lines. */
export function jobsLines(props: JobsListProps): Seg[][] {
  const { jobs, width, now } = props;
  const c = columns(width);
  const wide = width >= OCCURRENCE_COLUMNS;
  const lines: Seg[][] = [[
    seg("filter ", { bold: true }),
    seg(filterText(props.filter), { color: "cyan" }),
    seg(
      ` · ${props.desc ? "newest" : "oldest"} first · ${
        pageText(props.page, props.pageSize, props.total)
      }`,
    ),
  ], [
    seg(
      `  ${fit("ID", c.id)}${fit("STATE", c.state)}${fit("QUEUE", c.queue)} ${
        fit("WORKER", c.worker)
      } ${fit(wide ? "OCCURRENCE" : "SCHEDULE", c.schedule)} ${fit("TRY", c.tries)}${
        fit("WHEN", c.when)
      } ${width >= 100 ? "LAST ERROR / ARGS" : "ERROR / ARGS"}`,
      { bold: true },
    ),
  ]];
  if (!jobs) return [...lines, [seg("  loading…", { dim: true })]];
  if (jobs.length === 0) {
    return [
      ...lines,
      [seg(emptyText(props.page, props.total), { dim: true })],
    ];
  }
  jobs.forEach((job, i) => {
    const selected = i === props.cursor;
    const finished = FINAL_STATES.includes(job.state)
      ? job.completedAt ?? job.cancelledAt ?? job.discardedAt
      : null;
    const last = job.errors.at(-1)?.error;
    lines.push([
      seg(selected ? "> " : "  ", { bold: true }),
      seg(fit(String(job.id), c.id), { inverse: selected }),
      seg(fit(job.state, c.state), { color: STATE_COLOR[job.state] }),
      seg(fit(clean(job.queue), c.queue)),
      seg(" "),
      seg(fit(clean(job.worker), c.worker)),
      seg(" "),
      seg(fit(scheduleCell(job, wide), c.schedule), { dim: job.scheduleId === null }),
      seg(" "),
      seg(fit(`${job.attempt}/${job.maxAttempts}`, c.tries)),
      seg(fit(ago(finished ?? job.scheduledAt, now, { parts: 1 }), c.when)),
      seg(" "),
      last !== undefined
        ? seg(firstLine(redact(last)), { color: "red" })
        : seg(argsCell(job), { dim: true }),
    ]);
  });
  return lines;
}

/** Props of {@linkcode JobDetailPane}. */
export interface JobDetailProps {
  detail: JobDetail | null;
  /** The id asked for, shown while loading or when it is gone. */
  id: number;
  /** The first line shown. */
  scroll: number;
  width: number;
  height: number;
  now: number;
}

/** One job's detail, scrolled to `scroll`. */
export function JobDetailPane(props: JobDetailProps): ReactNode {
  const all = detailLines(props);
  const scroll = Math.max(0, Math.min(props.scroll, all.length - props.height));
  return <Lines lines={all.slice(scroll)} width={props.width} height={props.height} />;
}

/** How many lines of an attempt's output the detail shows (the last ones). */
export const OUTPUT_LINES = 5;
/** How many lines the args may take in the detail. */
export const ARGS_LINES = 6;

/** The detail of one job as lines: every piece of stored text cleaned. */
export function detailLines(props: JobDetailProps): Seg[][] {
  const { detail, now, width } = props;
  if (!detail) return [[seg(`job ${props.id}: loading, or no longer in the store`, { dim: true })]];
  const { job, attempts, audit } = detail;
  const lines: Seg[][] = [[
    seg(`job ${job.id} `, { bold: true }),
    seg(job.state, { color: STATE_COLOR[job.state], bold: true }),
    seg(
      `  queue ${clean(job.queue)}  worker ${
        clean(job.worker)
      }  attempt ${job.attempt}/${job.maxAttempts}  fence ${job.fence}  priority ${job.priority}`,
    ),
  ]];
  if (job.occurrence !== null || job.scheduleId !== null) {
    lines.push([
      seg(`occurrence ${clean(job.occurrence ?? "-")}  schedule ${clean(job.scheduleId ?? "-")}`),
    ]);
  }
  lines.push(
    [seg(`inserted   ${when(job.insertedAt, now)}`)],
    [seg(`scheduled  ${when(job.scheduledAt, now)}`)],
  );
  if (job.state === "retryable") {
    lines.push([seg(nextAttemptText(job.scheduledAt, now), { color: STATE_COLOR.retryable })]);
  }
  if (job.attemptedAt !== null) {
    lines.push([
      seg(`attempted  ${when(job.attemptedAt, now)} by ${clean(job.attemptedBy ?? "-")}`),
    ]);
  }
  const finished = job.completedAt ?? job.cancelledAt ?? job.discardedAt;
  if (finished !== null) lines.push([seg(`finished   ${when(finished, now)}`)]);
  if (job.tags.length > 0) lines.push([seg(`tags       ${job.tags.map(clean).join(", ")}`)]);
  lines.push(...argsLines(job, width));
  if (Object.keys(job.meta).length > 0) {
    lines.push(...wrapped("meta       ", clean(JSON.stringify(job.meta)), width).slice(0, 2));
  }

  // Every stored error (the store keeps the last 20): the count is what is listed.
  lines.push([], [seg(`errors (${job.errors.length})`, { bold: true })]);
  for (const e of job.errors) {
    lines.push([
      seg(`  #${e.attempt} ${ago(e.at, now)}: `),
      seg(firstLine(redact(e.error)), { color: "red" }),
    ]);
  }

  lines.push([], [seg(`attempts (${attempts.length})`, { bold: true })]);
  for (const a of attempts) {
    const took = a.finishedAt !== null
      ? `, took ${Math.max(0, a.finishedAt - a.startedAt)} ms`
      : "";
    lines.push([
      seg(`  #${a.attempt} ${a.kind} on ${clean(a.node ?? "-")}, fence ${a.fence}: `),
      seg(a.outcome ?? "running", {
        color: a.outcome === "completed" ? "green" : a.outcome === null ? "yellow" : "red",
      }),
      seg(`  started ${ago(a.startedAt, now)}${took}`),
    ]);
    if (a.actor !== null || a.reason !== null) {
      lines.push([seg(`     by ${clean(a.actor ?? "-")}: ${clean(a.reason ?? "")}`)]);
    }
    if (a.error !== null) {
      lines.push([seg("     error: "), seg(firstLine(redact(a.error)), { color: "red" })]);
    }
    if (a.output) {
      const all = a.output.replace(/\n$/, "").split("\n");
      const tail = all.slice(-OUTPUT_LINES);
      if (all.length > tail.length) {
        lines.push([seg(`     output (last ${tail.length} of ${all.length} lines):`)]);
      }
      for (const l of tail) lines.push([seg(`     | ${clean(redact(l))}`, { dim: true })]);
    }
  }

  lines.push([], [seg(`audit (${audit.length})`, { bold: true })]);
  for (const row of audit) {
    lines.push([
      seg(`  ${ago(row.at, now)}  ${clean(row.actor)}  `),
      seg(clean(row.action), { color: "cyan" }),
      seg(row.reason ? `: ${clean(row.reason)}` : ""),
    ]);
  }
  return lines;
}

/**
 * A job's args in the detail: for a command job the command line, its
 * folder and its environment (values as stored, redacted), each quoted for
 * a shell; for any other job the args as JSON.
 */
function argsLines(job: Job, width: number): Seg[][] {
  const run = commandRun(job);
  if (run === null) return wrapped("args       ", clean(JSON.stringify(job.args) ?? "null"), width);
  const env = Object.entries(run.env ?? {}).map(([k, v]) => `${shellQuote(k)}=${shellQuote(v)}`);
  return [
    ...wrapped("command    ", clean(commandText(run)), width),
    ...(run.cwd === undefined ? [] : wrapped("cwd        ", clean(shellQuote(run.cwd)), width)),
    ...(env.length === 0 ? [] : wrapped("env        ", clean(env.join(" ")), width).slice(0, 2)),
  ];
}

/** `label` and `text` over as many lines of `width` as it takes, at most {@linkcode ARGS_LINES}. */
function wrapped(label: string, text: string, width: number): Seg[][] {
  const room = Math.max(10, width - label.length);
  const chars = Array.from(text);
  const out: Seg[][] = [];
  for (let i = 0; i < chars.length && out.length < ARGS_LINES; i += room) {
    const chunk = chars.slice(i, i + room).join("");
    const last = out.length === ARGS_LINES - 1 && i + room < chars.length;
    out.push([
      seg(out.length === 0 ? label : " ".repeat(label.length)),
      seg(last ? `${Array.from(chunk).slice(0, -1).join("")}…` : chunk),
    ]);
  }
  return out.length > 0 ? out : [[seg(label)]];
}
