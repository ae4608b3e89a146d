/**
 * The jobs tab's keys: the list (move, page, search, the filter's picker,
 * order, retry, cancel, discard, replay, bulk) and an open job's detail
 * (scroll, back, and the same actions); what Enter in the search and replay
 * prompts does, and what a job action changed, in a sentence. Other tabs
 * open the jobs list through {@linkcode showJobs}.
 *
 * @module
 */

import { type JobAction, planJobAction } from "../../admin/jobs.ts";
import { definitionText } from "../../admin/definitions.ts";
import { reasonPlaceholder } from "../../admin/audit.ts";
import { type Job, JOB_STATES } from "../../kernel/types.ts";
import { commandLine, shellQuote } from "../../text/shell.ts";
import type { ActRequest, ActResults } from "../actions.ts";
import { capital, confirm, failed, info, prompt, refused } from "../ask.ts";
import type { Key } from "../keys.ts";
import {
  exactTotal,
  type JobsFilter,
  parseSearch,
  searchText,
  statesOf,
  unfiltered,
} from "../search.ts";
import { type Seg, seg } from "../seg.ts";
import {
  BULK_LIMIT,
  clamp,
  contentHeight,
  type Context,
  type DashboardState,
  pageSize,
  type PickerDialog,
  pickerRows,
  type PromptPurpose,
  selectedJob,
  shownJob,
} from "../state.ts";
import { clean, fit, plural, STATE_COLOR } from "../text.ts";

/** Keys of an open job: scroll, back, retry, cancel, discard, replay. */
export function detailKey(
  state: DashboardState,
  key: Key,
  down: boolean,
  up: boolean,
): DashboardState {
  const detail = state.detail!;
  const page = contentHeight(state) - 1;
  const scroll = (to: number) => ({ ...state, detail: { ...detail, scroll: Math.max(0, to) } });
  if (down) return scroll(detail.scroll + 1);
  if (up) return scroll(detail.scroll - 1);
  if (key.pageDown || key.input === " ") return scroll(detail.scroll + page);
  if (key.pageUp) return scroll(detail.scroll - page);
  if (key.escape || key.backspace || key.leftArrow) return { ...state, detail: null };
  if (key.input === "r") return jobAction(state, "retry", shownJob(state));
  if (key.input === "c") return jobAction(state, "cancel", shownJob(state));
  if (key.input === "d") return jobAction(state, "discard", shownJob(state));
  if (key.input === "p") return replay(state, shownJob(state));
  return state;
}

/** Keys of the jobs list: move, page, open, search, filter, order, act, bulk. */
export function jobsKey(
  state: DashboardState,
  key: Key,
  down: boolean,
  up: boolean,
  ctx: Context,
): DashboardState {
  const count = state.jobs?.length ?? 0;
  const job = selectedJob(state);
  if (down) {
    return state.jobCursor >= count - 1
      ? nextPage(state) ?? state
      : { ...state, jobCursor: clamp(state.jobCursor + 1, count) };
  }
  if (up) {
    if (state.jobCursor > 0) return { ...state, jobCursor: clamp(state.jobCursor - 1, count) };
    const previous = previousPage(state);
    return previous ? { ...previous, jobCursor: pageSize(state) - 1 } : state;
  }
  if (key.input === "n" || key.pageDown) return nextPage(state) ?? state;
  if (key.input === "b" || key.pageUp) return previousPage(state) ?? state;
  if (key.input === "g" || key.home) {
    return {
      ...state,
      pages: [null],
      jobCursor: 0,
      jobs: state.pages.length > 1 ? null : state.jobs,
    };
  }
  if (key.return && job) return { ...state, detail: { id: job.id, data: null, scroll: 0 } };
  if (key.input === "/") {
    return prompt(
      state,
      "Search jobs: text, and/or state:<s>[,<s>] queue:<q> schedule:<id> worker:<w> tag:<t>",
      { kind: "search" },
      searchText(state.filter),
    );
  }
  if (key.input === "f") return openPicker(state, ctx);
  if (key.input === "o") {
    return { ...state, desc: !state.desc, pages: [null], jobCursor: 0, jobs: null };
  }
  if (key.escape) {
    if (unfiltered(state.filter)) return state;
    return { ...showJobs(state, {}), status: { text: "filters cleared", tone: "info" } };
  }
  if (key.input === "r") return jobAction(state, "retry", job);
  if (key.input === "c") return jobAction(state, "cancel", job);
  if (key.input === "d") return jobAction(state, "discard", job);
  if (key.input === "p") return replay(state, job);
  if (key.input === "B") return bulk(state);
  return state;
}

/** The next page (keyset: after the last row shown), or null when this one is not full. */
function nextPage(state: DashboardState): DashboardState | null {
  const last = state.jobs?.at(-1);
  const full = (state.jobs?.length ?? 0) >= pageSize(state);
  // A page already asked for and not yet shown is not asked for twice.
  if (!full || !last || state.pages.at(-1) === last.id) return null;
  return { ...state, pages: [...state.pages, last.id], jobCursor: 0, jobs: null };
}

