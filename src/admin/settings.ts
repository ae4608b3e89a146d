/**
 * The settings an operator may change on a running installation: the
 * global ones and each report's limits (`src/report/limits.ts`). The view
 * lists every known setting with its value, where it came from (the
 * default, the schedules file, or a stored setting) and, for a stored one,
 * who set it, when and why, read from the `audit` row of its last change.
 * Setting and unsetting validate the key and the value, and write the
 * setting and its audit row in one store transaction, so a setting is never
 * changed without its audit row nor the other way round.
 *
 * The known settings come from the schedules file's reports: a report's
 * limits can be set only while the file declares the report. A stored
 * setting of a report the file no longer declares can still be unset.
 *
 * @module
 */

import {
  formatValue,
  type KnownSetting,
  knownSettings,
  type LimitedReport,
  type LimitSource,
  parseLimitKey,
  parseValue,
  SettingValueError,
  type ValueKind,
} from "../report/limits.ts";
import type { AuditRow, Store, StoreTx } from "../store/store.ts";
import { didYouMean, editDistance, nearest } from "../text/suggest.ts";
import { type Actor, audit } from "./audit.ts";
import { iso } from "./job_json.ts";

/** The audit actions of settings. */
export const SETTING_ACTIONS = ["setting.set", "setting.unset"] as const;

/** `setting:<key>`: the audit target of one setting. */
export function settingTarget(key: string): string {
  return `setting:${key}`;
}

/** Who changed a setting last, when and why (from its `audit` row). */
export interface SettingChange {
  actor: string;
  at: number;
  reason: string | null;
  action: string;
}

/** One setting as `jobs settings` shows it. */
export interface SettingView {
  key: string;
  kind: ValueKind;
  /** The value that applies, canonical; null when the stored value is invalid (see `problem`). */
  value: number | null;
  /** The value as people write it (`30m`, `1GiB`, `500000`). */
  display: string;
  source: LimitSource;
  /** The built-in value, canonical. */
  default: number;
  /** The schedules file's value, canonical, or null when the file sets none. */
  file: number | null;
  /** The report and limit of a report's setting; null for a global one. */
  report: string | null;
  limit: string | null;
  description: string;
  /** The last change, when the value is a stored setting and its audit row was found. */
  changed: SettingChange | null;
  /** Why a stored value is not used (not a positive number); absent when it is fine. */
  problem?: string;
}

/** Raised when a setting cannot be changed: an unknown key, a bad value, a missing reason. */
export class SettingRefused extends Error {
  constructor(
    readonly why: "unknown-key" | "bad-value" | "reason-missing",
    message: string,
  ) {
    super(message);
    this.name = "SettingRefused";
  }
}

type Reads = Pick<StoreTx, "settingGet">;

/** The value that applies to `spec`, from the stored value (as read), the file or the default. */
function applied(
  spec: KnownSetting,
  stored: unknown,
): { value: number | null; source: LimitSource; problem?: string } {
  if (stored !== null) {
    if (typeof stored === "number" && Number.isSafeInteger(stored) && stored > 0) {
      return { value: stored, source: "setting" };
    }
    return {
      value: null,
      source: "setting",
      problem: new SettingValueError(
        spec.key,
        stored,
        "holds a stored value that is not a positive number",
      ).message,
    };
  }
  if (spec.file !== null) return { value: spec.file, source: "file" };
  return { value: spec.default, source: "default" };
}

/** The setting as it stands, and what is stored for it (null: nothing). */
async function viewOf(
  store: Reads,
  spec: KnownSetting,
): Promise<Omit<SettingView, "changed"> & { stored: unknown }> {
  const stored = (await store.settingGet({ key: spec.key })) ?? null;
  const { value, source, problem } = applied(spec, stored);
  return {
    key: spec.key,
    kind: spec.kind,
    value,
    display: value === null ? `invalid ${JSON.stringify(stored)}` : formatValue(spec.kind, value),
    source,
    default: spec.default,
    file: spec.file,
    report: spec.report,
    limit: spec.limit,
    description: spec.description,
    ...(problem === undefined ? {} : { problem }),
    stored,
  };
}

/** The last `setting.set` or `setting.unset` row of `key`, or null. */
function lastChange(rows: AuditRow[]): SettingChange | null {
  const row = rows.filter((r) => (SETTING_ACTIONS as readonly string[]).includes(r.action)).at(-1);
  return row ? { actor: row.actor, at: row.at, reason: row.reason, action: row.action } : null;
}

/**
 * Every setting there is for `reports` (the global ones first, then each
 * report's limits in order), with the value that applies, its source and,
 * when stored, who set it, when and why.
 */
export async function settingsView(
  store: Store,
  reports: readonly LimitedReport[],
): Promise<SettingView[]> {
  const views: SettingView[] = [];
  for (const spec of knownSettings(reports)) {
    const { stored: _stored, ...view } = await viewOf(store, spec);
    const changed = view.source === "setting"
      ? lastChange(await store.auditList({ target: settingTarget(spec.key) }))
      : null;
    views.push({ ...view, changed });
  }
  return views;
}

