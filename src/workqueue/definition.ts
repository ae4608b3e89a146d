/**
 * A work queue's rules, once for the schedules file and the library: what a
 * definition must say ({@linkcode checkWorkQueue}, each broken rule with its
 * code), its compiled form ({@linkcode compileWorkQueue}), and its score
 * ({@linkcode scoreItem}, {@linkcode scoreAt}).
 *
 * The score rule is a weighted formula: each input's value (a number, or a
 * boolean as 1 or 0, from the item's data) times its weight, plus the age's
 * weight per unit of age (`age: 2/day`). A formula linear in the age keeps
 * the order of a queue's items fixed as time passes (every item ages
 * alike), so the store orders by a rank written once per change of the
 * inputs (`score - rate * requested_at`), and the score shown is computed at
 * read from the stored inputs and the reader's now: it is always current,
 * and no periodic pass rewrites every open item as the clock moves.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { canonicalJson } from "../kernel/unique.ts";
import { DEFAULT_QUEUE } from "../kernel/worker.ts";
import type { StepRun } from "../workflow/types.ts";
import {
  AGE_INPUT,
  CLAIM_MODES,
  type ClaimMode,
  type ConfirmBy,
  QUEUE_ROLE,
  type ScoreRule,
  type ScoreWeight,
  type WorkAction,
  type WorkBulk,
  type WorkQueueDefinition,
  type WorkQueueOptions,
} from "./types.ts";

/** A claim's lease when the queue names none: one hour. @default 3_600_000 */
export const DEFAULT_LEASE_MS = 3_600_000;

/** What kind of problem a {@linkcode WorkQueueProblem} is. */
export type WorkQueueProblemCode =
  /** A queue without `claim:` (disabled, optional or required). */
  | "work-claim-missing"
  /** A `score:` without `rule:`. */
  | "work-score-rule-missing"
  /** A `score:` without a formula (`weights:`). */
  | "work-score-weights-missing"
  /** A score input without a weight, a weight of no input, or a weight of the wrong form. */
  | "work-input-unknown"
  /** An action naming no use case of the file, or a bulk action naming no action of the queue. */
  | "work-action-unknown"
  /** An action that runs nothing (neither `use_case` nor `run`), or both. */
  | "work-action-invalid"
  /** A bulk action with `money` and no `confirm_by`. */
  | "work-bulk-confirm-missing"
  /** A `confirm_by` that names no channel, or several. */
  | "work-confirm-invalid"
  /** Two actions, or two bulk actions, of one queue with one id. */
  | "work-id-duplicate"
  /** A `roles:` entry no person could hold (not by the rule of a role's name). */
  | "work-role-invalid";

/** One broken rule: its code, the path of the field under the queue, and what is wrong. */
export interface WorkQueueProblem {
  code: WorkQueueProblemCode;
  path: (string | number)[];
  message: string;
}

/** The units an age weight may be given per, in ms. */
const AGE_UNITS: Readonly<Record<string, number>> = {
  s: 1_000,
  second: 1_000,
  min: 60_000,
  minute: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  w: 604_800_000,
  week: 604_800_000,
};

/** `2/day`, `0.5 / h`: a weight per unit of age. */
const PER_AGE = /^\s*(-?\d+(?:\.\d+)?)\s*\/\s*([a-z]+)\s*$/;

/**
 * A weight as written (`0.01`, `2/day`) for `input`, or why it is not one:
 * the age's weight is per a unit of time, every other input's a number.
 */
export function parseWeight(
  input: string,
  value: unknown,
): { ok: true; weight: ScoreWeight } | { ok: false; reason: string } {
  if (input === AGE_INPUT) {
    const match = typeof value === "string" ? PER_AGE.exec(value) : null;
    const unitMs = match ? AGE_UNITS[match[2]!] : undefined;
    if (!match || unitMs === undefined) {
      return {
        ok: false,
        reason: `the weight of ${AGE_INPUT} must be a number per unit of time such as "2/day" ` +
          `(units: ${Object.keys(AGE_UNITS).join(", ")}), got ${JSON.stringify(value)}`,
      };
    }
    return {
      ok: true,
      weight: { kind: "per-age", weight: Number(match[1]), unitMs, unit: match[2]! },
    };
  }
  if (typeof value !== "number" || !Number.isFinite(value)) {
    return {
      ok: false,
      reason: `the weight of ${JSON.stringify(input)} must be a number, got ${
        JSON.stringify(value)
      }`,
    };
  }
  return { ok: true, weight: { kind: "per-unit", weight: value } };
}

