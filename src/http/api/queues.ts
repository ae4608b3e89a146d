/**
 * `/api/v1/queues`: the queues view of `jobs status` and the doors of
 * `jobs pause|resume`. Queues are not tenant data: a queue holds every
 * tenant's jobs, and a pause stops them all, so their routes answer a
 * tenant's principal 403 (`installation-scope-required`).
 *
 * @module
 */

import { z } from "zod";
import { nodesView } from "../../admin/nodes.ts";
import { queueJson, queuesView, setQueuePaused } from "../../admin/queues.ts";
import { storedConfig } from "../../admin/schedules.ts";
import { routeKey } from "../access.ts";
import {
  ApiError,
  type ApiRouter,
  checkedReason,
  installationWide,
  param,
  quoted,
  readBody,
  type RouteSchemas,
} from "./common.ts";

/** The body of `POST /api/v1/queues/{name}/pause|resume`: the reason is optional, as on the CLI. */
export const QueueActionBody = z.strictObject({
  reason: z.string().min(1).max(1000).describe("why, for the audit trail").optional(),
});

/** A queue as the API shows it (`jobs status --json`'s `queues`). */
export const QueueAnswer = z.object({
  name: z.string(),
  counts: z.record(z.string(), z.int()),
  paused: z.boolean(),
  pausedInFile: z.boolean(),
  declaredConcurrency: z.int().nullable(),
  nodes: z.record(z.string(), z.int()),
  pause: z.object({
    at: z.string().nullable(),
    actor: z.string().nullable(),
    reason: z.string().nullable(),
  }).nullable(),
});

/** The answer of `GET /api/v1/queues`. */
export const QueuesAnswer = z.object({ queues: z.array(QueueAnswer) });

/** The answer of `POST /api/v1/queues/{name}/pause|resume` (`jobs pause --json`). */
export const QueueActionAnswer = z.object({
  queue: z.string(),
  paused: z.boolean(),
  was: z.boolean(),
});

const QUEUE_ACTION: RouteSchemas = {
  body: QueueActionBody,
  answer: QueueActionAnswer,
  status: 200,
};

/** The schemas of the queues routes, by route key. */
export const QUEUES_SCHEMAS: Readonly<Record<string, RouteSchemas>> = {
  [routeKey("GET", "/api/v1/queues")]: { answer: QueuesAnswer, status: 200 },
  [routeKey("POST", "/api/v1/queues/:name/pause")]: QUEUE_ACTION,
  [routeKey("POST", "/api/v1/queues/:name/resume")]: QUEUE_ACTION,
};

/** Registers the queues routes. */
export function registerQueues(api: ApiRouter): void {
  const { store, clock } = api;
  const view = async () =>
    queuesView(store, await storedConfig(store), await nodesView(store, clock.now()));

  api.on("GET", "/api/v1/queues", async (c, p) => {
    installationWide(p);
    return c.json({ queues: (await view()).map(queueJson) });
  });

  for (const action of ["pause", "resume"] as const) {
    api.on("POST", `/api/v1/queues/:name/${action}`, async (c, p) => {
      installationWide(p);
      const { reason } = await readBody(c, QueueActionBody);
      checkedReason(reason);
      const name = param(c, "name");
      if (!(await view()).some((q) => q.name === name)) {
        throw new ApiError(
          404,
          "queue-not-found",
          `no queue ${quoted(name)} is used by a job, stored or served by a node`,
        );
      }
      const r = await setQueuePaused(store, name, action === "pause", api.who(p, reason ?? null));
      return c.json({ queue: r.queue, paused: r.paused, was: r.was });
    });
  }
}
