/**
 * What a workflow step's job carries in its meta, as the executor reads it
 * to give the job its step context and its payload. The workflow engine
 * (`src/workflow/`) writes it.
 *
 * @module
 */

/**
 * What a step's job is told about its place in a run, in its meta under
 * `workflow`. `payload` is present for command and HTTP steps (whose args
 * are their spec); a worker step gets the payload as its args.
 */
export interface StepMeta {
  run: number;
  workflow: string;
  step: string;
  /** The item index of a fanned-out step, or -1. */
  item: number;
  kind: "step" | "compensation";
  useCase: string | null;
  payload?: StepPayload;
}

/**
 * What a step gets: the run's input and the results of the steps it depends
 * on (a fanned-out dependency's is the list of its items' results, in item
 * order; a discarded optional one's is null). An item of a fanned-out step
 * gets its item, and the results of its other dependencies (not the list it
 * is an item of); a compensation gets the result of the step it undoes.
 */
export interface StepPayload {
  input: unknown;
  results: Record<string, unknown>;
  item?: unknown;
  /** A compensation's step, and what that step returned. */
  compensates?: { step: string; result: unknown };
}

/** The meta key of {@linkcode StepMeta}. */
export const STEP_META_KEY = "workflow";
