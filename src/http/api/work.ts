/**
 * `/api/v1/work` and `/api/v1/bulk`: the work queues of the schedules file
 * (`src/admin/work.ts`) and their bulk money (`src/admin/work_bulk.ts`)
 * over HTTP. The principal acts as itself: a token works as `token:<name>`
 * (its claims are its own, the audit rows name it) with its roles, and its
 * tenant, from the credential only, scopes every item it sees or touches
 * (another tenant's item is 404, as a missing one).
 *
 * Bulk money: a token may preview and ask for a code (sent out of band by
 * the bulk's `confirm_by:`; the code is never in an answer), but never
 * confirms: confirming moves money, and only a person holding the approver
 * role does (`jobs bulk confirm`, the console). `POST
 * /api/v1/bulk/{manifest}/confirm` answers 403 `bulk-confirm-person-only`.
 *
 * @module
 */

import { z } from "zod";
import {
  addWorkItem,
  claimWorkItem,
  doWorkItem,
  listWorkItems,
  nextWorkItem,
  releaseWorkItem,
  skipWorkItem,
  type WorkActor,
  workItemDetail,
  workQueueFor,
  WorkRefused,
} from "../../admin/work.ts";
import { previewWorkBulk, requestWorkBulk } from "../../admin/work_bulk.ts";
import type { SmtpSettings } from "../../workqueue/channels.ts";
import { BulkRefused, bulkRequestJson } from "../../workqueue/confirm.ts";
import type { WorkItemView } from "../../workqueue/items.ts";
import { looksLikeManifest } from "../../workqueue/manifest.ts";
import type { WorkQueueDefinition } from "../../workqueue/types.ts";
import { actorOf, type Principal, routeKey } from "../access.ts";
import type { ApiDefinitions } from "./app.ts";
import {
  ApiError,
  type ApiRouter,
  checkedReason,
  type Ctx,
  LIMIT_TEXT,
  pageLimit,
  param,
  quoted,
  readBody,
  readQuery,
  type RouteSchemas,
} from "./common.ts";

const REASON = z.string().min(1).max(1000).describe("why, for the audit trail and the history");

/** The query of `GET /api/v1/work/{queue}/items`. */
export const WorkItemsQuery = z.strictObject({
  state: z.enum(["open", "done"]).describe("open (default) or done").optional(),
  limit: LIMIT_TEXT.describe("at most this many, 1 to 500 (default 50)").optional(),
});

/** The body of `POST /api/v1/work/{queue}/items`. */
export const WorkItemAddBody = z.strictObject({
  key: z.string().min(1).max(256).describe("the item's key, unique in the queue"),
  data: z.record(z.string(), z.unknown()).describe("the item's data, a JSON object").optional(),
});

/** The body of an action on an item: an optional reason; `break` takes an optional hold. */
export const WorkActionBody = z.strictObject({
  reason: REASON.optional(),
  break: z.boolean().describe("take another's hold (optional queues; needs reason)").optional(),
  fence: z.int().min(0).describe("the claim's fence (default: the principal's current)")
    .optional(),
});

/** The body of `POST /api/v1/work/{queue}/bulk/{bulk}/preview`. */
export const BulkPreviewBody = z.strictObject({
  keys: z.array(z.string().min(1).max(256)).max(100_000)
    .describe("only these items; absent: every open, unclaimed item").optional(),
});

/** An item as the API shows it (`jobs work ls --json`'s). */
export const WorkItemAnswer = z.object({
  key: z.string(),
  score: z.number().nullable(),
  inputs: z.record(z.string(), z.unknown()),
  rule: z.string().nullable(),
  ruleVersion: z.string().nullable(),
  data: z.unknown(),
  state: z.string(),
  requestedAt: z.string(),
  ageMs: z.number(),
  claim: z.object({ owner: z.string(), expiresAt: z.string(), fence: z.int() }).nullable(),
  outcome: z.string().nullable(),
  actionJobId: z.int().nullable(),
  actionState: z.string().nullable(),
});

