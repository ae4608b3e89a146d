/**
 * `GET /api/v1/me`: the principal the credential names, as the API sees it.
 *
 * @module
 */

import { z } from "zod";
import { actorOf, routeKey } from "../access.ts";
import type { ApiRouter, RouteSchemas } from "./common.ts";

/** The answer of `GET /api/v1/me`. */
export const MeAnswer = z.object({
  name: z.string(),
  kind: z.enum(["token", "person", "installation"]),
  roles: z.array(z.string()),
  tenant: z.string().nullable(),
  actor: z.string(),
});

/** The schemas of the route, by route key. */
export const ME_SCHEMAS: Readonly<Record<string, RouteSchemas>> = {
  [routeKey("GET", "/api/v1/me")]: { answer: MeAnswer, status: 200 },
};

/** Registers `GET /api/v1/me`. */
export function registerMe(api: ApiRouter): void {
  api.on("GET", "/api/v1/me", (c, p) =>
    Promise.resolve(c.json({
      name: p.name,
      kind: p.kind,
      roles: p.roles,
      tenant: p.tenant,
      actor: actorOf(p),
    })));
}