/** Every rule `options` breaks; none when the queue may be built. */
export function checkWorkQueue(
  options: WorkQueueOptions,
  context: { useCases: readonly string[] } = { useCases: [] },
): WorkQueueProblem[] {
  const problems: WorkQueueProblem[] = [];
  const add = (code: WorkQueueProblemCode, path: (string | number)[], message: string) =>
    problems.push({ code, path, message });
  if (options.claim === undefined) {
    add("work-claim-missing", [], `needs claim: one of ${CLAIM_MODES.join(", ")}`);
  }
  const score = options.score;
  if (score !== undefined) {
    if (score.rule === undefined || score.rule.trim() === "") {
      add("work-score-rule-missing", ["score"], "score needs rule: the calculation rule it cites");
    }
    const inputs = score.inputs ?? [];
    if (score.weights === undefined) {
      add(
        "work-score-weights-missing",
        ["score"],
        `score needs weights: a weight for each of its inputs (${inputs.join(", ") || "none"})`,
      );
    } else {
      for (const [i, input] of inputs.entries()) {
        if (!(input in score.weights)) {
          add(
            "work-input-unknown",
            ["score", "inputs", i],
            `score input ${JSON.stringify(input)} has no weight in score.weights`,
          );
        }
      }
      for (const [input, value] of Object.entries(score.weights)) {
        if (!inputs.includes(input)) {
          add(
            "work-input-unknown",
            ["score", "weights", input],
            `score.weights names ${JSON.stringify(input)}, which is not one of score.inputs (${
              inputs.join(", ") || "none"
            })`,
          );
          continue;
        }
        const parsed = parseWeight(input, value);
        if (!parsed.ok) add("work-input-unknown", ["score", "weights", input], parsed.reason);
      }
    }
  }
  const actionIds = new Map<string, number>();
  for (const [i, action] of (options.actions ?? []).entries()) {
    const id = action.id ?? "";
    const first = actionIds.get(id);
    if (first !== undefined) {
      add(
        "work-id-duplicate",
        ["actions", i, "id"],
        `action id ${JSON.stringify(id)} is also actions[${first}]'s`,
      );
    } else actionIds.set(id, i);
    if (action.useCase === undefined && action.run === undefined) {
      add(
        "work-action-invalid",
        ["actions", i],
        `action ${JSON.stringify(id)} runs nothing: give use_case or run`,
      );
    } else if (action.useCase !== undefined && action.run !== undefined) {
      add(
        "work-action-invalid",
        ["actions", i, "run"],
        `action ${JSON.stringify(id)} has both use_case and run, choose one`,
      );
    } else if (action.useCase !== undefined && !context.useCases.includes(action.useCase)) {
      add(
        "work-action-unknown",
        ["actions", i, "use_case"],
        `action ${JSON.stringify(id)} names use case ${
          JSON.stringify(action.useCase)
        }, which is not one of use_cases (${
          context.useCases.slice(0, 10).join(", ") || "the file has none"
        })`,
      );
    }
  }
  const bulkIds = new Map<string, number>();
  for (const [i, bulk] of (options.bulk ?? []).entries()) {
    const id = bulk.id ?? "";
    const first = bulkIds.get(id);
    if (first !== undefined) {
      add(
        "work-id-duplicate",
        ["bulk", i, "id"],
        `bulk id ${JSON.stringify(id)} is also bulk[${first}]'s`,
      );
    } else bulkIds.set(id, i);
    if (bulk.action !== undefined && !actionIds.has(bulk.action)) {
      add(
        "work-action-unknown",
        ["bulk", i, "action"],
        `bulk ${JSON.stringify(id)} names action ${
          JSON.stringify(bulk.action)
        }, which is not an action of the queue (${
          [...actionIds.keys()].join(", ") || "it has none"
        })`,
      );
    }
    if (bulk.money !== undefined && bulk.confirmBy === undefined) {
      add(
        "work-bulk-confirm-missing",
        ["bulk", i],
        `bulk ${
          JSON.stringify(id)
        } moves money and needs confirm_by: totp, command, webhook or email`,
      );
    }
    if (bulk.confirmBy !== undefined) {
      const channels = ["totp", "command", "webhook", "email"].filter((k) =>
        bulk.confirmBy![k] !== undefined
      );
      if (channels.length !== 1) {
        add(
          "work-confirm-invalid",
          ["bulk", i, "confirm_by"],
          channels.length === 0
            ? "confirm_by needs one of totp, command, webhook or email"
            : `confirm_by has both ${channels[0]} and ${channels[1]}, choose one`,
        );
      }
    }
  }
  for (const [i, role] of (options.roles ?? []).entries()) {
    if (!QUEUE_ROLE.test(role)) {
      add(
        "work-role-invalid",
        ["roles", i],
        `role ${
          JSON.stringify(role)
        } is not a role's name (a lowercase letter, then up to 39 lowercase letters, digits, _ or -)`,
      );
    }
  }
  return problems;
}

