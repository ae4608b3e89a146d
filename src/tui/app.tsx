/**
 * The dashboard: four screens (overview, jobs, schedules, dead letters)
 * under a tab bar, a banner while the store cannot be read, a status line
 * saying what the last action changed, and a footer of keys. It reads
 * through a {@linkcode DashboardData}, acts through
 * {@linkcode DashboardActions}, and takes its time from the injected clock:
 * the active screen is read again every `refreshMs` of that clock.
 *
 * When a read fails the last data stays on screen under the banner and the
 * next refresh tries again. In read-only mode every action is refused
 * before it asks anything.
 *
 * @module
 */

import { Box, useApp, useInput, useWindowSize } from "ink";
import { type ReactNode, useEffect, useRef, useState } from "react";
import { type JobAction, planJobAction } from "../admin/actions.ts";
import type { JobDetail } from "../admin/views.ts";
import type { Clock } from "../clock.ts";
import { type Job, JOB_STATES, type JobState } from "../kernel/types.ts";
import type { DashboardActions } from "./actions.ts";
import type { DashboardData, DeadLetterGroup, JobsFilter, Overview, ScheduleInfo } from "./data.ts";
import { type Overlay, OverlayView } from "./dialogs.tsx";
import {
  FILTER_KEYS,
  filterWords,
  JobDetailPane,
  JOBS_HEADER_LINES,
  JobsList,
} from "./jobs_view.tsx";
import { ColorContext, Line, type Seg, seg } from "./line.tsx";
import { OverviewView } from "./overview.tsx";
import { DeadLettersView, SchedulesView } from "./schedules_view.tsx";
import { ago, clean, firstLine, fit, plural, STATE_COLOR } from "./text.ts";

/** The screens, in tab order. */
export const TABS = [
  { id: "overview", key: "1", label: "Overview" },
  { id: "jobs", key: "2", label: "Jobs" },
  { id: "schedules", key: "3", label: "Schedules" },
  { id: "dead", key: "4", label: "Dead letters" },
] as const;

/** One of the screens. */
export type Tab = (typeof TABS)[number]["id"];

/** How many jobs a bulk action looks at, the oldest matching first. */
export const BULK_LIMIT = 1000;
/** How many dead-letter groups the screen reads. */
export const DEAD_LETTER_GROUPS = 200;
/** Lines the dashboard keeps around a screen: tab bar, banner, status line, footer. */
export const CHROME_LINES = 4;

/** Props of {@linkcode App}. */
export interface AppProps {
  data: DashboardData;
  actions: DashboardActions;
  clock: Clock;
  /** Refuse every action (`--read-only`). @default false */
  readOnly?: boolean;
  /** Paint colours; false under `NO_COLOR` or off a terminal. @default true */
  color?: boolean;
  /** How often the screen is read again, in ms of `clock`. @default 1000 */
  refreshMs?: number;
  /** The screen shown first. @default "overview" */
  initialTab?: Tab;
}

/** A line of the status bar. */
interface Status {
  text: string;
  tone: "ok" | "info" | "error";
}

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

