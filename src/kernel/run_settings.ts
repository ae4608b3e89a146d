/**
 * A job's run settings: what a schedule sets for each of its occurrences
 * (timeout, backoff, retention) and the hash of the definition the job was
 * built from. They travel in the job's meta under fixed keys; this module is
 * the one place that writes and reads them, so the executor, the runners and
 * the views see one typed value instead of each parsing meta keys.
 *
 * Max attempts and priority are columns of the job, not settings.
 *
 * @module
 */

/** Delay between attempts, as a schedule declares it. */
export type BackoffSpec =
  | { kind: "fixed"; delayMs: number }
  | { kind: "exponential"; baseMs: number; maxMs: number };

/** What a job's meta says about how to run it. Every field is optional. */
export interface RunSettings {
  /** Abort an attempt after this many ms (wins over the worker's own `timeout`). */
  timeoutMs?: number;
  /** Delay before a retry (wins over the worker's own `backoff`). */
  backoff?: BackoffSpec;
  /** How long the job is kept once final. */
  retentionMs?: number;
  /** The hash of the schedule definition the job was built from (see `definitionHash`). */
  definition?: string;
}

/** The meta keys that hold run settings; every other key is the job's own. */
export const RUN_SETTING_KEYS = ["timeoutMs", "backoff", "retentionMs", "definition"] as const;

/** The meta entries for `settings`, to merge into a job's meta. */
export function runSettingsMeta(settings: RunSettings): Record<string, unknown> {
  const meta: Record<string, unknown> = {};
  if (settings.timeoutMs !== undefined) meta.timeoutMs = settings.timeoutMs;
  if (settings.backoff !== undefined) meta.backoff = settings.backoff;
  if (settings.retentionMs !== undefined) meta.retentionMs = settings.retentionMs;
  if (settings.definition !== undefined) meta.definition = settings.definition;
  return meta;
}

/**
 * The run settings of a job's meta (parsed, or its text). A value of the
 * wrong shape is left out, never thrown: a job that cannot be read as
 * configured runs with the worker's defaults rather than not at all.
 */
export function runSettingsOf(meta: Record<string, unknown> | string): RunSettings {
  let m: Record<string, unknown>;
  if (typeof meta === "string") {
    try {
      const parsed = JSON.parse(meta);
      if (parsed === null || typeof parsed !== "object") return {};
      m = parsed;
    } catch {
      return {};
    }
  } else {
    m = meta;
  }
  const settings: RunSettings = {};
  if (isPositive(m.timeoutMs)) settings.timeoutMs = m.timeoutMs;
  const backoff = backoffOf(m.backoff);
  if (backoff) settings.backoff = backoff;
  if (isPositive(m.retentionMs)) settings.retentionMs = m.retentionMs;
  if (typeof m.definition === "string" && m.definition !== "") settings.definition = m.definition;
  return settings;
}

/** `meta` without its run settings: the keys a job keeps whatever definition it runs. */
export function withoutRunSettings(meta: Record<string, unknown>): Record<string, unknown> {
  const rest = { ...meta };
  for (const key of RUN_SETTING_KEYS) delete rest[key];
  return rest;
}

function backoffOf(value: unknown): BackoffSpec | null {
  if (value === null || typeof value !== "object") return null;
  const b = value as Record<string, unknown>;
  if (b.kind === "fixed" && isNonNegative(b.delayMs)) return { kind: "fixed", delayMs: b.delayMs };
  if (b.kind === "exponential" && isNonNegative(b.baseMs) && isNonNegative(b.maxMs)) {
    return { kind: "exponential", baseMs: b.baseMs, maxMs: b.maxMs };
  }
  return null;
}

function isPositive(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value > 0;
}

function isNonNegative(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0;
}
