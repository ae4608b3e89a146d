/**
 * The schedules screen: each schedule on a line, the selected one in detail
 * with its policies, stored state and next occurrences with their DST
 * notes.
 *
 * @module
 */

import type { ReactNode } from "react";
import { failuresText } from "../../admin/schedules.ts";
import { shortHash } from "../../admin/definitions.ts";
import { rhythmText, when } from "../../schedule/describe.ts";
import { ago, formatDuration } from "../../text/durations.ts";
import type { ScheduleInfo } from "../data.ts";
import { Lines, type Seg, seg } from "../line.tsx";
import { rule, windowOf } from "../seg.ts";
import { clean, firstLine, fit, iso, isoIn } from "../text.ts";

/** Props of {@linkcode SchedulesView}. */
export interface SchedulesProps {
  schedules: ScheduleInfo[] | null;
  cursor: number;
  width: number;
  height: number;
  now: number;
}

/** How many lines the selected schedule's detail takes at most. */
const DETAIL_LINES = 14;

/** The schedules screen. */
export function SchedulesView(props: SchedulesProps): ReactNode {
  return <Lines lines={schedulesLines(props)} width={props.width} height={props.height} />;
}

/** The schedules screen as lines. */
export function schedulesLines(props: SchedulesProps): Seg[][] {
  const { schedules, width, height, now } = props;
  if (!schedules) return [[seg("loading…", { dim: true })]];
  if (schedules.length === 0) {
    return [[seg("no schedules in the schedules file or the store", { dim: true })]];
  }
  const problem = schedules[0]?.notInForce;
  // The file's errors take two lines above the list: shown while it is not in force.
  const banner: Seg[][] = problem === undefined ? [] : [
    [seg(
      "the schedules file has errors and is not in force: shown is what a daemon runs, as stored",
      { color: "red", bold: true },
    )],
    [seg(`  ${clean(firstLine(problem))}`, { color: "red" })],
  ];
  const listRows = Math.max(
    1,
    Math.min(schedules.length, height - DETAIL_LINES - 1 - banner.length),
  );
  const idWidth = Math.max(
    8,
    Math.min(24, Math.max(0, ...schedules.map((s) => Array.from(s.status.id).length))),
  );
  const lines: Seg[][] = [...banner, [
    seg(
      `  ${fit("SCHEDULE", idWidth)} ${fit("RHYTHM", 18)} ${fit("ZONE", 16)} ${
        fit("STATE", 9)
      } NEXT`,
      { bold: true },
    ),
  ]];
  const [start, end] = windowOf(schedules.length, props.cursor, listRows);
  for (let i = start; i < end; i++) {
    const { status, schedule } = schedules[i]!;
    const selected = i === props.cursor;
    lines.push([
      seg(selected ? "> " : "  ", { bold: true }),
      seg(fit(clean(status.id), idWidth), { inverse: selected }),
      seg(" "),
      seg(fit(schedule ? clean(rhythmText(schedule)) : "(not in file)", 18)),
      seg(" "),
      seg(fit(clean(schedule?.timezone ?? "-"), 16)),
      seg(" "),
      status.enabled
        ? seg(fit("enabled", 9), { color: "green" })
        : seg(fit("disabled", 9), { color: "yellow", bold: true }),
      seg(
        ` ${status.next !== null ? ago(status.next, now) : status.manual ? "when run" : "none"}`,
      ),
      seg(status.failures > 0 ? `  ${failuresText(status.failures)}` : "", { color: "red" }),
    ]);
  }
  const selected = schedules[Math.min(props.cursor, schedules.length - 1)];
  if (selected) lines.push([], ...scheduleDetail(selected, now, width));
  return lines;
}

