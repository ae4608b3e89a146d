/**
 * Schedules as the command line and the TUI show and act on them: each
 * schedule of `schedules.yaml` joined with its stored state (and those only
 * the store remembers), the definitions the store last synced (what a
 * daemon runs while the file has errors), a schedule's latest occurrence;
 * and the operator's audited actions: disable or enable one (stored, so it
 * survives restarts and reloads) and run one now, as the planner builds its
 * occurrences, guarded for a manual schedule.
 *
 * Each takes an optional tenant: a tenant's principal reads and acts on
 * that tenant's schedules only (the store filters in its statements), and
 * null or none is installation-wide.
 *
 * @module
 */

import type { InsertResult, Job } from "../kernel/types.ts";
import { next, occurrenceId } from "../schedule/occurrences.ts";
import { occurrenceJob } from "../schedule/plan.ts";
import type { Schedule } from "../schedule/types.ts";
import type { ScheduleConfig } from "../config/types.ts";
import type { ScheduleOutcome, ScheduleRow, Store } from "../store/store.ts";
import { type Actor, audit } from "./audit.ts";
import type { LiveSchedules } from "./definitions.ts";
import { iso } from "./job_json.ts";
import { redactJob } from "./jobs.ts";

/** One schedule: its declaration (when the file has it) joined with its stored state. */
export interface ScheduleStatus {
  id: string;
  /** The live file declares it; false for a schedule only the store remembers. */
  declared: boolean;
  /** `manual: true` in the file. */
  manual: boolean;
  /** Enabled in the file and in the store. */
  enabled: boolean;
  /** `file` when the file says `enabled: false`, `store` when an operator disabled it. */
  disabledIn: "file" | "store" | null;
  disabledReason: string | null;
  disabledBy: string | null;
  disabledAt: number | null;
  /** The next instant it runs, or null (manual, disabled, ended, or not declared). */
  next: number | null;
  nextOccurrence: string | null;
  lastPlannedFor: number | null;
  lastStartedAt: number | null;
  lastCompletedAt: number | null;
  misfires: number;
  lastMisfireFor: number | null;
  /** How its newest final occurrence ended, or null when none has. */
  lastOutcome: ScheduleOutcome["lastOutcome"] | null;
  /** When that occurrence ended. */
  lastOutcomeAt: number | null;
  /** Its current run of failures: discarded occurrences since the last completed one. */
  failures: number;
  /** The hash of the definition the store last synced (what a daemon runs), or null. */
  definitionHash: string | null;
  /**
   * The IANA zone its rhythm is read in: the file's, else the definition the
   * store last synced; null when neither says. Its instants are shown in it
   * beside UTC.
   */
  timezone: string | null;
}

/** A schedule's status as `--json` and `GET /api/v1/schedules` show it: instants as ISO UTC. */
export function scheduleJson(s: ScheduleStatus) {
  return {
    ...s,
    disabledAt: iso(s.disabledAt),
    next: iso(s.next),
    lastPlannedFor: iso(s.lastPlannedFor),
    lastStartedAt: iso(s.lastStartedAt),
    lastCompletedAt: iso(s.lastCompletedAt),
    lastMisfireFor: iso(s.lastMisfireFor),
    lastOutcomeAt: iso(s.lastOutcomeAt),
  };
}

/** A schedule's current run of failures in words (`5 failures in a row`), or null at 0. */
export function failuresText(failures: number): string | null {
  if (failures === 0) return null;
  return `${failures} ${failures === 1 ? "failure" : "failures"} in a row`;
}

/**
 * Disables or enables a schedule. Stored, so it survives restarts and
 * reloads of `schedules.yaml`. An occurrence already claimed finishes;
 * nothing new is planned while disabled, and enabling applies the misfire
 * policy to the gap. `declared` says whether the current file declares it:
 * a schedule must be declared or already known to the store. With
 * `tenant`, only that tenant's schedule: another's is refused as unknown.
 */
export async function setScheduleEnabled(
  store: Store,
  id: string,
  enabled: boolean,
  who: Actor,
  declared: { hash: string; tenant: string | null } | null,
  tenant?: string | null,
): Promise<{ id: string; enabled: boolean; was: boolean }> {
  // Another tenant's declaration is no declaration to this tenant.
  const own = tenant == null || declared?.tenant === tenant ? declared : null;
  return await store.transaction(async (tx) => {
    const [row] = await tx.schedulesList({ ids: [id], ...scope(tenant) });
    if (!row && !own) throw new Error(`no schedule "${id}" in the file or the store`);
    if (!row && own) {
      await tx.schedulesSync({ schedules: [{ id, ...own }], now: who.now });
    }
    const was = row?.enabled ?? true;
    await tx.scheduleSetEnabled({
      id,
      enabled,
      reason: who.reason,
      actor: who.actor,
      now: who.now,
    });
    await audit(tx, who, enabled ? "schedule.enable" : "schedule.disable", `schedule:${id}`, {
      was,
    });
    return { id, enabled, was };
  });
}

