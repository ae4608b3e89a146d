/**
 * `/api/v1/schedules`: the schedules view of `jobs status` (as the store
 * last synced them: what the daemon runs, as the API has no schedules file
 * of its own) and the doors of `jobs disable|enable`.
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
  scheduleJson,
  schedulesView,
  setScheduleEnabled,
  storedConfig,
} from "../../admin/schedules.ts";
import { routeKey } from "../access.ts";
import {
  ActionBody,
  ApiError,
  type ApiRouter,
  checkedReason,
  param,
  quoted,
  readBody,
  type RouteSchemas,
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
      const [row] = id.length > 200 ? [] : await store.schedulesList({
        ids: [id],
        ...(p.tenant === null ? {} : { tenant: p.tenant }),
      });
      if (!row) {
        throw new ApiError(404, "schedule-not-found", `no schedule ${quoted(id)} in the store`);
      }
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
}
