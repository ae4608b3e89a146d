/**
 * The `work_queues:` section of a schedules file as the work-queue module
 * sees it: each entry becomes the {@linkcode WorkQueueOptions} a library
 * user would pass, and {@linkcode checkWorkQueue}'s problems become errors
 * of the file, each with the problem's code, at the YAML node its path
 * names: `jobs check` and the library hold a queue to the same rules. A
 * problem at or under a node the schema already reported is the same
 * mistake and is left out.
 *
 * @module
 */

import { tryParseDuration } from "../text/durations.ts";
import type { StepRun } from "../workflow/types.ts";
import { checkWorkQueue } from "../workqueue/definition.ts";
import type { WorkQueueOptions } from "../workqueue/types.ts";
import { type Path, quote, type Reporter } from "./report.ts";

type Fields = Record<string, unknown>;

function fields(value: unknown): Fields | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Fields
    : undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function texts(value: unknown): string[] | undefined {
  return Array.isArray(value) ? value.map(String) : undefined;
}

/** Drops the keys whose value is undefined. */
function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

/**
 * One entry of `work_queues:` (the parsed YAML) as {@linkcode WorkQueueOptions}.
 * Never throws: a field of the wrong type is passed on as missing (the
 * schema reports it), so every other rule runs.
 *
 * @param runOf builds an action's `run:` (the checks only ask whether there is one)
 */
export function workQueueOptions(
  value: unknown,
  runOf: (run: unknown) => StepRun,
): WorkQueueOptions {
  const q = fields(value) ?? {};
  const score = fields(q.score);
  const lease = text(q.lease) === undefined ? undefined : tryParseDuration(text(q.lease)!);
  return compact<WorkQueueOptions>({
    id: text(q.id) ?? "",
    useCase: text(q.use_case),
    claim: q.claim === undefined || q.claim === null ? undefined : String(q.claim),
    leaseMs: lease?.ok ? lease.ms : undefined,
    score: score &&
      compact({
        rule: text(score.rule),
        inputs: texts(score.inputs),
        weights: fields(score.weights),
      }),
    show: texts(q.show),
    actions: Array.isArray(q.actions)
      ? q.actions.map((item) => {
        const a = fields(item) ?? {};
        return compact({
          id: text(a.id),
          useCase: text(a.use_case),
          run: fields(a.run) ? runOf(a.run) : undefined,
          queue: text(a.queue),
        });
      })
      : undefined,
    bulk: Array.isArray(q.bulk)
      ? q.bulk.map((item) => {
        const b = fields(item) ?? {};
        const money = fields(b.money);
        return compact({
          id: text(b.id),
          action: text(b.action),
          money: money && compact({ amount: text(money.amount), currency: text(money.currency) }),
          confirmBy: fields(b.confirm_by),
          secondPerson: typeof b.second_person === "boolean" ? b.second_person : undefined,
        });
      })
      : undefined,
    roles: texts(q.roles),
  });
}

/** Whether `prefix` is `path` or a node above it. */
function within(prefix: Path, path: Path): boolean {
  return prefix.length <= path.length && prefix.every((segment, i) => segment === path[i]);
}

/**
 * Checks every entry of `work_queues:` in the file `report` holds: ids
 * unique, then {@linkcode checkWorkQueue} against the file's use cases.
 * Each problem is an error with its code, at its node; one at or under a
 * path in `reported` is left out.
 */
export function checkWorkQueues(report: Reporter, reported: readonly Path[]): void {
  const root = fields(report.raw);
  const list = Array.isArray(root?.work_queues) ? root.work_queues as unknown[] : [];
  const useCases = Object.keys(fields(root?.use_cases) ?? {});
  const firstLine = new Map<string, number>();
  for (const [index, item] of list.entries()) {
    if (!fields(item)) continue;
    const id = fields(item)!.id;
    if (typeof id === "string") {
      const line = report.at.of(report.offset(["work_queues", index, "id"])).line;
      const first = firstLine.get(id);
      if (first === undefined) firstLine.set(id, line);
      else {
        report.add(
          "duplicate-id",
          ["work_queues", index, "id"],
          `duplicate work queue id ${quote(id)}, first declared on line ${first}`,
        );
      }
    }
    const options = workQueueOptions(item, () => ({ kind: "worker", worker: "run" }));
    for (const problem of checkWorkQueue(options, { useCases })) {
      const path: Path = ["work_queues", index, ...problem.path];
      if (reported.some((at) => within(at, path))) continue;
      report.add(problem.code, path, `${problem.code}: ${problem.message}`);
    }
  }
}