/** Raised when a manual schedule's guard refuses a run; nothing was written. */
export class GuardRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "GuardRefused";
  }
}

/** Raised when a run now's occurrence (`<id>@<now>`) already exists; nothing was written. */
export class OccurrenceExists extends Error {
  constructor(readonly occurrence: string, readonly jobId: number) {
    super(`occurrence "${occurrence}" already exists as job ${jobId}`);
    this.name = "OccurrenceExists";
  }
}

/**
 * Runs a schedule now: one occurrence built as the planner builds them, with
 * the identity `<id>@<now>` and `meta.manual = true`. A `manual: true`
 * schedule runs only where `environment` equals its `runs_where`, and only
 * with a reason. Audited as `schedule.run` on `schedule:<id>`. With
 * `tenant`, only that tenant's schedule runs: another's is refused as unknown.
 */
export async function runScheduleNow(
  store: Store,
  schedule: Schedule,
  who: Actor,
  environment: string | null,
  tenant?: string | null,
): Promise<InsertResult & { occurrence: string }> {
  if (tenant != null && (schedule.tenant ?? null) !== tenant) {
    throw new Error(`no schedule "${schedule.id}" in the file or the store`);
  }
  if (schedule.rhythm.kind === "manual") {
    if (environment !== schedule.runsWhere) {
      throw new GuardRefused(
        `schedule "${schedule.id}" runs only where the environment is ` +
          `"${schedule.runsWhere}", and this is ${
            environment === null ? "not set" : `"${environment}"`
          }`,
      );
    }
    if (!who.reason) {
      throw new GuardRefused(`schedule "${schedule.id}" is manual: a reason is required`);
    }
  }
  const occurrence = occurrenceId(schedule.id, who.now);
  const planned = occurrenceJob(schedule, {
    at: who.now,
    occurrence,
    local: new Date(who.now).toISOString(),
    note: "manual",
  });
  // The daemon that claims it checks runsWhere against its --environment.
  const meta = {
    ...JSON.parse(planned.meta),
    manual: true,
    ...(schedule.runsWhere === undefined ? {} : { runsWhere: schedule.runsWhere }),
  };
  return await store.transaction(async (tx) => {
    const [result] = await tx.jobsInsert({
      jobs: [{ ...planned, meta: JSON.stringify(meta) }],
      now: who.now,
    });
    if (!result) throw new Error(`schedule "${schedule.id}": the insert returned nothing`);
    if (result.duplicate) {
      throw new OccurrenceExists(occurrence, result.id);
    }
    await audit(tx, who, "schedule.run", `schedule:${schedule.id}`, {
      job: result.id,
      occurrence,
      trigger: schedule.rhythm.kind === "manual" ? "manual-schedule" : "run-now",
      environment,
    });
    return { ...result, occurrence };
  });
}

/**
 * The file's schedules in file order, then those only the store remembers,
 * by id; with `tenant`, that tenant's only (the store's rows filtered in
 * its statements, the file's by their `tenant`).
 */
export async function schedulesView(
  store: Store | null,
  config: ScheduleConfig | null,
  now: number,
  tenant?: string | null,
): Promise<ScheduleStatus[]> {
  const rows = new Map(
    (store ? await store.schedulesList(scope(tenant)) : []).map((r) => [r.id, r]),
  );
  const outcomes = new Map(
    (store ? await store.schedulesOutcomes(scope(tenant)) : []).map((o) => [o.scheduleId, o]),
  );
  const declared = ofTenant(config?.schedules ?? [], tenant).map((s) =>
    scheduleStatus(s, rows.get(s.id), now, outcomes.get(s.id))
  );
  const known = new Set(declared.map((s) => s.id));
  const forgotten = [...rows.values()].filter((r) => !known.has(r.id))
    .map((r) => scheduleStatus(null, r, now, outcomes.get(r.id)));
  return [...declared, ...forgotten];
}

