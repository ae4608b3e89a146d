/**
 * The `workflows:` section of a schedules file as the workflow module sees
 * it: each entry becomes the {@linkcode WorkflowOptions} a library user
 * would pass (`depends_on` -> `dependsOn`, `use_case` -> `useCase`,
 * `timeout` -> `timeoutMs`...), and {@linkcode checkWorkflow}'s problems
 * (the record rules of a saga among them) become errors of the file, each
 * with the problem's code, at the YAML node its path names, so `jobs check`
 * and `defineWorkflow` hold a definition to the same rules.
 *
 * The conversion reads the parsed YAML as it is, not the schema's output,
 * so the record rules still run where the schema found something else wrong
 * (a misspelt key beside a missing compensation is two mistakes). A problem
 * at or under a node the schema already reported is the same mistake and is
 * left out.
 *
 * @module
 */

import type { BackoffSpec } from "../kernel/run_settings.ts";
import {
  checkWorkflow,
  type CompensationOptions,
  type WorkflowOptions,
  type WorkflowProblem,
  type WorkflowStepOptions,
} from "../workflow/definition.ts";
import { didYouMean } from "../text/suggest.ts";
import type { StepRun } from "../workflow/types.ts";
import { tryParseDuration } from "../text/durations.ts";
import { type Path, quote, type Reporter, valueAt } from "./report.ts";

/** The YAML key of each camelCase field of {@linkcode WorkflowOptions} that is spelt otherwise. */
const YAML_KEYS: Readonly<Record<string, string>> = {
  carriedBy: "carried_by",
  dependsOn: "depends_on",
  forEach: "for_each",
  useCase: "use_case",
  maxAttempts: "max_attempts",
  timeoutMs: "timeout",
};

type Fields = Record<string, unknown>;

function fields(value: unknown): Fields | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Fields
    : undefined;
}

/**
 * One entry of `workflows:` (the parsed YAML, or the schema's output of it)
 * as {@linkcode WorkflowOptions}. Never throws: a field of the wrong type is
 * passed on as something `checkWorkflow` can read (the schema reports it),
 * so every other rule still runs. A duration or backoff that does not parse
 * keeps its place as -1: a saga must not set it at all.
 *
 * @param runOf what a step's `run:` runs (only its presence matters to the check)
 */
export function workflowOptions(value: unknown, runOf: (run: unknown) => StepRun): WorkflowOptions {
  const w = fields(value) ?? {};
  const steps = Array.isArray(w.steps) ? w.steps.map((step) => stepOptions(step, runOf)) : [];
  return compact<WorkflowOptions>({
    id: w.id as string,
    // A misspelt `carried_by` (the schema reports it) still meant a saga.
    carriedBy: w.carried_by === undefined ? undefined : "workflow",
    queue: typeof w.queue === "string" ? w.queue : undefined,
    steps,
  });
}

function stepOptions(value: unknown, runOf: (run: unknown) => StepRun): WorkflowStepOptions {
  const s = fields(value) ?? {};
  const useCase = s.use_case;
  const compensation = s.compensation === undefined ? undefined : fields(s.compensation) ?? {};
  return compact<WorkflowStepOptions>({
    id: s.id as string,
    dependsOn: Array.isArray(s.depends_on) ? s.depends_on.map(String) : undefined,
    forEach: s.for_each === undefined ? undefined : String(s.for_each),
    optional: typeof s.optional === "boolean" ? s.optional : undefined,
    // A list stays a list: `checkWorkflow` names it `use-case-ambiguous`.
    useCase: useCase === undefined
      ? undefined
      : (Array.isArray(useCase) ? useCase.map(String) : String(useCase)) as string,
    run: s.run === undefined ? undefined : runOf(s.run),
    compensation: compensation &&
      compact({
        mode: compensation.mode,
        useCase: compensation.use_case,
        reason: compensation.reason,
      }) as CompensationOptions,
    queue: typeof s.queue === "string" ? s.queue : undefined,
    priority: typeof s.priority === "number" ? s.priority : undefined,
    maxAttempts: s.max_attempts === undefined
      ? undefined
      : typeof s.max_attempts === "number"
      ? s.max_attempts
      : -1,
    timeoutMs: s.timeout === undefined ? undefined : msOf(s.timeout),
    backoff: s.backoff === undefined ? undefined : backoffOf(s.backoff),
    tags: Array.isArray(s.tags) ? s.tags.map(String) : undefined,
  });
}

