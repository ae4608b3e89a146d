/**
 * The work screen: a tab per work queue of the schedules file, the one
 * watched with its claim mode, lease and score rule; how it stands (open
 * items, claims held, claims expired, the oldest open item's age, and the
 * median lead time from requested to done over the last day); then its
 * first open items in the order people get them, each with its score and
 * the inputs that set it, who holds its claim and until when, and a claim
 * that lapsed shown as `EXPIRED` (never as released by its owner). Each
 * refresh reads it again, so claims come and go as people work.
 *
 * Colour never carries meaning alone: `EXPIRED` is written out.
 *
 * @module
 */

import type { ReactNode } from "react";
import type { WorkWatchItem } from "../../admin/work.ts";
import { AGE_INPUT } from "../../workqueue/types.ts";
import { ago, span } from "../../text/durations.ts";
import type { WorkScreen } from "../data.ts";
import { Lines, type Seg, seg } from "../line.tsx";
import { windowOf } from "../seg.ts";
import { WORK_HEADER_LINES } from "../state.ts";
import { clean, fit } from "../text.ts";

/** Props of {@linkcode WorkView}. */
export interface WorkViewProps {
  work: WorkScreen | null;
  /** The queue chosen, or null for the first. */
  queue: string | null;
  cursor: number;
  width: number;
  height: number;
  now: number;
}

/** The work screen. */
export function WorkView(props: WorkViewProps): ReactNode {
  return <Lines lines={workLines(props)} width={props.width} height={props.height} />;
}

/** `82.5`: a score as the listing shows it, one decimal at most. */
export function scoreText(score: number | null): string {
  return score === null ? "-" : String(Math.round(score * 10) / 10);
}

/** `amount 1900, age 6d, evidence_missing true`: the inputs that set a score, as the rule names them. */
export function inputsText(item: Pick<WorkWatchItem, "terms" | "ageMs">): string {
  if (item.terms.length === 0) return `age ${span(item.ageMs)}`;
  return item.terms.map((t) =>
    t.input === AGE_INPUT
      ? `age ${span(Number(t.value))}`
      : `${clean(t.input)} ${
        clean(typeof t.value === "string" ? t.value : JSON.stringify(t.value))
      }`
  ).join(", ");
}

/** The claim cell: `bo, 50m left`, `EXPIRED bo 1h ago`, or `-`. */
function claimCell(item: WorkWatchItem, now: number, width: number): Seg {
  if (item.claim !== null) {
    return seg(fit(`${clean(item.claim.owner)}, ${span(item.claim.expiresAt - now)} left`, width), {
      color: "cyan",
    });
  }
  if (item.expiredClaim !== null) {
    const { owner, expiredAt } = item.expiredClaim;
    return seg(fit(`EXPIRED ${clean(owner)} ${ago(expiredAt, now)}`, width), { color: "yellow" });
  }
  return seg(fit("-", width), { dim: true });
}

/** The work screen as lines. */
export function workLines(props: WorkViewProps): Seg[][] {
  const { work, now, width } = props;
  if (work === null) return [[seg("loading…", { dim: true })]];
  if (work.queues.length === 0) {
    return [
      [seg("no work queues: the schedules file declares none (`work_queues:`)", { dim: true })],
      ...work.configProblems.map((p) => [seg(`  ${p}`, { color: "red" })]),
    ];
  }
  const watch = work.watch;
  const shown = watch?.queue.id ?? null;
  const tabs: Seg[] = [seg("queues ", { dim: true })];
  for (const id of work.queues) {
    const on = id === shown;
    tabs.push(
      seg(on ? `[${clean(id)}]` : ` ${clean(id)} `, { bold: on, color: on ? "cyan" : undefined }),
    );
    tabs.push(seg(" "));
  }
  if (work.queues.length > 1) tabs.push(seg(" h/l switch", { dim: true }));
  if (
    watch === null || (props.queue !== null && work.queues.includes(props.queue) &&
      shown !== props.queue)
  ) {
    return [tabs, [seg("loading…", { dim: true })]];
  }
  const { queue, stats } = watch;
  const definition: Seg[] = [seg(`claim ${queue.claim}`)];
  if (queue.claim !== "disabled") definition.push(seg(` · lease ${span(queue.leaseMs)}`));
  definition.push(
    seg(queue.score === null ? " · no score: oldest first" : ` · score ${clean(queue.score.rule)}`),
  );
  if (queue.useCase !== null) definition.push(seg(` · ${clean(queue.useCase)}`, { dim: true }));
  const standing: Seg[] = [
    seg(`open ${stats.open}`, { bold: true }),
    seg(`  claimed ${stats.claimed}`),
    seg(`  expired ${stats.expired}`, stats.expired > 0 ? { color: "yellow" } : {}),
    seg(`  oldest ${watch.oldestAgeMs === null ? "-" : span(watch.oldestAgeMs)}`),
    seg(
      stats.leadMedianMs === null
        ? "  lead time - (none done in 1d)"
        : `  lead time ${span(stats.leadMedianMs)} (median of ${stats.done} done in 1d)`,
    ),
  ];
  const scoreWidth = 5;
  const keyWidth = Math.max(8, Math.min(24, Math.floor(width / 7)));
  const claimWidth = 18;
  const header = [
    seg(
      `  ${fit("SCORE", scoreWidth, true)} ${fit("KEY", keyWidth)} ${
        fit("CLAIM", claimWidth)
      } INPUTS`,
      { bold: true },
    ),
  ];
  const lines: Seg[][] = [tabs, definition, standing, header];
  if (watch.items.length === 0) return [...lines, [seg("  no open items", { dim: true })]];
  const rows = Math.max(1, props.height - WORK_HEADER_LINES);
  const [start, end] = windowOf(watch.items.length, props.cursor, rows);
  for (let i = start; i < end; i++) {
    const item = watch.items[i]!;
    const selected = i === props.cursor;
    lines.push([
      seg(selected ? "> " : "  ", { bold: true }),
      seg(fit(scoreText(item.score), scoreWidth, true), { inverse: selected, bold: true }),
      seg(" "),
      seg(fit(clean(item.key), keyWidth)),
      seg(" "),
      claimCell(item, now, claimWidth),
      seg(" "),
      seg(inputsText(item), { dim: queue.score === null }),
    ]);
  }
  return lines;
}
