/**
 * `GET /api/v1/audit`: the audit log, newest first, paged by `?after=`,
 * filtered by target, actor and action (in the statement). A
 * tenant's principal reads only the rows about its tenant's jobs, the
 * tenant in the store's statement (`Store.auditPage`).
 *
 * @module
 */

import { z } from "zod";
import { auditJson } from "../../admin/job_json.ts";
import { routeKey } from "../access.ts";
import {
  type ApiRouter,
  ID_TEXT,
  keysetPage,
  LIMIT_TEXT,
  pageLimit,
  readQuery,
  type RouteSchemas,
  tenantScope,
  TEXT,
} from "./common.ts";

/** The query of `GET /api/v1/audit`. */
export const AuditQuery = z.strictObject({
  target: TEXT.describe("one target: job:<id>, schedule:<id>, a queue, token:<name>")
    .optional(),
  actor: TEXT.describe("one actor: a person's or a token's name, host:<user>").optional(),
  action: TEXT.describe("one action: job.retry, queue.pause, user.add").optional(),
  after: ID_TEXT.describe("the `next` of the previous page").optional(),
  limit: LIMIT_TEXT.describe("rows per page, 1 to 500, default 50").optional(),
});

/** An audit row as the API shows it. */
export const AuditAnswer = z.object({
  id: z.int(),
  at: z.string().nullable(),
  actor: z.string(),
  action: z.string(),
  target: z.string(),
  reason: z.string().nullable(),
  details: z.record(z.string(), z.unknown()),
});

/** The answer of `GET /api/v1/audit`. */
export const AuditPage = z.object({ audit: z.array(AuditAnswer), next: z.int().nullable() });

/** The schemas of the audit route, by route key. */
export const AUDIT_SCHEMAS: Readonly<Record<string, RouteSchemas>> = {
  [routeKey("GET", "/api/v1/audit")]: { query: AuditQuery, answer: AuditPage, status: 200 },
};

/** Registers the audit route. */
export function registerAudit(api: ApiRouter): void {
  api.on("GET", "/api/v1/audit", async (c, p) => {
    const query = readQuery(c, AuditQuery);
    const limit = pageLimit(query.limit);
    const rows = await api.store.auditPage({
      ...(query.target === undefined ? {} : { target: query.target }),
      ...(query.actor === undefined ? {} : { actor: query.actor }),
      ...(query.action === undefined ? {} : { action: query.action }),
      ...(query.after === undefined ? {} : { after: Number(query.after) }),
      ...tenantScope(p),
      limit: limit + 1,
    });
    const { page, next } = keysetPage(rows, limit, (row) => row.id);
    return c.json({ audit: page.map(auditJson), next });
  });
}