const ItemsAnswer = z.object({ queue: z.string(), items: z.array(WorkItemAnswer) });
const ItemAnswer = z.object({ item: WorkItemAnswer });
const DetailAnswer = z.object({
  item: WorkItemAnswer,
  history: z.array(z.object({
    kind: z.string(),
    actor: z.string(),
    at: z.string(),
    reason: z.string().nullable(),
  })),
});
const DoAnswer = z.object({ item: WorkItemAnswer, jobId: z.int() });
const NextAnswer = z.object({ item: WorkItemAnswer.nullable() });

/** A bulk preview (`jobs bulk preview --json`). */
export const BulkPreviewAnswer = z.object({
  manifest: z.string(),
  queue: z.string(),
  bulk: z.string(),
  action: z.string(),
  items: z.array(z.object({
    key: z.string(),
    amount: z.string(),
    currency: z.string(),
    tenant: z.string().nullable(),
  })),
  totals: z.record(z.string(), z.string()),
});

/** A code's request as the API shows it: never the code. */
export const BulkRequestAnswer = z.object({
  id: z.int(),
  manifest: z.string(),
  queue: z.string(),
  bulk: z.string(),
  count: z.int(),
  totals: z.record(z.string(), z.string()),
  requester: z.string(),
  channel: z.string(),
  secondPerson: z.boolean(),
  state: z.string(),
  triesLeft: z.int(),
  expiresAt: z.string(),
});

const ACTION: RouteSchemas = { body: WorkActionBody, answer: ItemAnswer, status: 200 };

/** The schemas of the work routes, by route key. */
export const WORK_SCHEMAS: Readonly<Record<string, RouteSchemas>> = {
  [routeKey("GET", "/api/v1/work/:queue/items")]: {
    query: WorkItemsQuery,
    answer: ItemsAnswer,
    status: 200,
  },
  [routeKey("POST", "/api/v1/work/:queue/items")]: {
    body: WorkItemAddBody,
    answer: z.object({ item: WorkItemAnswer, created: z.boolean() }),
    status: 200,
  },
  [routeKey("GET", "/api/v1/work/:queue/items/:key")]: { answer: DetailAnswer, status: 200 },
  [routeKey("POST", "/api/v1/work/:queue/next")]: {
    body: WorkActionBody,
    answer: NextAnswer,
    status: 200,
  },
  [routeKey("POST", "/api/v1/work/:queue/items/:key/claim")]: ACTION,
  [routeKey("POST", "/api/v1/work/:queue/items/:key/release")]: ACTION,
  [routeKey("POST", "/api/v1/work/:queue/items/:key/skip")]: ACTION,
  [routeKey("POST", "/api/v1/work/:queue/items/:key/actions/:action")]: {
    body: WorkActionBody,
    answer: DoAnswer,
    status: 200,
  },
  [routeKey("POST", "/api/v1/work/:queue/bulk/:bulk/preview")]: {
    body: BulkPreviewBody,
    answer: BulkPreviewAnswer,
    status: 200,
  },
  [routeKey("POST", "/api/v1/bulk/:manifest/request")]: {
    body: z.strictObject({}),
    answer: BulkRequestAnswer,
    status: 200,
  },
  [routeKey("POST", "/api/v1/bulk/:manifest/confirm")]: {
    body: z.strictObject({ code: z.string().max(32) }),
    answer: z.object({}),
    status: 200,
  },
};

/**
 * The stable status of each refusal of the door, over the API and in the
 * console alike (an item of another tenant is 404, as a missing one).
 */
export const WORK_REFUSAL_STATUS: Readonly<Record<WorkRefused["code"], 400 | 403 | 404 | 409>> = {
  "work-queue-unknown": 404,
  "work-person-unknown": 400,
  "work-forbidden": 403,
  "work-claims-disabled": 409,
  "work-action-unknown": 404,
  "work-key-invalid": 400,
  "work-data-invalid": 400,
  "work-tenant-conflict": 404,
  "work-item-missing": 404,
  "work-item-done": 409,
  "work-item-held": 409,
  "work-item-unclaimed": 409,
  "work-claim-stale": 409,
  "work-bulk-unknown": 404,
  "work-bulk-no-money": 409,
  "work-bulk-empty": 409,
  "work-bulk-unpreviewed": 404,
};

