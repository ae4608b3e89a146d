/**
 * The OpenAPI 3.1 document of `/api/v1`, generated from the role table
 * (`access.ts`: every route, its roles) and the zod schemas that validate
 * the requests (each noun's file beside this one), so the description cannot drift from
 * what the routes check. `test/http/api_openapi_test.ts` checks it with a
 * real OpenAPI validator.
 *
 * @module
 */

import { z } from "zod";
import { API_ROUTES, routeKey } from "../access.ts";
import { AUDIT_SCHEMAS } from "./audit.ts";
import { ErrorAnswer, type RouteSchemas } from "./common.ts";
import { JOBS_SCHEMAS } from "./jobs.ts";
import { ME_SCHEMAS } from "./me.ts";
import { PRINCIPALS_SCHEMAS } from "./principals.ts";
import { QUEUES_SCHEMAS } from "./queues.ts";
import { REPORTS_SCHEMAS } from "./reports.ts";
import { SCHEDULES_SCHEMAS } from "./schedules.ts";
import { SETTINGS_SCHEMAS } from "./settings.ts";
import { STATUS_SCHEMAS } from "./status.ts";
import { PIPELINES_SCHEMAS } from "./pipelines.ts";
import { WORKFLOWS_SCHEMAS } from "./workflows.ts";
import { WORK_SCHEMAS } from "./work.ts";

/** The schemas of each route of the table, by its key: each noun's, and this document's. */
export const ROUTE_SCHEMAS: Readonly<Record<string, RouteSchemas>> = {
  ...ME_SCHEMAS,
  [routeKey("GET", "/api/v1/openapi.json")]: {
    answer: z.record(z.string(), z.unknown()),
    status: 200,
  },
  ...JOBS_SCHEMAS,
  ...AUDIT_SCHEMAS,
  ...QUEUES_SCHEMAS,
  ...SCHEDULES_SCHEMAS,
  ...REPORTS_SCHEMAS,
  ...SETTINGS_SCHEMAS,
  ...STATUS_SCHEMAS,
  ...PRINCIPALS_SCHEMAS,
  ...WORKFLOWS_SCHEMAS,
  ...PIPELINES_SCHEMAS,
  ...WORK_SCHEMAS,
};

/** `schema` as JSON Schema 2020-12 (OpenAPI 3.1's dialect), without its `$schema`. */
function jsonSchema(schema: z.ZodType, io: "input" | "output"): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" });
  return rest;
}

const REFUSALS: Record<string, string> = {
  "400": "The request is malformed (the message names the field)",
  "401": "No valid bearer token",
  "403":
    "The principal's roles do not allow the route (the message names the role needed), a tenant's principal asked for installation-wide data, or a token tried to create a token or a person (token-cannot-mint)",
  "404": "Nothing of that id or name in the principal's scope",
  "409":
    "The state does not allow the action (a job's state; a report run without output), or the name is taken",
  "413": "The body is over 1 MiB",
  "429": "Too many failed tokens from this address, or a report's limit reached",
};

/** The OpenAPI document of `/api/v1`. Throws when a route of the table has no schemas. */
export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of API_ROUTES) {
    const schemas = ROUTE_SCHEMAS[routeKey(route.method, route.path)];
    if (!schemas) throw new Error(`openapi: ${route.method} ${route.path} has no schemas`);
    const path = route.path.replace(/:(\w+)/g, "{$1}");
    const parameters: Record<string, unknown>[] = [...route.path.matchAll(/:(\w+)/g)].map((m) => ({
      name: m[1],
      in: "path",
      required: true,
      schema: m[1] === "run" ||
          (m[1] === "id" && !route.path.startsWith("/api/v1/schedules/") &&
            !route.path.startsWith("/api/v1/reports/"))
        ? { type: "string", pattern: "^\\d{1,15}$" }
        : { type: "string", minLength: 1, maxLength: 200 },
    }));
    if (schemas.query) {
      const query = jsonSchema(schemas.query, "input");
      const required = (query.required as string[] | undefined) ?? [];
      for (const [name, schema] of Object.entries(query.properties as Record<string, object>)) {
        const { description, ...rest } = schema as { description?: string };
        parameters.push({
          name,
          in: "query",
          required: required.includes(name),
          ...(description === undefined ? {} : { description }),
          schema: rest,
        });
      }
    }
    const responses: Record<string, unknown> = {
      [String(schemas.status)]: {
        description: "Done",
        content: { "application/json": { schema: jsonSchema(schemas.answer, "output") } },
      },
    };
    if (schemas.accepted) {
      responses["202"] = {
        description: "Accepted: still under way; its progress is at the Location header",
        content: { "application/json": { schema: jsonSchema(schemas.accepted, "output") } },
      };
    }
    for (const [status, description] of Object.entries(REFUSALS)) {
      responses[status] = {
        description,
        content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
      };
    }
    (paths[path] ??= {})[route.method.toLowerCase()] = {
      summary: route.summary,
      description: `Roles: ${route.roles.join(", ")}.`,
      operationId: `${route.method.toLowerCase()}${
        path.replace(/^\/api\/v1/, "").replace(/[{}]/g, "").split(/[/._-]/).filter(Boolean)
          .map((w) => w[0]!.toUpperCase() + w.slice(1)).join("")
      }`,
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(schemas.body
        ? {
          requestBody: {
            required: true,
            content: { "application/json": { schema: jsonSchema(schemas.body, "input") } },
          },
        }
        : {}),
      responses,
    };
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "jobs /api/v1",
      version: "1",
      description: "The store's jobs over HTTP, with the identity of the bearer token's principal.",
    },
    servers: [{ url: "/" }],
    security: [{ bearer: [] }],
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: { Error: jsonSchema(ErrorAnswer, "output") },
    },
    paths,
  };
}