/** The dashboard. */
export function App(props: AppProps): ReactNode {
  const { data, actions, clock } = props;
  const readOnly = props.readOnly ?? false;
  const refreshMs = props.refreshMs ?? 1000;
  const { exit } = useApp();
  const { columns, rows } = useWindowSize();
  const width = Math.max(20, columns);
  const contentHeight = Math.max(3, rows - CHROME_LINES);

  // What a key handler reads lives in refs too, set at once with the state:
  // keys can arrive faster than renders, and `j` then `r` must retry the
  // job `j` moved to, not the one the last render showed.
  const [tab, setTab, tabRef] = useSynced<Tab>(props.initialTab ?? "overview");
  const [tick, setTick] = useState(0);
  const [overlay, setOverlayState] = useState<Overlay | null>(null);
  const [status, setStatus] = useState<Status | null>(null);
  const [storeError, setStoreError] = useState<string | null>(null);
  const [lastRead, setLastRead] = useState<number | null>(null);

  const [overview, setOverview, overviewRef] = useSynced<Overview | null>(null);
  const [queueCursor, setQueueCursor, queueCursorRef] = useSynced(0);

  const [jobs, setJobs, jobsRef] = useSynced<Job[] | null>(null);
  const [jobCursor, setJobCursor, jobCursorRef] = useSynced(0);
  const [filter, setFilter, filterRef] = useSynced<JobsFilter>({});
  const [desc, setDesc] = useSynced(true);
  // Keyset paging: the `after` of each page opened so far; the last is the current page.
  const [pages, setPages, pagesRef] = useSynced<(number | undefined)[]>([undefined]);
  const [detailId, setDetailId, detailIdRef] = useSynced<number | null>(null);
  const [detail, setDetail, detailRef] = useSynced<JobDetail | null>(null);
  const [detailScroll, setDetailScroll] = useState(0);

  const [schedules, setSchedules, schedulesRef] = useSynced<ScheduleInfo[] | null>(null);
  const [scheduleCursor, setScheduleCursor, scheduleCursorRef] = useSynced(0);
  const [dead, setDead, deadRef] = useSynced<DeadLetterGroup[] | null>(null);
  const [deadCursor, setDeadCursor, deadCursorRef] = useSynced(0);

  // Keys can arrive faster than renders: what a key handler must see at once
  // (the open dialog, a running action, the text typed) lives in refs too.
  const overlayRef = useRef<Overlay | null>(null);
  const busyRef = useRef(false);
  const promptRef = useRef("");
  const setOverlay = (next: Overlay | null) => {
    overlayRef.current = next;
    if (next?.kind === "prompt") promptRef.current = next.value;
    setOverlayState(next);
  };

  const pageSize = Math.max(1, contentHeight - JOBS_HEADER_LINES);
  const after = pages[pages.length - 1];
  /** The selected job of the list, as of the last key. */
  const selectedJob = () =>
    jobsRef.current?.[clamp(jobCursorRef.current, jobsRef.current.length)] ?? null;
  /** The job the detail shows, else the selected one. */
  const shownJob = () =>
    detailIdRef.current !== null ? detailRef.current?.job ?? null : selectedJob();

  // ------------------------------------------------------------- refreshing

  useEffect(() => {
    const stop = new AbortController();
    (async () => {
      while (!stop.signal.aborted) {
        await clock.sleep(refreshMs, stop.signal);
        if (!stop.signal.aborted) setTick((t) => t + 1);
      }
    })();
    return () => stop.abort();
  }, [clock, refreshMs]);

  const loadKey = tab === "jobs"
    ? detailId !== null
      ? `detail:${detailId}`
      : `jobs:${JSON.stringify([filter, desc, after ?? null, pageSize])}`
    : tab;
  const loading = useRef<{ key: string; seq: number } | null>(null);
  const seq = useRef(0);

  useEffect(() => {
    // A tick while the same read is still running is skipped: reads never pile up.
    if (loading.current?.key === loadKey) return;
    const mine = ++seq.current;
    loading.current = { key: loadKey, seq: mine };
    const now = clock.now();
    const read = async () => {
      if (tab === "overview") {
        const view = await data.overview(now);
        return () => setOverview(view);
      }
      if (tab === "jobs" && detailId !== null) {
        const found = await data.job(detailId);
        return () => setDetail(found);
      }
      if (tab === "jobs") {
        const page = await data.jobs({ filter, desc, after, limit: pageSize });
        return () => setJobs(page);
      }
      if (tab === "schedules") {
        const list = await data.schedules(now);
        return () => setSchedules(list);
      }
      const groups = await data.deadLetters(DEAD_LETTER_GROUPS);
      return () => setDead(groups);
    };
    read().then((apply) => {
      if (seq.current !== mine) return;
      apply();
      setStoreError(null);
      setLastRead(now);
    }, (error) => {
      if (seq.current !== mine) return;
      setStoreError(message(error));
    }).finally(() => {
      if (loading.current?.seq === mine) loading.current = null;
    });
  }, [loadKey, tick]);

  const refresh = () => setTick((t) => t + 1);

  // ---------------------------------------------------------------- actions

  /** Runs an action, then says what it changed (or why it failed) and reads again. */
  const perform = (label: string, fn: () => Promise<string>) => {
    busyRef.current = true;
    setStatus({ text: `${label}…`, tone: "info" });
    fn().then(
      (text) => setStatus({ text, tone: "ok" }),
      (error) => setStatus({ text: `${label} failed: ${message(error)}`, tone: "error" }),
    ).finally(() => {
      busyRef.current = false;
      refresh();
    });
  };

  /** True (and says so) in read-only mode. */
  const refused = (what: string): boolean => {
    if (!readOnly) return false;
    setStatus({ text: `read-only mode: ${what} refused; nothing changed`, tone: "error" });
    return true;
  };

  const confirm = (title: string, lines: Seg[][], yes: () => void) =>
    setOverlay({ kind: "confirm", title, lines, scroll: 0, yes });

  const prompt = (label: string, submit: (value: string) => void, value = "") =>
    setOverlay({ kind: "prompt", label, value, submit });

  const jobAction = (action: JobAction, target: Job | null) => {
    if (!target || refused(action)) return;
    const { act, skip } = planJobAction(action, [target]);
    if (act.length === 0) {
      setStatus({
        text: `job ${target.id} ${skip[0]?.why ?? "does not qualify"}: nothing to ${action}`,
        tone: "info",
      });
      return;
    }
    confirm(`${capital(action)} job ${target.id}?`, [jobLine(target), [], [
      seg(EXPLAIN[action]),
    ]], () =>
      perform(action, async () => {
        const { changed, skipped } = await actions.jobs(action, [target]);
        return changed.length > 0
          ? `${PAST[action]} job ${target.id} (was ${target.state})`
          : `job ${target.id} not ${PAST[action]}: ${skipped[0]?.why ?? "unchanged"}`;
      }));
  };

  const replay = (target: Job | null) => {
    if (!target || refused("replay")) return;
    if (target.state === "executing") {
      setStatus({
        text: `job ${target.id} is executing: a replay would break its lease; ` +
          `use "jobs replay ${target.id} --force" for that; nothing changed`,
        tone: "info",
      });
      return;
    }
    prompt(`Reason for replaying job ${target.id} (required):`, (reason) => {
      if (reason.trim() === "") {
        setStatus({ text: "a replay needs a reason; nothing changed", tone: "error" });
        return;
      }
      confirm(`Replay job ${target.id}?`, [
        jobLine(target),
        [],
        [seg(EXPLAIN.replay)],
        [seg(`reason: ${reason}`)],
      ], () =>
        perform("replay", async () => {
          const result = await actions.replay(target, reason.trim());
          return result.replayed
            ? `replayed job ${target.id}: it was ${result.was}; now available, recorded as a replay`
            : `job ${target.id} is ${result.was}: not replayed; nothing changed`;
        }));
    });
  };

  const bulk = () => {
    const filter = filterRef.current;
    if (refused("bulk")) return;
    if (Object.values(filter).every((v) => v === undefined)) {
      setStatus({
        text: "bulk acts on a filtered set: filter first (f state, / search, ⏎ from a queue)",
        tone: "error",
      });
      return;
    }
    setOverlay({
      kind: "menu",
      title: `Bulk action on the filtered jobs (${clean(filterSummary(filter))}):`,
      options: (["retry", "discard"] as const).map((action) => ({
        key: action[0]!,
        label: `${action} them (a preview of every affected job comes first)`,
        run: () => bulkPreview(action),
      })),
    });
  };

  const bulkPreview = (action: JobAction) => {
    const filter = filterRef.current;
    busyRef.current = true;
    setStatus({ text: `reading the jobs to ${action}…`, tone: "info" });
    data.jobs({ filter, desc: false, limit: BULK_LIMIT }).then((matched) => {
      const { act, skip } = planJobAction(action, matched);
      const capped = matched.length === BULK_LIMIT ? ` (the oldest ${BULK_LIMIT} matching)` : "";
      if (act.length === 0) {
        setStatus({
          text: `nothing to ${action}: ${plural(matched.length, "job")} matched${capped}`,
          tone: "info",
        });
        return;
      }
      setStatus(null);
      confirm(
        `${capital(action)} ${plural(act.length, "job")}${capped}? Every affected job:`,
        [
          ...act.map(jobLine),
          ...(skip.length > 0 ? [[], [seg(`skipped (${skip.length}):`, { bold: true })]] : []),
          ...skip.map((s) => [...jobLine(s.job), seg(`  ${s.why}`, { dim: true })]),
        ],
        () =>
          perform(`bulk ${action}`, async () => {
            const { changed, skipped } = await actions.jobs(action, matched);
            return `${PAST[action]} ${plural(changed.length, "job")}` +
              (skipped.length > 0 ? `, skipped ${skipped.length}` : "");
          }),
      );
    }, (error) => {
      setStatus({ text: `bulk ${action} failed: ${message(error)}`, tone: "error" });
    }).finally(() => busyRef.current = false);
  };

  const pauseQueue = () => {
    const queues = overviewRef.current?.queues ?? [];
    const queue = queues[clamp(queueCursorRef.current, queues.length)];
    if (!queue) return;
    const paused = !queue.paused;
    const verb = paused ? "pause" : "resume";
    if (refused(verb)) return;
    confirm(`${capital(verb)} queue ${clean(queue.name)} for every process on the store?`, [[
      seg(
        paused
          ? "Nothing new is claimed from it; running jobs finish."
          : "Processes claim from it again.",
      ),
    ]], () =>
      perform(verb, async () => {
        const r = await actions.setQueuePaused(queue.name, paused);
        return r.was === r.paused
          ? `queue ${r.queue} was already ${r.paused ? "paused" : "running"}; recorded`
          : `queue ${r.queue} ${r.paused ? "paused" : "resumed"} for every process on the store`;
      }));
  };

  const selectedSchedule = () =>
    schedulesRef.current?.[clamp(scheduleCursorRef.current, schedulesRef.current.length)] ?? null;

  const runSchedule = () => {
    const info = selectedSchedule();
    if (!info || refused("run now")) return;
    const id = info.status.id;
    if (!info.schedule) {
      setStatus({ text: `${id} is not in the schedules file: it cannot run`, tone: "error" });
      return;
    }
    const manual = info.status.manual;
    prompt(`Reason for running ${id} now${manual ? " (required: it is manual)" : ""}:`, (r) => {
      const reason = r.trim();
      if (manual && reason === "") {
        setStatus({
          text: `${id} is manual: a reason is required; nothing changed`,
          tone: "error",
        });
        return;
      }
      confirm(`Run schedule ${id} now?`, [
        [seg(
          `One occurrence ${id}@<now> on queue ${info.schedule!.queue}, as the planner builds it.`,
        )],
        [seg("The planned occurrences are unchanged.")],
        ...(reason ? [[seg(`reason: ${reason}`)]] : []),
      ], () =>
        perform("run now", async () => {
          const result = await actions.runSchedule(id, reason || null);
          return `ran ${id} now: job ${result.id}, occurrence ${result.occurrence}, ` +
            `${result.state} on queue ${result.queue}`;
        }));
    });
  };

  const toggleSchedule = () => {
    const info = selectedSchedule();
    if (!info) return;
    const id = info.status.id;
    const enable = !info.status.enabled;
    const verb = enable ? "enable" : "disable";
    if (refused(verb)) return;
    prompt(`Reason to ${verb} ${id} (required):`, (r) => {
      const reason = r.trim();
      if (reason === "") {
        setStatus({ text: `${verb} needs a reason; nothing changed`, tone: "error" });
        return;
      }
      confirm(`${capital(verb)} schedule ${id}?`, [
        [seg(
          enable
            ? "The planner resumes it, applying its misfire policy to the gap."
            : "Nothing new is planned; an occurrence already claimed finishes. Stored: survives restarts.",
        )],
        ...(enable && info.status.disabledIn === "file"
          ? [[
            seg(
              "It is disabled in the schedules file: enabling in the store does not override that.",
              {
                color: "yellow",
              },
            ),
          ]]
          : []),
        [seg(`reason: ${reason}`)],
      ], () =>
        perform(verb, async () => {
          const result = await actions.setScheduleEnabled(id, enable, reason);
          return result.was === result.enabled
            ? `schedule ${id} was already ${result.enabled ? "enabled" : "disabled"}; recorded`
            : `schedule ${id} ${result.enabled ? "enabled" : "disabled"}`;
        }));
    });
  };

  const search = () => {
    prompt(
      "Search jobs: text, and/or state:<s> queue:<q> schedule:<id> worker:<w> tag:<t>",
      (text) => {
        const parsed = parseSearch(text);
        if ("error" in parsed) {
          setStatus({ text: parsed.error, tone: "error" });
          return;
        }
        showJobs(parsed.filter);
      },
      searchText(filterRef.current),
    );
  };

  /** The jobs screen with `next` as its filter, from the first page. */
  const showJobs = (next: JobsFilter) => {
    setFilter(next);
    setPages([undefined]);
    setJobCursor(0);
    setDetailId(null);
    setTab("jobs");
  };

  // ------------------------------------------------------------------- keys

  // A terminal hands over keys typed (or sent) quickly as one chunk of
  // text: each character is a key of its own.
  useInput((input, key) => {
    const chars = Array.from(input);
    if (chars.length <= 1 || key.ctrl || key.meta || key.escape) return handleKey(input, key);
    for (const c of chars) handleKey(c, { ...key, return: c === "\r", tab: c === "\t" });
  });

  const handleKey = (input: string, key: KeyLike) => {
    const open = overlayRef.current;
    if (open) return dialogKey(open, input, key);
    if (busyRef.current) return;
    const tab = tabRef.current;
    const detailId = detailIdRef.current;
    if (input === "q") return exit();
    if (input === "?") return setOverlay({ kind: "help" });
    const numbered = TABS.find((t) => t.key === input);
    if (numbered) return setTab(numbered.id);
    if (key.tab) {
      const i = TABS.findIndex((t) => t.id === tab);
      const step = key.shift ? TABS.length - 1 : 1;
      return setTab(TABS[(i + step) % TABS.length]!.id);
    }
    const down = input === "j" || key.downArrow;
    const up = input === "k" || key.upArrow;
    if (tab === "overview") {
      const count = overviewRef.current?.queues.length ?? 0;
      if (down) setQueueCursor((c) => clamp(c + 1, count));
      else if (up) setQueueCursor((c) => clamp(c - 1, count));
      else if (input === "P") pauseQueue();
      else if (key.return) {
        const queue = overviewRef.current?.queues[clamp(queueCursorRef.current, count)];
        if (queue) showJobs({ queue: queue.name });
      }
    } else if (tab === "jobs" && detailId !== null) {
      if (down) setDetailScroll((s) => s + 1);
      else if (up) setDetailScroll((s) => Math.max(0, s - 1));
      else if (key.pageDown || input === " ") setDetailScroll((s) => s + contentHeight - 1);
      else if (key.pageUp) setDetailScroll((s) => Math.max(0, s - contentHeight + 1));
      else if (key.escape || key.backspace || key.leftArrow) setDetailId(null);
      else if (input === "r") jobAction("retry", shownJob());
      else if (input === "c") jobAction("cancel", shownJob());
      else if (input === "d") jobAction("discard", shownJob());
      else if (input === "p") replay(shownJob());
    } else if (tab === "jobs") {
      jobsKey(input, key, down, up);
    } else if (tab === "schedules") {
      const count = schedulesRef.current?.length ?? 0;
      if (down) setScheduleCursor((c) => clamp(c + 1, count));
      else if (up) setScheduleCursor((c) => clamp(c - 1, count));
      else if (input === "R") runSchedule();
      else if (input === "x") toggleSchedule();
      else if (key.return && selectedSchedule()) {
        showJobs({ scheduleId: selectedSchedule()!.status.id });
      }
    } else {
      const count = deadRef.current?.length ?? 0;
      if (down) setDeadCursor((c) => clamp(c + 1, count));
      else if (up) setDeadCursor((c) => clamp(c - 1, count));
      else if (key.return) {
        const group = deadRef.current?.[clamp(deadCursorRef.current, count)];
        if (group) {
          const error = group.error.split("\n", 1)[0]!.slice(0, 200);
          showJobs({
            state: "discarded",
            worker: group.worker,
            ...(group.scheduleId === null ? {} : { scheduleId: group.scheduleId }),
            ...(error === "" ? {} : { search: error }),
          });
        }
      }
    }
  };

  const jobsKey = (input: string, key: KeyLike, down: boolean, up: boolean) => {
    const jobs = jobsRef.current;
    const jobCursor = jobCursorRef.current;
    const filter = filterRef.current;
    const job = selectedJob();
    const count = jobs?.length ?? 0;
    const full = count >= pageSize;
    const nextPage = () => {
      const last = jobs?.at(-1);
      if (!full || !last) return false;
      setPages((p) => [...p, last.id]);
      setJobCursor(0);
      return true;
    };
    const previousPage = () => {
      if (pagesRef.current.length <= 1) return false;
      setPages((p) => p.slice(0, -1));
      return true;
    };
    if (down) {
      if (jobCursor >= count - 1) nextPage();
      else setJobCursor((c) => clamp(c + 1, count));
    } else if (up) {
      if (jobCursor <= 0) {
        if (previousPage()) setJobCursor(pageSize - 1);
      } else setJobCursor((c) => clamp(c - 1, count));
    } else if (input === "n" || key.pageDown) nextPage();
    else if (input === "b" || key.pageUp) {
      if (previousPage()) setJobCursor(0);
    } else if (input === "g" || key.home) {
      setPages([undefined]);
      setJobCursor(0);
    } else if (key.return && job) {
      setDetailId(job.id);
      setDetail(null);
      setDetailScroll(0);
    } else if (input === "/") search();
    else if (input === "f") {
      const order: (JobState | undefined)[] = [undefined, ...JOB_STATES];
      const next = order[(order.indexOf(filter.state) + 1) % order.length];
      showJobs({ ...filter, state: next });
    } else if (input === "o") {
      setDesc((d) => !d);
      setPages([undefined]);
      setJobCursor(0);
    } else if (key.escape) {
      if (Object.values(filter).some((v) => v !== undefined)) {
        showJobs({});
        setStatus({ text: "filters cleared", tone: "info" });
      }
    } else if (input === "r") jobAction("retry", job);
    else if (input === "c") jobAction("cancel", job);
    else if (input === "d") jobAction("discard", job);
    else if (input === "p") replay(job);
    else if (input === "B") bulk();
  };

  const dialogKey = (open: Overlay, input: string, key: KeyLike) => {
    switch (open.kind) {
      case "help":
        return setOverlay(null);
      case "menu": {
        if (key.escape || input === "q") {
          setOverlay(null);
          return setStatus({ text: "cancelled; nothing changed", tone: "info" });
        }
        const option = open.options.find((o) => o.key === input);
        if (option) {
          setOverlay(null);
          option.run();
        }
        return;
      }
      case "prompt": {
        if (key.escape) {
          setOverlay(null);
          return setStatus({ text: "cancelled; nothing changed", tone: "info" });
        }
        if (key.return) {
          const value = promptRef.current;
          setOverlay(null);
          return open.submit(value);
        }
        if (key.backspace || key.delete) {
          promptRef.current = Array.from(promptRef.current).slice(0, -1).join("");
        } else if (input && !key.ctrl && !key.meta) {
          promptRef.current += input;
        } else return;
        const value = promptRef.current;
        setOverlayState((o) => o?.kind === "prompt" ? { ...o, value } : o);
        overlayRef.current = { ...open, value };
        return;
      }
      case "confirm": {
        if (input === "y" || input === "Y") {
          setOverlay(null);
          return open.yes();
        }
        if (input === "n" || input === "N" || key.escape || input === "q") {
          setOverlay(null);
          return setStatus({ text: "not confirmed; nothing changed", tone: "info" });
        }
        const step = input === "j" || key.downArrow
          ? 1
          : input === "k" || key.upArrow
          ? -1
          : key.pageDown || input === " "
          ? contentHeight - 4
          : key.pageUp
          ? -(contentHeight - 4)
          : 0;
        if (step !== 0) {
          const room = Math.max(1, contentHeight - 4);
          const max = Math.max(0, open.lines.length - room);
          const scrolled = { ...open, scroll: Math.max(0, Math.min(max, open.scroll + step)) };
          overlayRef.current = scrolled;
          setOverlayState(scrolled);
        }
        return;
      }
    }
  };

  // ----------------------------------------------------------------- layout

  const now = clock.now();
  let screen: ReactNode;
  if (overlay) {
    screen = (
      <OverlayView overlay={overlay} readOnly={readOnly} width={width} height={contentHeight} />
    );
  } else if (tab === "overview") {
    screen = (
      <OverviewView
        overview={overview}
        cursor={clamp(queueCursor, overview?.queues.length ?? 0)}
        width={width}
        height={contentHeight}
        now={now}
      />
    );
  } else if (tab === "jobs" && detailId !== null) {
    screen = (
      <JobDetailPane
        detail={detail?.job.id === detailId ? detail : null}
        id={detailId}
        scroll={detailScroll}
        width={width}
        height={contentHeight}
        now={now}
      />
    );
  } else if (tab === "jobs") {
    screen = (
      <JobsList
        jobs={jobs}
        filter={filter}
        desc={desc}
        page={pages.length}
        cursor={clamp(jobCursor, jobs?.length ?? 0)}
        width={width}
        height={contentHeight}
        now={now}
      />
    );
  } else if (tab === "schedules") {
    screen = (
      <SchedulesView
        schedules={schedules}
        cursor={clamp(scheduleCursor, schedules?.length ?? 0)}
        width={width}
        height={contentHeight}
        now={now}
      />
    );
  } else {
    screen = (
      <DeadLettersView
        groups={dead}
        cursor={clamp(deadCursor, dead?.length ?? 0)}
        width={width}
        height={contentHeight}
        now={now}
      />
    );
  }

  const banner: Seg[] = storeError === null ? [] : [
    seg(" STORE UNREACHABLE ", { color: "red", bold: true, inverse: true }),
    seg(` ${storeError}`, { color: "red" }),
    seg(
      lastRead === null
        ? "; retrying every tick"
        : `; showing data read ${ago(lastRead, now)}, retrying`,
    ),
  ];

  return (
    <ColorContext.Provider value={props.color ?? true}>
      <Box flexDirection="column" width={width} height={contentHeight + CHROME_LINES}>
        <Line segs={tabBar(tab, readOnly, data.location)} width={width} />
        <Line segs={banner} width={width} />
        <Box flexDirection="column" height={contentHeight}>{screen}</Box>
        <Line segs={statusLine(status)} width={width} />
        <Line
          segs={[seg(footer(tab, detailId !== null, overlay), { dim: true })]}
          width={width}
        />
      </Box>
    </ColorContext.Provider>
  );
}

