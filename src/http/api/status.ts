/**
 * `GET /api/v1/nodes` and `GET /api/v1/status`: the nodes on the store with
 * the maintenance role's holder, and the whole of `jobs status --json`
 * (the store's health, queues, nodes, schedules as the store synced them,
 * pipelines, leader) but for what only the command line knows: where its
 * schedules file is and a store it finds moved.
 *
 * Both show every tenant's work at once (queue counts are not filtered by
 * tenant), so they answer a tenant's principal 403
 * (`installation-scope-required`).
 *
 * @module
 */

import { z } from "zod";
import { leaderJson, leaderView, nodeJson, nodesView } from "../../admin/nodes.ts";
import { pipelinesView } from "../../admin/pipelines.ts";
import { storedConfig } from "../../admin/schedules.ts";
import { statusJson, statusView, storeCheck } from "../../admin/store.ts";
import { knownSchemaVersion } from "../../store/open.ts";
import { routeKey } from "../access.ts";
import { type ApiRouter, installationWide, type RouteSchemas } from "./common.ts";
import { QueueAnswer } from "./queues.ts";
import { ScheduleAnswer } from "./schedules.ts";

/** A node as the API shows it (`jobs status --json`'s `nodes`). */
export const NodeAnswer = z.object({
  node: z.string(),
  queues: z.record(z.string(), z.int()),
  startedAt: z.string().nullable(),
  heartbeatAt: z.string().nullable(),
  environment: z.string().nullable(),
  heartbeatAgeMs: z.number(),
  stale: z.boolean(),
});

/** Who holds the maintenance role (`jobs status --json`'s `leader`), or null. */
export const LeaderAnswer = z.object({
  node: z.string().nullable(),
  acquiredAt: z.string().nullable(),
  expiresAt: z.string().nullable(),
  expired: z.boolean(),
}).nullable();

/** The answer of `GET /api/v1/nodes`. */
export const NodesAnswer = z.object({ nodes: z.array(NodeAnswer), leader: LeaderAnswer });

/** The answer of `GET /api/v1/status` (`jobs status --json` without the file and a move). */
export const StatusAnswer = z.object({
  now: z.string().nullable(),
  store: z.object({
    kind: z.string(),
    location: z.string(),
    reachable: z.boolean(),
    schemaVersion: z.int().nullable(),
    knownVersion: z.int(),
    readMs: z.number().nullable(),
    error: z.string().nullable(),
  }),
  queues: z.array(QueueAnswer),
  nodes: z.array(NodeAnswer),
  schedules: z.array(ScheduleAnswer),
  pipelines: z.array(z.object({
    id: z.string(),
    stale: z.boolean(),
    freshness: z.record(z.string(), z.unknown()).nullable(),
    lastRun: z.object({ id: z.int(), state: z.string(), finishedAt: z.string().nullable() })
      .nullable(),
    droppedLastHour: z.int(),
  })),
  leader: LeaderAnswer,
});

/** The schemas of the nodes and status routes, by route key. */
export const STATUS_SCHEMAS: Readonly<Record<string, RouteSchemas>> = {
  [routeKey("GET", "/api/v1/nodes")]: { answer: NodesAnswer, status: 200 },
  [routeKey("GET", "/api/v1/status")]: { answer: StatusAnswer, status: 200 },
};

/** Registers the nodes and status routes. */
export function registerStatus(api: ApiRouter): void {
  const { store, clock } = api;

  api.on("GET", "/api/v1/nodes", async (c, p) => {
    installationWide(p);
    const now = clock.now();
    return c.json({
      nodes: (await nodesView(store, now)).map(nodeJson),
      leader: leaderJson(await leaderView(store, now)),
    });
  });

  api.on("GET", "/api/v1/status", async (c, p) => {
    installationWide(p);
    const now = clock.now();
    const health = await storeCheck(store, {
      clock,
      schema: {
        version: await store.schemaVersion(),
        known: await knownSchemaVersion(store.location),
      },
    });
    const view = await statusView({ store, config: await storedConfig(store), now });
    const pipelines = await pipelinesView({ store, pipelines: [], now });
    return c.json(statusJson({ view, health, pipelines }));
  });
}
