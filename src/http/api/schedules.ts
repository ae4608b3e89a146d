/**
 * `/api/v1/schedules`: the schedules view of `jobs status` (as the store
 * last synced them: what the daemon runs, as the API has no schedules file
 * of its own), a schedule's next occurrences (`jobs next`, from its stored
 * definition), and the doors of `jobs disable|enable` and `jobs run`.
 *
 * A tenant's principal sees and acts on its tenant's schedules only (a
 * `tenant:` schedule, or its own `<id>:<tenant>` of a `tenants:` list): the
 * tenant goes into the store's statement, and another tenant's schedule is
 * 404, as one that does not exist.
 *
 * @module
 */

import { z } from "zod";
import {
  GuardRefused,
  OccurrenceExists,
  runScheduleNow,
  scheduleJson,
  schedulesView,
  setScheduleEnabled,
  storedConfig,
  storedSchedules,
} from "../../admin/schedules.ts";
import { redact } from "../../kernel/redact.ts";
import { next } from "../../schedule/occurrences.ts";
import type { Schedule } from "../../schedule/types.ts";
import type { ScheduleRow, Store } from "../../store/store.ts";
import { routeKey } from "../access.ts";
import {
  ActionBody,
  ApiError,
  type ApiRouter,
  checkedReason,
  param,
  quoted,
  readBody,
  readQuery,
  type RouteSchemas,
  TEXT,
} from "./common.ts";

/** A schedule as the API shows it (`jobs status --json`'s `schedules`): instants as ISO UTC. */
export const ScheduleAnswer = z.object({
  id: z.string(),
  declared: z.boolean(),
  manual: z.boolean(),
  enabled: z.boolean(),
  disabledIn: z.enum(["file", "store"]).nullable(),
  disabledReason: z.string().nullable(),
  disabledBy: z.string().nullable(),
  disabledAt: z.string().nullable(),
  next: z.string().nullable(),
  nextOccurrence: z.string().nullable(),
  lastPlannedFor: z.string().nullable(),
  lastStartedAt: z.string().nullable(),
  lastCompletedAt: z.string().nullable(),
  misfires: z.int(),
  lastMisfireFor: z.string().nullable(),
  lastOutcome: z.enum(["completed", "cancelled", "discarded"]).nullable(),
  lastOutcomeAt: z.string().nullable(),
  failures: z.int(),
  definitionHash: z.string().nullable(),
  timezone: z.string().nullable(),
});

/** The answer of `GET /api/v1/schedules`. */
export const SchedulesAnswer = z.object({ schedules: z.array(ScheduleAnswer) });

/** The answer of `POST /api/v1/schedules/{id}/disable|enable` (`jobs disable --json`). */
export const ScheduleActionAnswer = z.object({
  schedule: z.string(),
  enabled: z.boolean(),
  was: z.boolean(),
});

/** The query of `GET /api/v1/schedules/{id}/next` (`jobs next --count --from`). */
export const NextQuery = z.strictObject({
  count: z.string().regex(/^([1-9]\d?|100)$/).describe("how many occurrences, 1 to 100, default 5")
    .optional(),
  from: z.string().max(64).refine((text) => instantOf(text) !== null, {
    message: "not an ISO instant with an offset, such as 2026-03-08T00:00:00Z",
  }).describe("start after this ISO instant with an offset (default: now)").optional(),
});

/** One occurrence as `jobs next --json` shows it. */
export const NextOccurrence = z.object({
  at: z.string().describe("when it runs, ISO UTC (after jitter)"),
  occurrence: z.string().describe("its identity, `<schedule>@<ISO instant>`"),
  local: z.string().describe("the wall time in the schedule's zone"),
  note: z.string().nullable().describe("where a daylight-saving transition moved or repeated it"),
});

/** The answer of `GET /api/v1/schedules/{id}/next`. */
export const NextAnswer = z.object({
  schedule: z.string(),
  timezone: z.string(),
  manual: z.boolean().describe("a manual schedule has no occurrence: it runs when someone runs it"),
  occurrences: z.array(NextOccurrence),
});

/** The body of `POST /api/v1/schedules/{id}/run` (`jobs run --reason [--environment]`). */
export const RunBody = z.strictObject({
  reason: z.string().min(1).max(1000).describe("why, for the audit trail"),
  environment: TEXT.describe(
    "where this runs (`jobs run --environment`): a manual schedule's runs_where must match",
  ).optional(),
});

/** The answer of `POST /api/v1/schedules/{id}/run` (`jobs run --json`). */
export const RunAnswer = z.object({
  schedule: z.string(),
  id: z.int().describe("the new job"),
  ids: z.array(z.int()).describe("every job the run enqueued"),
  occurrence: z.string(),
  queue: z.string(),
  state: z.string(),
});