// ------------------------------------------------------------------ helpers

/**
 * `useState` with a ref that the setter updates at once, for key handlers
 * that run before the next render.
 */
function useSynced<T>(initial: T) {
  const [value, setValue] = useState(initial);
  const ref = useRef(value);
  const set = (next: T | ((previous: T) => T)) => {
    ref.current = typeof next === "function" ? (next as (previous: T) => T)(ref.current) : next;
    setValue(ref.current);
  };
  return [value, set, ref] as const;
}

type KeyLike = Parameters<Parameters<typeof useInput>[0]>[1];

function tabBar(active: Tab, readOnly: boolean, location: string): Seg[] {
  const segs: Seg[] = [seg("jobs ", { bold: true })];
  for (const t of TABS) {
    const on = t.id === active;
    segs.push(
      seg(on ? `[${t.key} ${t.label}]` : ` ${t.key} ${t.label} `, {
        bold: on,
        color: on ? "cyan" : undefined,
      }),
    );
  }
  if (readOnly) segs.push(seg("  READ-ONLY", { color: "yellow", bold: true }));
  segs.push(seg(`  ${location}`, { dim: true }));
  return segs;
}

function statusLine(status: Status | null): Seg[] {
  if (!status) return [];
  const color = status.tone === "error" ? "red" : status.tone === "ok" ? "green" : undefined;
  return [seg(status.text, { color })];
}