/** The known setting `key`, or a refusal naming it with the nearest keys. */
function known(key: string, reports: readonly LimitedReport[]): KnownSetting {
  const all = knownSettings(reports);
  const found = all.find((s) => s.key === key);
  if (found) return found;
  const limit = parseLimitKey(key);
  // The nearest keys only: every key of a report shares its long prefix, so
  // the second nearest is close enough to be offered and still not meant.
  const close = nearest(key, all.map((s) => s.key));
  const best = close[0] === undefined ? 0 : editDistance(key, close[0]);
  const hint = didYouMean(key, close.filter((k) => editDistance(key, k) === best));
  const why = limit && !reports.some((r) => r.id === limit.report)
    ? `: the schedules file declares no report ${JSON.stringify(limit.report)}`
    : "";
  throw new SettingRefused("unknown-key", `unknown setting ${JSON.stringify(key)}${why}${hint}`);
}

function requireReason(who: Actor): asserts who is Actor & { reason: string } {
  if (who.reason === null || who.reason.trim() === "") {
    throw new SettingRefused("reason-missing", "a reason is required to change a setting");
  }
}

/** A setting's value before and after a change. */
export interface SettingState {
  value: number | null;
  display: string;
  source: LimitSource;
}

/** What {@linkcode setSetting} and {@linkcode unsetSetting} did. */
export interface SettingChangeResult {
  key: string;
  was: SettingState;
  now: SettingState;
  /** False when `unsetSetting` found nothing stored: nothing was written, nothing audited. */
  changed: boolean;
}

function state(view: Omit<SettingView, "changed">): SettingState {
  return { value: view.value, display: view.display, source: view.source };
}

/**
 * Stores `value` (as people write it: `500`, `10m`, `200MB`, `PT15M`) for
 * the known setting `key`, overriding the file and the default, and audits
 * it (`setting.set` on `setting:<key>`, with the old and new values), in one
 * transaction. A reason is required.
 *
 * @throws {SettingRefused} for an unknown key (with the nearest keys), a
 * value not of the setting's kind (naming key and value), or no reason
 */
export async function setSetting(
  store: Store,
  params: { key: string; value: string; reports: readonly LimitedReport[] },
  who: Actor,
): Promise<SettingChangeResult> {
  const spec = known(params.key, params.reports);
  let value: number;
  try {
    value = parseValue(spec.key, spec.kind, params.value);
  } catch (error) {
    if (error instanceof SettingValueError) throw new SettingRefused("bad-value", error.message);
    throw error;
  }
  requireReason(who);
  return await store.transaction(async (tx) => {
    const was = state(await viewOf(tx, spec));
    await tx.settingSet({ key: spec.key, value, now: who.now });
    const now: SettingState = { value, display: formatValue(spec.kind, value), source: "setting" };
    await audit(tx, who, "setting.set", settingTarget(spec.key), {
      old: was.value,
      oldDisplay: was.display,
      oldSource: was.source,
      new: now.value,
      newDisplay: now.display,
    });
    return { key: spec.key, was, now, changed: true };
  });
}

/**
 * Removes the stored value of `key`, so the file's value or the default
 * applies again, and audits it (`setting.unset` on `setting:<key>`), in one
 * transaction. A key the file no longer knows may be unset when a value is
 * stored for it (a report removed from the file). Nothing stored: nothing
 * written, `changed: false`. A reason is required.
 *
 * @throws {SettingRefused} for an unknown key with nothing stored, or no reason
 */
export async function unsetSetting(
  store: Store,
  params: { key: string; reports: readonly LimitedReport[] },
  who: Actor,
): Promise<SettingChangeResult> {
  requireReason(who);
  let spec: KnownSetting;
  try {
    spec = known(params.key, params.reports);
  } catch (error) {
    // A report's setting left behind by a report the file dropped: let it go.
    const limit = parseLimitKey(params.key);
    const stored = limit ? await store.settingGet({ key: params.key }) : null;
    if (!limit || stored === null || stored === undefined) throw error;
    spec = knownSettings([{ id: limit.report }]).find((s) => s.key === params.key)!;
  }
  return await store.transaction(async (tx) => {
    const before = await viewOf(tx, spec);
    const was = state(before);
    if (before.stored === null) {
      return { key: spec.key, was, now: was, changed: false };
    }
    await tx.settingDelete({ key: spec.key });
    const now = state(await viewOf(tx, spec));
    await audit(tx, who, "setting.unset", settingTarget(spec.key), {
      old: was.value,
      oldDisplay: was.display,
      new: now.value,
      newDisplay: now.display,
      newSource: now.source,
    });
    return { key: spec.key, was, now, changed: true };
  });
}

/** A setting as `jobs settings --json` and the API show it: the change's instant as ISO UTC. */
export function settingJson(view: SettingView) {
  return { ...view, changed: view.changed && { ...view.changed, at: iso(view.changed.at) } };
}

/** A change as `jobs settings set|unset --json` and the API show it. */
export function settingChangeJson(result: SettingChangeResult) {
  return {
    key: result.key,
    changed: result.changed,
    value: result.now.value,
    display: result.now.display,
    source: result.now.source,
    was: result.was,
  };
}