/** A hash of `value`, short: the version a stored score names, a definition's hash. */
function hashOf(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value)).digest("base64url").slice(0, 16);
}

/** The score rule of `score` (a definition that passed {@linkcode checkWorkQueue}). */
export function compileScore(score: NonNullable<WorkQueueOptions["score"]>): ScoreRule {
  const inputs = [...(score.inputs ?? [])];
  const weights: Record<string, ScoreWeight> = {};
  for (const input of inputs) {
    const parsed = parseWeight(input, score.weights?.[input]);
    if (!parsed.ok) throw new TypeError(`score rule ${score.rule}: ${parsed.reason}`);
    weights[input] = parsed.weight;
  }
  const body = { rule: score.rule ?? "", inputs, weights };
  return { ...body, version: hashOf(body) };
}

/**
 * A queue's definition that passed {@linkcode checkWorkQueue}, compiled.
 * Throws a `TypeError` naming the first broken rule otherwise.
 *
 * @param useCases the file's use cases by id, for the actions that name one
 */
export function compileWorkQueue(
  options: WorkQueueOptions,
  useCases: Readonly<Record<string, StepRun>> = {},
): WorkQueueDefinition {
  const problem = checkWorkQueue(options, { useCases: Object.keys(useCases) })[0];
  if (problem) {
    throw new TypeError(`work queue ${JSON.stringify(options.id)}: ${problem.message}`);
  }
  const actions: WorkAction[] = (options.actions ?? []).map((a) => ({
    id: a.id ?? "",
    useCase: a.useCase ?? null,
    run: a.useCase !== undefined ? useCases[a.useCase]! : a.run!,
    queue: a.queue ?? DEFAULT_QUEUE,
  }));
  const bulk: WorkBulk[] = (options.bulk ?? []).map((b) => ({
    id: b.id ?? "",
    action: b.action ?? "",
    money: b.money ? { amount: b.money.amount ?? "", currency: b.money.currency ?? "" } : null,
    confirmBy: b.confirmBy ? confirmByOf(b.confirmBy) : null,
    secondPerson: b.secondPerson ?? false,
  }));
  const body = {
    id: options.id,
    useCase: options.useCase ?? null,
    claim: options.claim as ClaimMode,
    leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
    score: options.score ? compileScore(options.score) : null,
    show: [...(options.show ?? [])],
    actions,
    bulk,
    roles: [...(options.roles ?? [])],
  };
  return { ...body, hash: hashOf(body) };
}