function footer(tab: Tab, inDetail: boolean, overlay: Overlay | null): string {
  if (overlay?.kind === "confirm") return "y confirm · n/esc cancel · j/k scroll";
  if (overlay?.kind === "prompt") return "type · ⏎ accept · esc cancel";
  if (overlay?.kind === "menu") return "a key from the menu · esc cancel";
  if (overlay?.kind === "help") return "any key closes the help";
  if (tab === "overview") {
    return "j/k queue · ⏎ its jobs · P pause/resume · 1-4 views · ? help · q quit";
  }
  if (tab === "jobs" && inDetail) {
    return "j/k scroll · r retry · c cancel · d discard · p replay · esc back · ? · q";
  }
  if (tab === "jobs") {
    return "j/k ⏎ · / search · f state · o order · n/b page · r c d p · B bulk · ? · q";
  }
  if (tab === "schedules") {
    return "j/k · ⏎ its jobs · R run now · x disable/enable · 1-4 views · ? help · q quit";
  }
  return "j/k · ⏎ the group's jobs · 1-4 views · ? help · q quit";
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

function filterSummary(filter: JobsFilter): string {
  return searchText(filter) || "all jobs";
}

/** The filter as the search prompt takes it. */
export function searchText(filter: JobsFilter): string {
  return filterWords(filter, (text) => text).join(" ");
}

/**
 * `state:discarded queue:mail timeout` -> a filter: `key:value` words for
 * the fields, the other words (joined by one space) as the search text.
 */
export function parseSearch(text: string): { filter: JobsFilter } | { error: string } {
  const filter: JobsFilter = {};
  const rest: string[] = [];
  for (const word of text.trim().split(/\s+/).filter((w) => w !== "")) {
    const match = /^([a-z]+):(.+)$/.exec(word);
    // Own keys only: `constructor:x` is search text, not Object.prototype's.
    const field = match && Object.hasOwn(FILTER_KEYS, match[1]!)
      ? FILTER_KEYS[match[1]!]
      : undefined;
    if (!match || !field) {
      rest.push(word);
      continue;
    }
    const value = match[2]!;
    if (field === "state") {
      if (!(JOB_STATES as readonly string[]).includes(value)) {
        return {
          error: `state "${clean(value)}" is not a job state (${JOB_STATES.join(", ")})`,
        };
      }
      filter.state = value as JobState;
    } else (filter as Record<string, string>)[field] = value;
  }
  if (rest.length > 0) filter.search = rest.join(" ");
  return { filter };
}

function clamp(index: number, count: number): number {
  return Math.max(0, Math.min(index, count - 1));
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function message(error: unknown): string {
  return firstLine(error instanceof Error ? error.message : String(error));
}
