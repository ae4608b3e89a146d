/**
 * The dead letters screen: discarded jobs grouped by worker, schedule and
 * error for triage.
 *
 * @module
 */

import type { ReactNode } from "react";
import { redact } from "../../kernel/redact.ts";
import { ago } from "../../text/durations.ts";
import type { DeadLetterGroup } from "../data.ts";
import { Lines, type Seg, seg } from "../line.tsx";
import { windowOf } from "../seg.ts";
import { clean, firstLine, fit } from "../text.ts";

/** Props of {@linkcode DeadLettersView}. */
export interface DeadLettersProps {
  groups: DeadLetterGroup[] | null;
  cursor: number;
  width: number;
  height: number;
  now: number;
}

/** The dead letters screen. */
export function DeadLettersView(props: DeadLettersProps): ReactNode {
  return <Lines lines={deadLetterLines(props)} width={props.width} height={props.height} />;
}

/** The dead letters screen as lines. */
export function deadLetterLines(props: DeadLettersProps): Seg[][] {
  const { groups, now } = props;
  if (!groups) return [[seg("loading…", { dim: true })]];
  const lines: Seg[][] = [[
    seg("discarded jobs by worker, schedule and error; ⏎ lists a group's jobs", { dim: true }),
  ], [
    seg(
      `  ${fit("COUNT", 7, true)} ${fit("WORKER", 16)} ${fit("SCHEDULE", 14)} ${
        fit("LATEST", 11)
      } ERROR`,
      { bold: true },
    ),
  ]];
  if (groups.length === 0) return [...lines, [seg("  no dead letters", { dim: true })]];
  const [start, end] = windowOf(groups.length, props.cursor, Math.max(1, props.height - 2));
  for (let i = start; i < end; i++) {
    const g = groups[i]!;
    const selected = i === props.cursor;
    lines.push([
      seg(selected ? "> " : "  ", { bold: true }),
      seg(fit(String(g.count), 7, true), { inverse: selected, color: "red" }),
      seg(" "),
      seg(fit(clean(g.worker), 16)),
      seg(" "),
      seg(fit(clean(g.scheduleId ?? "-"), 14)),
      seg(" "),
      seg(fit(ago(g.latestAt, now), 11)),
      seg(" "),
      seg(firstLine(redact(g.error)), { color: "red" }),
    ]);
  }
  return lines;
}