/** One schedule's status from its declaration and/or its stored row. */
export function scheduleStatus(
  schedule: Schedule | null,
  row: ScheduleRow | undefined,
  now: number,
  outcome?: ScheduleOutcome,
): ScheduleStatus {
  const inFile = schedule !== null && !schedule.enabled;
  const inStore = row !== undefined && !row.enabled;
  const enabled = schedule !== null && !inFile && !inStore;
  const [following] = enabled ? next(schedule, now, 1) : [];
  return {
    id: schedule?.id ?? row!.id,
    declared: schedule !== null,
    manual: schedule?.rhythm.kind === "manual",
    enabled,
    disabledIn: inFile ? "file" : inStore ? "store" : null,
    disabledReason: inFile ? "disabled in the file" : inStore ? row.disabledReason : null,
    disabledBy: inStore && !inFile ? row.disabledBy : null,
    disabledAt: inStore && !inFile ? row.disabledAt : null,
    next: following?.at ?? null,
    nextOccurrence: following?.occurrence ?? null,
    lastPlannedFor: row?.lastPlannedFor ?? null,
    lastStartedAt: row?.lastStartedAt ?? null,
    lastCompletedAt: row?.lastCompletedAt ?? null,
    misfires: row?.misfires ?? 0,
    lastMisfireFor: row?.lastMisfireFor ?? null,
    lastOutcome: outcome?.lastOutcome ?? null,
    lastOutcomeAt: outcome?.lastOutcomeAt ?? null,
    failures: outcome?.failures ?? 0,
    definitionHash: row?.definitionHash ?? null,
    timezone: schedule?.timezone ?? (row ? storedSchedules([row])[0]?.timezone ?? null : null),
  };
}

/**
 * The schedules as the store last synced them, by id: what a daemon runs
 * while the schedules file has errors, since it keeps the last good
 * definitions. A row without a stored definition (synced by an older
 * daemon) or with one that does not parse is left out.
 */
export function storedSchedules(rows: readonly ScheduleRow[]): Schedule[] {
  const schedules: Schedule[] = [];
  for (const row of rows) {
    if (row.definition === null) continue;
    try {
      const schedule = JSON.parse(row.definition) as Schedule;
      if (schedule?.id === row.id && schedule.rhythm) schedules.push(schedule);
    } catch {
      // A definition this program cannot read: the row is shown as the store knows it.
    }
  }
  return schedules;
}

/**
 * A configuration of only the schedules the store last synced (see
 * {@linkcode storedSchedules}), for the views to show what runs while the
 * file on disk has errors and is not in force. Null without a store. With
 * `tenant`, that tenant's schedules only.
 */
export async function storedConfig(
  store: Store | null,
  tenant?: string | null,
): Promise<ScheduleConfig | null> {
  if (store === null) return null;
  return {
    version: 1,
    queues: {},
    schedules: storedSchedules(await store.schedulesList(scope(tenant))),
    useCases: {},
    workflows: [],
    pipelines: [],
    reports: [],
    workQueues: [],
  };
}

/** How a retry or replay names the store's synced definitions as the source of live ones. */
export const STORED_DEFINITIONS = "the definitions the store last synced";

/**
 * The live definitions of `ids`' schedules as the store last synced them
 * (see {@linkcode storedSchedules}), for a retry or replay that has no
 * schedules file of its own to read (the HTTP API): what the daemon runs.
 */
export async function storedLiveSchedules(
  store: Store,
  ids: readonly string[],
): Promise<LiveSchedules> {
  const rows = ids.length === 0 ? [] : await store.schedulesList({ ids: [...ids] });
  return { file: STORED_DEFINITIONS, schedules: storedSchedules(rows) };
}

/**
 * The latest occurrence of a schedule in the store (the last one planned),
 * or null; with `tenant`, only a job of that tenant.
 */
export async function latestOccurrence(
  store: Store,
  scheduleId: string,
  tenant?: string | null,
): Promise<Job | null> {
  const [job] = await store.jobsList({ scheduleId, desc: true, limit: 1, ...scope(tenant) });
  return job && job.scheduleId === scheduleId ? redactJob(job) : null;
}

/** The store's filter for `tenant`: none for null or none (installation-wide). */
function scope(tenant: string | null | undefined): { tenant?: string } {
  return tenant == null ? {} : { tenant };
}

/** The declared schedules of `tenant` (every one for null or none). */
function ofTenant(schedules: readonly Schedule[], tenant: string | null | undefined): Schedule[] {
  return tenant == null ? [...schedules] : schedules.filter((s) => s.tenant === tenant);
}