/** The previous page, or null on the first. */
function previousPage(state: DashboardState): DashboardState | null {
  if (state.pages.length <= 1) return null;
  return { ...state, pages: state.pages.slice(0, -1), jobCursor: 0, jobs: null };
}

/** The jobs screen with `filter`, from the first page; its total is counted again. */
export function showJobs(state: DashboardState, filter: JobsFilter): DashboardState {
  const defined = Object.fromEntries(
    Object.entries(filter).filter(([, v]) => v !== undefined && !(Array.isArray(v) && !v.length)),
  ) as JobsFilter;
  return {
    ...state,
    filter: defined,
    pages: [null],
    jobCursor: 0,
    jobs: null,
    total: null,
    detail: null,
    tab: "jobs",
  };
}

// ----------------------------------------------------------------- picker

function openPicker(state: DashboardState, ctx: Context): DashboardState {
  const queue = state.filter.queue ?? null;
  const known = state.overview?.queues.map((q) => q.name) ?? null;
  ctx.effects.push({ kind: "queues" });
  const picker: PickerDialog = {
    kind: "picker",
    cursor: 0,
    states: statesOf(state.filter),
    queue,
    queues: known === null
      ? null
      : [...new Set([...known, ...(queue === null ? [] : [queue])])].sort(),
    problem: null,
  };
  return { ...state, overlay: picker };
}

/** Keys of the jobs filter's picker: move, choose, list them, cancel. */
export function pickerKey(
  state: DashboardState,
  open: PickerDialog,
  key: Key,
  cancelled: (text: string) => DashboardState,
): DashboardState {
  const rows = pickerRows(open);
  const move = (cursor: number) => ({
    ...state,
    overlay: { ...open, cursor: clamp(cursor, rows.length) },
  });
  if (key.escape || key.input === "q") return cancelled("cancelled; nothing changed");
  if (key.input === "j" || key.downArrow) return move(open.cursor + 1);
  if (key.input === "k" || key.upArrow) return move(open.cursor - 1);
  if (key.home || key.input === "g") return move(0);
  if (key.end || key.input === "G") return move(rows.length - 1);
  if (key.input === " " || key.input === "x") {
    const row = rows[clamp(open.cursor, rows.length)]!;
    if (row.kind === "queue") return { ...state, overlay: { ...open, queue: row.queue } };
    const states = open.states.includes(row.state)
      ? open.states.filter((s) => s !== row.state)
      : JOB_STATES.filter((s) => s === row.state || open.states.includes(s));
    return { ...state, overlay: { ...open, states } };
  }
  if (key.return) {
    const { queue: _queue, states: _states, ...rest } = state.filter;
    return showJobs({ ...state, overlay: null }, {
      ...rest,
      ...(open.states.length > 0 ? { states: open.states } : {}),
      ...(open.queue === null ? {} : { queue: open.queue }),
    });
  }
  return state;
}

// ---------------------------------------------------------------- actions

const PAST: Record<JobAction, string> = {
  retry: "retried",
  cancel: "cancelled",
  discard: "discarded",
};

const EXPLAIN: Record<JobAction | "replay", string> = {
  retry: "It becomes available now; if its attempts are used up it gets one more.",
  cancel: "It becomes cancelled; if it is executing, its node loses the lease and aborts it.",
  discard: "It becomes discarded (a dead letter); if executing, its node loses the lease.",
  replay: "A new attempt of the same job and occurrence, recorded as a replay with the reason.",
};

function jobAction(state: DashboardState, action: JobAction, target: Job | null): DashboardState {
  if (!target) return state;
  const no = refused(state, action);
  if (no) return no;
  const { act, skip } = planJobAction(action, [target]);
  if (act.length === 0) {
    return info(
      state,
      `job ${target.id} ${skip[0]?.why ?? "does not qualify"}: nothing to ${action}`,
    );
  }
  return confirm(state, `${capital(action)} job ${target.id}?`, [
    jobLine(target),
    [],
    [seg(EXPLAIN[action])],
  ], { kind: "act", request: { kind: "jobs", action, jobs: [target], bulk: false } });
}

function replay(state: DashboardState, target: Job | null): DashboardState {
  if (!target) return state;
  const no = refused(state, "replay");
  if (no) return no;
  if (target.state === "executing") {
    const command = `${commandLine(state.program, ["replay", String(target.id), "--force"])} ` +
      `--reason ${shellQuote(reasonPlaceholder("breaking its lease to replay it"))}${
        state.location === "" ? "" : ` --db ${shellQuote(state.location)}`
      }`;
    return info(
      state,
      `job ${target.id} is executing: a replay would break its lease; ` +
        `use "${command}" for that; nothing changed`,
    );
  }
  return prompt(state, `Reason for replaying job ${target.id} (required):`, {
    kind: "replay",
    job: target,
  });
}