const SCHEDULE_ACTION: RouteSchemas = {
  body: ActionBody,
  answer: ScheduleActionAnswer,
  status: 200,
};

/** The schemas of the schedules routes, by route key. */
export const SCHEDULES_SCHEMAS: Readonly<Record<string, RouteSchemas>> = {
  [routeKey("GET", "/api/v1/schedules")]: { answer: SchedulesAnswer, status: 200 },
  [routeKey("POST", "/api/v1/schedules/:id/disable")]: SCHEDULE_ACTION,
  [routeKey("POST", "/api/v1/schedules/:id/enable")]: SCHEDULE_ACTION,
  [routeKey("GET", "/api/v1/schedules/:id/next")]: {
    query: NextQuery,
    answer: NextAnswer,
    status: 200,
  },
  [routeKey("POST", "/api/v1/schedules/:id/run")]: {
    body: RunBody,
    answer: RunAnswer,
    status: 201,
  },
};

/** Registers the schedules routes. */
export function registerSchedules(api: ApiRouter): void {
  const { store, clock } = api;

  api.on("GET", "/api/v1/schedules", async (c, p) => {
    const schedules = await schedulesView(
      store,
      await storedConfig(store, p.tenant),
      clock.now(),
      p.tenant,
    );
    return c.json({ schedules: schedules.map(scheduleJson) });
  });

  for (const action of ["disable", "enable"] as const) {
    api.on("POST", `/api/v1/schedules/:id/${action}`, async (c, p) => {
      const { reason } = await readBody(c, ActionBody);
      checkedReason(reason);
      const id = param(c, "id");
      await scheduleRow(store, id, p.tenant);
      const r = await setScheduleEnabled(
        store,
        id,
        action === "enable",
        api.who(p, reason),
        null,
        p.tenant,
      );
      return c.json({ schedule: r.id, enabled: r.enabled, was: r.was });
    });
  }

  api.on("GET", "/api/v1/schedules/:id/next", async (c, p) => {
    const query = readQuery(c, NextQuery);
    const schedule = storedSchedule(await scheduleRow(store, param(c, "id"), p.tenant));
    const from = query.from === undefined ? clock.now() : instantOf(query.from)!;
    const count = query.count === undefined ? 5 : Number(query.count);
    const manual = schedule.rhythm.kind === "manual";
    const occurrences = manual ? [] : next(schedule, from, count);
    return c.json({
      schedule: schedule.id,
      timezone: schedule.timezone,
      manual,
      occurrences: occurrences.map((o) => ({
        at: new Date(o.at).toISOString(),
        occurrence: o.occurrence,
        local: o.local,
        note: o.note,
      })),
    });
  });

  api.on("POST", "/api/v1/schedules/:id/run", async (c, p) => {
    const body = await readBody(c, RunBody);
    checkedReason(body.reason);
    const schedule = storedSchedule(await scheduleRow(store, param(c, "id"), p.tenant));
    try {
      const result = await runScheduleNow(
        store,
        schedule,
        api.who(p, body.reason),
        body.environment ?? null,
        p.tenant,
      );
      return c.json({
        schedule: schedule.id,
        id: result.id,
        ids: [result.id],
        occurrence: result.occurrence,
        queue: result.queue,
        state: result.state,
      }, 201);
    } catch (error) {
      if (error instanceof GuardRefused) {
        throw new ApiError(409, "guard-refused", redact(error.message));
      }
      if (error instanceof OccurrenceExists) {
        throw new ApiError(409, "occurrence-exists", redact(error.message));
      }
      throw error;
    }
  });
}

/**
 * The stored row of schedule `id` in `tenant`'s scope (every schedule for
 * null), or a 404 `schedule-not-found`: another tenant's is as missing.
 */
async function scheduleRow(store: Store, id: string, tenant: string | null): Promise<ScheduleRow> {
  const [row] = id.length > 200
    ? []
    : await store.schedulesList({ ids: [id], ...(tenant === null ? {} : { tenant }) });
  if (!row) {
    throw new ApiError(404, "schedule-not-found", `no schedule ${quoted(id)} in the store`);
  }
  return row;
}

/** The definition the store last synced for `row`, or a 409 when it has none it can read. */
function storedSchedule(row: ScheduleRow): Schedule {
  const [schedule] = storedSchedules([row]);
  if (!schedule) {
    throw new ApiError(
      409,
      "definition-unavailable",
      `schedule ${
        quoted(row.id)
      } has no definition in the store this program can read (a daemon syncs it from the ` +
        `schedules file)`,
    );
  }
  return schedule;
}

/** Epoch ms of an ISO instant with an offset, or null. */
function instantOf(text: string): number | null {
  try {
    return Temporal.Instant.from(text).epochMilliseconds;
  } catch {
    return null;
  }
}