/** A duration as written (`"30s"`) or as the schema outputs it (ms); -1 when it is neither. */
function msOf(value: unknown): number {
  if (typeof value === "number") return value;
  if (typeof value !== "string") return -1;
  const parsed = tryParseDuration(value);
  return parsed.ok ? parsed.ms : -1;
}

/** `backoff: { fixed } | { exponential: { base, max } }` as a {@linkcode BackoffSpec}. */
export function backoffOf(value: unknown): BackoffSpec {
  const b = fields(value) ?? {};
  if (b.fixed !== undefined) return { kind: "fixed", delayMs: msOf(b.fixed) };
  const exponential = fields(b.exponential) ?? {};
  return { kind: "exponential", baseMs: msOf(exponential.base), maxMs: msOf(exponential.max) };
}

/** The YAML path of a problem of the workflow at `index`. */
export function problemPath(index: number, problem: WorkflowProblem): Path {
  return [
    "workflows",
    index,
    ...problem.path.map((segment) =>
      typeof segment === "string" ? YAML_KEYS[segment] ?? segment : segment
    ),
  ];
}

/** `checkWorkflow`'s words for fields, as the YAML spells them. */
function yamlWords(text: string): string {
  return text
    .replace(
      /\b(carriedBy|dependsOn|forEach|useCase|maxAttempts|timeoutMs)\b/g,
      (word) => YAML_KEYS[word]!,
    )
    .replace(/, got undefined$/, ", got nothing");
}

/** Whether `prefix` is `path` or a node above it. */
function within(prefix: Path, path: Path): boolean {
  return prefix.length <= path.length && prefix.every((segment, i) => segment === path[i]);
}

/**
 * Checks every entry of `workflows:` in the file `report` holds: ids unique,
 * then {@linkcode checkWorkflow} against the use cases of `use_cases:`.
 * Each problem is an error with the problem's code, at its node; one at or
 * under a path in `reported` (where the schema found something wrong) is
 * left out.
 */
export function checkWorkflows(report: Reporter, reported: readonly Path[]): void {
  const root = fields(report.raw);
  const list = Array.isArray(root?.workflows) ? root.workflows as unknown[] : [];
  const declared = new Set(Object.keys(fields(root?.use_cases) ?? {}));
  const firstLine = new Map<string, number>();
  for (const [index, item] of list.entries()) {
    if (!fields(item)) continue;
    const id = fields(item)!.id;
    if (typeof id === "string") {
      const line = report.at.of(report.offset(["workflows", index, "id"])).line;
      const first = firstLine.get(id);
      if (first === undefined) firstLine.set(id, line);
      else {
        report.add(
          "duplicate-id",
          ["workflows", index, "id"],
          `duplicate workflow id ${quote(id)}, first declared on line ${first}`,
        );
      }
    }
    // Only whether a step has a `run:` matters to the rules, not what it runs.
    const options = workflowOptions(item, () => ({ kind: "worker", worker: "run" }));
    for (const problem of checkWorkflow(options, declared)) {
      const path = problemPath(index, problem);
      if (reported.some((at) => within(at, path))) continue;
      let { code, message } = problem;
      const value = valueAt(report.raw, path);
      // A list in a plain workflow's step is as ambiguous as in a saga's.
      if (code === "use-case-unknown" && Array.isArray(value)) {
        code = "use-case-ambiguous";
        message = `step ${quote(String(options.steps[Number(path[3])]?.id))} maps to more than ` +
          `one use case (${value.join(", ")})`;
      }
      // The file's other errors suggest by edit distance; `checkWorkflow` only by substring.
      if ((code === "step-unknown" || code === "use-case-unknown") && typeof value === "string") {
        const known = code === "step-unknown"
          ? options.steps.map((step) => step.id).filter((id) => typeof id === "string")
          : declared;
        message = message.replace(/ \(did you mean .*\)$/, "") + didYouMean(value, known);
      }
      report.add(code, path, `${code}: ${yamlWords(message)}`);
    }
  }
}

/** Drops the keys whose value is undefined, so that optional fields are absent, not undefined. */
function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