function bulk(state: DashboardState): DashboardState {
  const no = refused(state, "bulk");
  if (no) return no;
  if (unfiltered(state.filter)) {
    return {
      ...state,
      status: {
        text:
          "bulk acts on a filtered set: filter first (f state and queue, / search, ⏎ from a queue)",
        tone: "error",
      },
    };
  }
  return {
    ...state,
    overlay: {
      kind: "menu",
      title: `Bulk action on the filtered jobs (${clean(searchText(state.filter))}):`,
      options: (["retry", "discard"] as const).map((action) => ({
        key: action[0]!,
        label: `${action} them (a preview of every affected job comes first)`,
        then: { kind: "bulkPreview", action },
      })),
    },
  };
}

/** The confirmation of a bulk action, once the jobs it looks at are read. */
export function bulkPreviewed(
  state: DashboardState,
  action: JobAction,
  matched: Job[],
): DashboardState {
  const { act, skip } = planJobAction(action, matched);
  const capped = matched.length < BULK_LIMIT
    ? ""
    // The list's total, when it counted every job (a search's is bounded).
    : state.total !== null && exactTotal(state.total) && state.total.count > BULK_LIMIT
    ? ` (the oldest ${BULK_LIMIT} of ${state.total.count} matching)`
    : ` (the oldest ${BULK_LIMIT} matching)`;
  if (act.length === 0) {
    return info(state, `nothing to ${action}: ${plural(matched.length, "job")} matched${capped}`);
  }
  return confirm(
    { ...state, status: null },
    `${capital(action)} ${plural(act.length, "job")}${capped}? Every affected job:`,
    [
      ...act.map(jobLine),
      ...(skip.length > 0 ? [[], [seg(`skipped (${skip.length}):`, { bold: true })]] : []),
      ...skip.map((s) => [...jobLine(s.job), seg(`  ${s.why}`, { dim: true })]),
    ],
    { kind: "act", request: { kind: "jobs", action, jobs: matched, bulk: true } },
  );
}

/** Enter in the search prompt: the jobs list of the search typed, or why it is not one. */
export function submitSearch(state: DashboardState, text: string): DashboardState {
  const parsed = parseSearch(text);
  return "error" in parsed ? failed(state, parsed.error) : showJobs(state, parsed.filter);
}

/** Enter in a replay's reason prompt: the confirmation, or why not. */
export function submitReplay(
  state: DashboardState,
  purpose: Extract<PromptPurpose, { kind: "replay" }>,
  reason: string,
): DashboardState {
  const job = purpose.job;
  if (reason === "") return failed(state, "a replay needs a reason; nothing changed");
  return confirm(state, `Replay job ${job.id}?`, [
    jobLine(job),
    [],
    [seg(EXPLAIN.replay)],
    [seg(`reason: ${reason}`)],
  ], { kind: "act", request: { kind: "replay", job, reason } });
}

/** What a retry, cancel or discard changed, in a sentence. */
export function jobsActed(
  request: Extract<ActRequest, { kind: "jobs" }>,
  result: ActResults["jobs"],
): string {
  const { action, jobs, bulk } = request;
  const { changed, skipped, definitions } = result;
  if (bulk) {
    const live = [...(definitions?.values() ?? [])].filter((d) => d.runs === "live").length;
    return `${PAST[action]} ${plural(changed.length, "job")}` +
      (skipped.length > 0 ? `, skipped ${skipped.length}` : "") +
      (live > 0 ? `; ${live} run their schedule's live definition` : "");
  }
  const target = jobs[0]!;
  const choice = definitions?.get(target.id);
  return changed.length > 0
    ? `${PAST[action]} job ${target.id} (was ${target.state})` +
      (choice ? `; ${definitionText(choice)}` : "")
    : `job ${target.id} not ${PAST[action]}: ${skipped[0]?.why ?? "unchanged"}`;
}

/** What a replay changed, in a sentence. */
export function replayActed(
  request: Extract<ActRequest, { kind: "replay" }>,
  result: ActResults["replay"],
): string {
  const { job } = request;
  return result.replayed
    ? `replayed job ${job.id}: it was ${result.was}; now available, recorded as a replay` +
      (job.scheduleId !== null ? `; ${definitionText(result.definition)}` : "")
    : `job ${job.id} is ${result.was}: not replayed; nothing changed`;
}

/** A job on one line, for previews. */
function jobLine(job: Job): Seg[] {
  return [
    seg(`  #${fit(String(job.id), 7)}`),
    seg(fit(job.state, 10), { color: STATE_COLOR[job.state] }),
    seg(`${fit(clean(job.queue), 12)} ${fit(clean(job.worker), 16)} `),
    seg(clean(job.occurrence ?? "")),
  ];
}
