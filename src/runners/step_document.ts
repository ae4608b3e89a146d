/**
 * The step document: what a `command` or `http` step of a workflow run is
 * told about its place in the run, as one JSON object. The command runner
 * writes it to the file named by `JOBS_STEP_INPUT`; the HTTP runner sends it
 * as the request body when the run sets none. Both runners build it here, so
 * a program reads the same fields whichever way it is run.
 *
 * ```json
 * {
 *   "run": 12, "workflow": "lend-copy", "step": "charge-fee", "kind": "step",
 *   "use_case": "use-case/billing.charge-fee",
 *   "input": { "copy": "c-1" },
 *   "results": { "place-hold": { "hold": "h-9" } },
 *   "index": null, "item": null, "compensates": null, "cursor": null
 * }
 * ```
 *
 * - `kind` is `step`, or `compensation` for the job that undoes `step`;
 *   `compensates` is then `{ step, result }`, the result of the step undone.
 * - `results` holds the results of the steps it depends on, by step id (a
 *   fanned-out dependency's is the list of its items' results, in item
 *   order; a discarded optional one's is null).
 * - `index` and `item` are the item's index and value for an item of a
 *   fanned-out step, else null.
 * - `cursor` is the resume position an earlier attempt of the step wrote, or
 *   null.
 * - `use_case` is null when the step maps to none.
 *
 * @module
 */

import type { JobContext, StepContext } from "../kernel/worker.ts";

/** The JSON object a command or HTTP step gets; see the module doc. */
export interface StepDocument {
  run: number;
  workflow: string;
  step: string;
  kind: "step" | "compensation";
  use_case: string | null;
  input: unknown;
  results: Readonly<Record<string, unknown>>;
  index: number | null;
  item: unknown;
  compensates: { readonly step: string; readonly result: unknown } | null;
  cursor: unknown;
}

/**
 * The step document of `ctx`'s step, its cursor read from the store: when
 * the read fails, so does the attempt (retried like any error), since a
 * step told no cursor would start again from the beginning.
 */
export async function stepDocument(step: StepContext, ctx: JobContext): Promise<StepDocument> {
  const cursor = await ctx.cursor.get();
  return {
    run: step.run,
    workflow: step.workflow,
    step: step.step,
    kind: step.kind,
    use_case: step.useCase,
    input: step.input ?? null,
    results: step.results,
    index: step.index,
    // JSON would drop an undefined item: a document always has every field.
    item: step.index === null ? null : step.item ?? null,
    compensates: step.compensates,
    cursor: cursor ?? null,
  };
}