function scheduleDetail(info: ScheduleInfo, now: number, width: number): Seg[][] {
  const { status, schedule } = info;
  const lines: Seg[][] = [rule(width, clean(status.id))];
  if (schedule) {
    const lt = schedule.localTime;
    lines.push([
      seg("rhythm   "),
      seg(`${clean(rhythmText(schedule))} in ${clean(schedule.timezone)}`),
      seg(!lt && schedule.timezone === "UTC" ? " (no local-time policy needed)" : ""),
    ]);
    if (lt) {
      lines.push([
        seg("local    "),
        seg(`gap ${lt.gap}, overlap ${lt.overlap}: ${clean(lt.reason)}`),
      ]);
    }
    const misfire = schedule.misfire.policy === "catch_up"
      ? `catch_up (limit ${schedule.misfire.catchUpLimit})`
      : schedule.misfire.policy;
    lines.push([
      seg("policies "),
      seg(
        `${
          schedule.rhythm.kind === "manual"
            ? ""
            : `misfire ${misfire}, grace ${formatDuration(schedule.misfire.graceMs)}; `
        }overlap ${schedule.overlapPolicy}; queue ${clean(schedule.queue)}`,
      ),
    ]);
    if (info.notInForce !== undefined) {
      lines.push([
        seg("stored   "),
        seg(`definition ${shortHash(status.definitionHash)}, as a daemon last synced it`),
      ]);
    }
  } else {
    lines.push([seg("not in the schedules file: only the store remembers it", { dim: true })]);
  }
  lines.push([
    seg("state    "),
    status.enabled
      ? seg("enabled", { color: "green" })
      : status.disabledIn === "file"
      ? seg("disabled in the file", { color: "yellow" })
      : seg(
        `disabled by ${clean(status.disabledBy ?? "unknown")} ${ago(status.disabledAt, now)}: ${
          clean(status.disabledReason ?? "no reason given")
        }`,
        { color: "yellow" },
      ),
  ]);
  // An instant is shown in UTC and, for a schedule in another zone, in its
  // own; on a narrow terminal without the zone's name, which is named above.
  const wide = width >= 120;
  const zone = status.timezone;
  lines.push([
    seg("last     "),
    seg(`planned for ${isoIn(status.lastPlannedFor, zone, wide)}`),
  ], [
    seg("         "),
    seg(`started ${ago(status.lastStartedAt, now)}, completed ${ago(status.lastCompletedAt, now)}`),
  ]);
  if (status.lastOutcome !== null) {
    const run = failuresText(status.failures);
    lines.push([
      seg("outcome  "),
      seg(
        `last: ${status.lastOutcome} ${ago(status.lastOutcomeAt, now)}`,
        status.lastOutcome === "completed" ? {} : { color: "red" },
      ),
      seg(run === null ? "" : `, ${run}`, { color: "red" }),
    ]);
  }
  if (status.misfires > 0) {
    lines.push([
      seg("misfires "),
      seg(`${status.misfires}`, { color: "red" }),
      seg(
        status.lastMisfireFor !== null
          ? ` (last for ${when(status.lastMisfireFor, now, zone, wide)})`
          : "",
      ),
    ]);
  }
  if (info.upcoming.length === 0) {
    lines.push([
      seg("next     "),
      seg(
        status.manual
          ? "only when someone runs it"
          : status.enabled
          ? "none"
          : "none while disabled",
        { dim: true },
      ),
    ]);
  }
  // On a narrow terminal the local time drops the zone's name here too, and
  // a DST note that does not fit goes on a line of its own.
  for (const [i, o] of info.upcoming.entries()) {
    const local = wide ? clean(o.local) : clean(o.local.replace(/\[[^\]]*\]$/, ""));
    const head = [
      seg(i === 0 ? "next     " : "         "),
      seg(`${iso(o.at)}  `),
      seg(local, { dim: true }),
    ];
    if (!o.note) {
      lines.push(head);
      continue;
    }
    const note = seg(clean(o.note), { color: "yellow" });
    const length = 9 + 26 + Array.from(local).length + 2 + Array.from(note.text).length;
    if (length <= width) lines.push([...head, seg("  "), note]);
    else lines.push(head, [seg("           "), note]);
  }
  return lines;
}