/**
 * The status of a refusal of the confirmation codes, over the API and in the
 * console alike: who may not ask or confirm is 403, the rest 409.
 */
export function bulkRefusalStatus(why: BulkRefused["why"]): 403 | 409 {
  return why === "unknown-person" || why === "out-of-scope" || why === "not-approver" ? 403 : 409;
}

function itemJson(item: WorkItemView) {
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    key: item.key,
    score: item.score,
    inputs: item.inputs,
    rule: item.rule,
    ruleVersion: item.ruleVersion,
    data: item.data,
    state: item.state,
    requestedAt: iso(item.requestedAt),
    ageMs: item.ageMs,
    claim: item.claim && {
      owner: item.claim.owner,
      expiresAt: iso(item.claim.expiresAt),
      fence: item.claim.fence,
    },
    outcome: item.outcome,
    actionJobId: item.actionJobId,
    actionState: item.actionState,
  };
}

/**
 * Registers the work and bulk routes; `definitions` is the daemon's
 * schedules file as it is now (its `workQueues`), `smtp` the server mailed
 * codes go through.
 */
export function registerWork(
  api: ApiRouter,
  definitions: (() => ApiDefinitions) | undefined,
  smtp: SmtpSettings | null,
): void {
  const { store, clock } = api;
  const queues = (): readonly WorkQueueDefinition[] => definitions?.().workQueues ?? [];
  const who = (p: Principal, reason: string | null): WorkActor => ({
    person: actorOf(p),
    roles: p.roles,
    tenant: p.tenant,
    door: "api",
    reason,
    now: clock.now(),
  });
  /** Runs `fn` with a refusal of the door as its stable 4xx. */
  const doors = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (error) {
      if (error instanceof WorkRefused) {
        throw new ApiError(WORK_REFUSAL_STATUS[error.code], error.code, error.message);
      }
      if (error instanceof BulkRefused) {
        throw new ApiError(bulkRefusalStatus(error.why), `bulk-${error.why}`, error.message);
      }
      throw error;
    }
  };
  const queueOf = (c: Ctx, p: Principal) =>
    doors(() => Promise.resolve(workQueueFor(queues(), param(c, "queue"), p.roles)));
  const manifestOf = (c: Ctx) => {
    const manifest = param(c, "manifest");
    if (!looksLikeManifest(manifest)) {
      throw new ApiError(
        404,
        "bulk-manifest-unknown",
        `${quoted(manifest)} is not a manifest (64 lowercase hex digits)`,
      );
    }
    return manifest;
  };

  api.on("GET", "/api/v1/work/:queue/items", async (c, p) => {
    const query = readQuery(c, WorkItemsQuery);
    const queue = await queueOf(c, p);
    const items = await listWorkItems(store, queue, { tenant: p.tenant, now: clock.now() }, {
      state: query.state ?? "open",
      limit: pageLimit(query.limit),
    });
    return c.json({ queue: queue.id, items: items.map(itemJson) });
  });

  api.on("POST", "/api/v1/work/:queue/items", async (c, p) => {
    const body = await readBody(c, WorkItemAddBody);
    const queue = await queueOf(c, p);
    const added = await doors(() =>
      addWorkItem(store, queue, { key: body.key, data: body.data ?? {} }, who(p, null))
    );
    return c.json({ item: itemJson(added.item), created: added.created });
  });

  api.on("GET", "/api/v1/work/:queue/items/:key", async (c, p) => {
    const queue = await queueOf(c, p);
    const key = param(c, "key");
    const detail = await workItemDetail(store, queue, key, { tenant: p.tenant, now: clock.now() });
    if (!detail) {
      throw new ApiError(
        404,
        "work-item-missing",
        `no item ${quoted(key)} of work queue "${queue.id}"`,
      );
    }
    return c.json({
      item: itemJson(detail.item),
      history: detail.history.map((e) => ({
        kind: e.kind,
        actor: e.actor,
        at: new Date(e.at).toISOString(),
        reason: e.reason,
      })),
    });
  });

  api.on("POST", "/api/v1/work/:queue/next", async (c, p) => {
    const body = await readBody(c, WorkActionBody);
    checkedReason(body.reason);
    const queue = await queueOf(c, p);
    const item = await doors(() => nextWorkItem(store, queue, who(p, body.reason ?? null)));
    return c.json({ item: item && itemJson(item) });
  });

  for (const verb of ["claim", "release", "skip"] as const) {
    api.on("POST", `/api/v1/work/:queue/items/:key/${verb}`, async (c, p) => {
      const body = await readBody(c, WorkActionBody);
      checkedReason(body.reason);
      const queue = await queueOf(c, p);
      const key = param(c, "key");
      const actor = who(p, body.reason ?? null);
      const item = await doors(() =>
        verb === "claim"
          ? claimWorkItem(store, queue, key, actor, breaking(body))
          : verb === "release"
          ? releaseWorkItem(
            store,
            queue,
            key,
            actor,
            body.fence === undefined ? {} : { fence: body.fence },
          )
          : skipWorkItem(store, queue, key, actor)
      );
      return c.json({ item: itemJson(item) });
    });
  }

  api.on("POST", "/api/v1/work/:queue/items/:key/actions/:action", async (c, p) => {
    const body = await readBody(c, WorkActionBody);
    checkedReason(body.reason);
    const queue = await queueOf(c, p);
    const done = await doors(() =>
      doWorkItem(store, queue, param(c, "key"), param(c, "action"), who(p, body.reason ?? null), {
        ...(body.fence === undefined ? {} : { fence: body.fence }),
        ...breaking(body),
      })
    );
    return c.json({ item: itemJson(done.item), jobId: done.jobId });
  });

  api.on("POST", "/api/v1/work/:queue/bulk/:bulk/preview", async (c, p) => {
    const body = await readBody(c, BulkPreviewBody);
    const preview = await doors(() =>
      previewWorkBulk(store, queues(), {
        queue: param(c, "queue"),
        bulk: param(c, "bulk"),
        ...(body.keys === undefined ? {} : { keys: body.keys }),
      }, who(p, null))
    );
    return c.json({
      manifest: preview.manifest.hash,
      queue: preview.queue,
      bulk: preview.bulk,
      action: preview.action,
      items: preview.items.map((i) => ({
        key: i.key,
        amount: i.amount,
        currency: i.currency,
        tenant: i.tenant,
      })),
      totals: preview.totals,
    });
  });

  api.on("POST", "/api/v1/bulk/:manifest/request", async (c, p) => {
    await readBody(c, z.strictObject({}));
    const manifest = manifestOf(c);
    const request = await doors(() =>
      requestWorkBulk(store, { clock, smtp }, queues(), { manifest }, who(p, null))
    );
    const json = bulkRequestJson(request);
    return c.json({
      id: json.id,
      manifest: json.manifest,
      queue: json.queue,
      bulk: json.bulk,
      count: json.count,
      totals: json.totals,
      requester: json.requester,
      channel: json.channel,
      secondPerson: json.secondPerson,
      state: json.state,
      triesLeft: json.triesLeft,
      expiresAt: json.expiresAt,
    });
  });

  api.on("POST", "/api/v1/bulk/:manifest/confirm", (_c, p) => {
    throw new ApiError(
      403,
      "bulk-confirm-person-only",
      `${actorOf(p)} may not confirm money: a person holding the approver role confirms ` +
        "(jobs bulk confirm, the console)",
    );
  });
}

function breaking(body: { break?: boolean | undefined; reason?: string | undefined }) {
  if (!body.break) return {};
  if (body.reason === undefined) {
    throw new ApiError(400, "reason-required", "break needs a reason: why you take it over");
  }
  return { breakReason: body.reason };
}
