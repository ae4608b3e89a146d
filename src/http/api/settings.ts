/**
 * `/api/v1/settings`: the settings of `jobs settings` (the global ones and
 * each report's limits, with the value that applies, its source and who
 * changed it), and the doors of `jobs settings set|unset`, audited as the
 * principal. Only known settings are ever shown or changed, so what the
 * store keeps under other keys (the reports' download secret among them)
 * never reaches an answer: such a key is 404 like any unknown one.
 *
 * The reports whose limits are settings are the schedules file's, as the
 * daemon has it loaded ({@linkcode SettingReports}); without them, only the
 * global settings (and a stored limit of a report no longer declared can
 * still be unset, as on the command line).
 *
 * Settings apply to every tenant, so their routes answer a tenant's
 * principal 403 (`installation-scope-required`).
 *
 * @module
 */

import { z } from "zod";
import {
  setSetting,
  settingChangeJson,
  settingJson,
  SettingRefused,
  settingsView,
  unsetSetting,
} from "../../admin/settings.ts";
import type { LimitedReport } from "../../report/limits.ts";
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

/** The reports whose limits are settings, as they are now (the daemon's schedules file). */
export type SettingReports = () => readonly LimitedReport[];

const REASON = z.string().min(1).max(1000).describe("why, for the audit trail (required)");

/** The body of `PUT /api/v1/settings/{key}` (`jobs settings set <key> <value> --reason`). */
export const SetSettingBody = z.strictObject({
  value: z.union([z.string().min(1).max(100), z.int().positive()]).describe(
    "the value as people write it: 10m, PT15M, 200MB, 1GiB, 500000",
  ),
  reason: REASON.optional(),
});

/** The body of `POST /api/v1/settings/{key}/unset` (`jobs settings unset <key> --reason`). */
export const UnsetSettingBody = z.strictObject({ reason: REASON.optional() });

const SOURCE = z.enum(["default", "file", "setting"]);

/** A setting as the API shows it (`jobs settings --json`). */
export const SettingAnswer = z.object({
  key: z.string(),
  kind: z.enum(["duration", "bytes", "count"]),
  value: z.number().nullable(),
  display: z.string(),
  source: SOURCE,
  default: z.number(),
  file: z.number().nullable(),
  report: z.string().nullable(),
  limit: z.string().nullable(),
  description: z.string(),
  changed: z.object({
    actor: z.string(),
    at: z.string().nullable(),
    reason: z.string().nullable(),
    action: z.string(),
  }).nullable(),
  problem: z.string().optional(),
});

/** The answer of `GET /api/v1/settings`. */
export const SettingsAnswer = z.object({ settings: z.array(SettingAnswer) });

/** The answer of a change (`jobs settings set --json`): the value now and what it was. */
export const SettingChangeAnswer = z.object({
  key: z.string(),
  changed: z.boolean(),
  value: z.number().nullable(),
  display: z.string(),
  source: SOURCE,
  was: z.object({ value: z.number().nullable(), display: z.string(), source: SOURCE }),
});

/** The schemas of the settings routes, by route key. */
export const SETTINGS_SCHEMAS: Readonly<Record<string, RouteSchemas>> = {
  [routeKey("GET", "/api/v1/settings")]: { answer: SettingsAnswer, status: 200 },
  [routeKey("PUT", "/api/v1/settings/:key")]: {
    body: SetSettingBody,
    answer: SettingChangeAnswer,
    status: 200,
  },
  [routeKey("POST", "/api/v1/settings/:key/unset")]: {
    body: UnsetSettingBody,
    answer: SettingChangeAnswer,
    status: 200,
  },
};

/** The `key` of the path, or a 404 when it is longer than any setting's key. */
function keyOf(key: string): string {
  if (key.length > 200) {
    throw new ApiError(404, "setting-not-found", `unknown setting ${quoted(key)}`);
  }
  return key;
}

/** A refusal of the settings door as the API answers it. */
function refused(error: unknown): never {
  if (!(error instanceof SettingRefused)) throw error;
  switch (error.why) {
    case "unknown-key":
      throw new ApiError(404, "setting-not-found", error.message);
    case "bad-value":
      throw new ApiError(400, "value-invalid", error.message);
    case "reason-missing":
      throw new ApiError(400, "reason-required", error.message);
  }
}

/** Registers the settings routes; `reports` are the schedules file's, as the daemon has them. */
export function registerSettings(api: ApiRouter, reports: SettingReports = () => []): void {
  const { store } = api;

  api.on("GET", "/api/v1/settings", async (c, p) => {
    installationWide(p);
    return c.json({ settings: (await settingsView(store, reports())).map(settingJson) });
  });

  api.on("PUT", "/api/v1/settings/:key", async (c, p) => {
    installationWide(p);
    const { value, reason } = await readBody(c, SetSettingBody);
    checkedReason(reason);
    const key = keyOf(param(c, "key"));
    const result = await setSetting(
      store,
      { key, value: String(value), reports: reports() },
      api.who(p, reason ?? null),
    ).catch(refused);
    return c.json(settingChangeJson(result));
  });

  api.on("POST", "/api/v1/settings/:key/unset", async (c, p) => {
    installationWide(p);
    const { reason } = await readBody(c, UnsetSettingBody);
    checkedReason(reason);
    const key = keyOf(param(c, "key"));
    const result = await unsetSetting(
      store,
      { key, reports: reports() },
      api.who(p, reason ?? null),
    )
      .catch(refused);
    return c.json(settingChangeJson(result));
  });
}