function confirmByOf(value: Record<string, unknown>): ConfirmBy {
  if (value.totp !== undefined) return { kind: "totp", role: String(value.totp) };
  if (value.command !== undefined) {
    const command = value.command;
    return {
      kind: "command",
      argv: Array.isArray(command) ? command.map(String) : [String(command)],
    };
  }
  if (value.webhook !== undefined) return { kind: "webhook", url: String(value.webhook) };
  return { kind: "email", to: String(value.email) };
}

/** A data field's value as a score input: a finite number, a boolean as 1 or 0, a numeric string; else 0. */
export function inputValue(value: unknown): number {
  if (typeof value === "boolean") return value ? 1 : 0;
  if (typeof value === "number" && Number.isFinite(value)) return value;
  if (typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value))) {
    return Number(value);
  }
  return 0;
}

/**
 * What the store keeps of an item's score: `score`, the formula's value at
 * age 0; `rate`, what it gains per ms of age; `inputs`, the values of the
 * inputs other than the age as the data gave them (null where it gave none);
 * and the rule's `version`.
 */
export interface StoredScore {
  score: number;
  rate: number;
  inputs: Record<string, unknown>;
  version: string;
}

/** The score `rule` gives an item with `data` (its age term kept apart as a rate). */
export function scoreItem(rule: ScoreRule, data: unknown): StoredScore {
  const fields = data !== null && typeof data === "object" && !Array.isArray(data)
    ? data as Record<string, unknown>
    : {};
  let score = 0;
  let rate = 0;
  const inputs: Record<string, unknown> = {};
  for (const input of rule.inputs) {
    const weight = rule.weights[input]!;
    if (weight.kind === "per-age") {
      rate += weight.weight / weight.unitMs;
      continue;
    }
    const value = fields[input];
    inputs[input] = value === undefined ? null : value;
    score += weight.weight * inputValue(value);
  }
  return { score, rate, inputs, version: rule.version };
}

/** One input of a score as a reader checks it: its value and what it added. */
export interface ScoreTerm {
  input: string;
  /** The data's value; for `age`, the age in ms. */
  value: unknown;
  /** The weight as the rule reads it (`0.01`, `2/day`). */
  weight: string;
  /** What the input added to the score. */
  adds: number;
}

/**
 * An item's score at `now` and each input's part of it, from what the store
 * keeps (`score`, `rate`, `inputs`) and its `requestedAt`; null for an item
 * of an unscored queue. The terms follow the rule's inputs when the rule is
 * given and its version is the item's, else the stored inputs.
 */
export function scoreAt(
  item: {
    score: number | null;
    scoreRate: number | null;
    inputs: Record<string, unknown> | null;
    requestedAt: number;
    ruleVersion: string | null;
  },
  now: number,
  rule: ScoreRule | null = null,
): { score: number; terms: ScoreTerm[] } | null {
  if (item.score === null) return null;
  const age = Math.max(0, now - item.requestedAt);
  const rate = item.scoreRate ?? 0;
  const score = round(item.score + rate * age);
  const inputs = item.inputs ?? {};
  const terms: ScoreTerm[] = [];
  if (rule !== null && rule.version === item.ruleVersion) {
    for (const input of rule.inputs) {
      const w = rule.weights[input]!;
      if (w.kind === "per-age") {
        terms.push({ input, value: age, weight: `${w.weight}/${w.unit}`, adds: round(rate * age) });
      } else {
        const value = inputs[input] ?? null;
        terms.push({
          input,
          value,
          weight: String(w.weight),
          adds: round(w.weight * inputValue(value)),
        });
      }
    }
  } else {
    for (const [input, value] of Object.entries(inputs)) {
      terms.push({ input, value, weight: "?", adds: 0 });
    }
    if (rate !== 0) {
      terms.push({ input: AGE_INPUT, value: age, weight: "?", adds: round(rate * age) });
    }
  }
  return { score, terms };
}

/** To 2 decimals: a score people read, free of floating-point dust. */
function round(n: number): number {
  return Math.round(n * 100) / 100;
}
