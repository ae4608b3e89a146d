/**
 * `tenant:` and `tenants:` on a schedule: one tenant, or one schedule per
 * tenant of a list (`<id>:<tenant>`), and the mistakes `jobs check` names
 * at their line, field and value.
 */

import assert from "node:assert/strict";
import { type ConfigError, parseSchedules } from "../../src/config/load.ts";
import type { ScheduleConfig } from "../../src/config/types.ts";

function yaml(...lines: string[]): string {
  return lines.join("\n") + "\n";
}

function parsed(text: string): ScheduleConfig {
  const result = parseSchedules(text, "schedules.yaml");
  if (!result.ok) assert.fail(result.errors.map((e) => e.message).join("\n"));
  return result.config;
}

function errors(text: string): ConfigError[] {
  const result = parseSchedules(text, "schedules.yaml");
  if (result.ok) assert.fail("expected errors, the file parsed");
  return result.errors;
}

/** Each error as `[code, line, column, field, value, message]`. */
function named(text: string) {
  return errors(text).map((e) => [e.code, e.line, e.column, e.field, e.value, e.message]);
}

Deno.test("tenants: makes one schedule per tenant, <id>:<tenant>, each with its tenant and the rest alike", () => {
  const config = parsed(yaml(
    "version: 1",
    "defaults: { tenant: initech, queue: ops }",
    "schedules:",
    "  - id: nightly",
    '    cron: "0 2 * * *"',
    "    tenants: [acme, globex, eu:acme]",
    "    tags: [report]",
    '    run: { command: ["report"] }',
    "  - id: plain",
    "    every: 1m",
    '    run: { command: ["true"] }',
  ));
  assert.deepEqual(config.schedules.map((s) => [s.id, s.tenant]), [
    ["nightly:acme", "acme"],
    ["nightly:globex", "globex"],
    ["nightly:eu:acme", "eu:acme"],
    ["plain", "initech"],
  ]);
  const [acme, globex] = config.schedules;
  assert.deepEqual({ ...globex, id: acme!.id, tenant: acme!.tenant }, acme);
  assert.equal(acme!.queue, "ops");
  assert.deepEqual(acme!.rhythm, { kind: "cron", expression: "0 2 * * *" });
  assert.ok(!("tenants" in acme!));
});

Deno.test("tenant: names one tenant, by the rule of tenants' names", () => {
  assert.equal(
    parsed(
      yaml(
        "version: 1",
        "schedules:",
        "  - id: a",
        "    every: 1m",
        "    tenant: acme/eu",
        "    run: { command: [x] }",
      ),
    )
      .schedules[0]!.tenant,
    "acme/eu",
  );
  assert.deepEqual(
    named(yaml(
      "version: 1",
      "schedules:",
      "  - id: a",
      "    every: 1m",
      '    tenant: "acme corp"',
      "    run: { command: [x] }",
    )),
    [[
      "schedule-invalid",
      5,
      13,
      "tenant",
      "acme corp",
      'schedules.yaml:5:13: schedule "a": tenant must be 1-128 letters, digits or ._:/-, ' +
      'starting with a letter or digit, got "acme corp"',
    ]],
  );
});

Deno.test("tenant: and tenants: together are refused at tenants", () => {
  assert.deepEqual(
    named(yaml(
      "version: 1",
      "schedules:",
      "  - id: a",
      "    every: 1m",
      "    tenant: acme",
      "    tenants: [acme, globex]",
      "    run: { command: [x] }",
    )),
    [[
      "schedule-invalid",
      6,
      14,
      "tenants",
      ["acme", "globex"],
      'schedules.yaml:6:14: schedule "a": has both tenant and tenants, choose one: ' +
      "tenant runs it for one tenant, tenants once for each tenant of the list",
    ]],
  );
});

Deno.test("an empty tenants list, a tenant listed twice and a bad name are each named at their line", () => {
  assert.deepEqual(
    named(yaml(
      "version: 1",
      "schedules:",
      "  - id: none",
      "    every: 1m",
      "    tenants: []",
      "    run: { command: [x] }",
      "  - id: twice",
      "    every: 1m",
      "    tenants:",
      "      - acme",
      "      - globex",
      "      - acme",
      "    run: { command: [x] }",
      "  - id: bad",
      "    every: 1m",
      '    tenants: [acme, "a@b", "", 7]',
      "    run: { command: [x] }",
    )),
    [
      [
        "schedule-invalid",
        5,
        14,
        "tenants",
        [],
        'schedules.yaml:5:14: schedule "none": tenants must list at least one tenant, got []',
      ],
      [
        "schedule-invalid",
        12,
        9,
        "tenants[2]",
        "acme",
        'schedules.yaml:12:9: schedule "twice": tenants[2] "acme" is listed twice, ' +
        "first as tenants[0] on line 10",
      ],
      [
        "schedule-invalid",
        16,
        21,
        "tenants[1]",
        "a@b",
        'schedules.yaml:16:21: schedule "bad": tenants[1] must be 1-128 letters, digits ' +
        'or ._:/-, starting with a letter or digit, got "a@b"',
      ],
      [
        "schedule-invalid",
        16,
        28,
        "tenants[2]",
        "",
        'schedules.yaml:16:28: schedule "bad": tenants[2] must be 1-128 letters, digits ' +
        'or ._:/-, starting with a letter or digit, got ""',
      ],
      [
        "schedule-invalid",
        16,
        32,
        "tenants[3]",
        7,
        'schedules.yaml:16:32: schedule "bad": tenants[3] must be a string, got 7',
      ],
    ],
  );
});

Deno.test("tenants: belongs to a schedule, not to defaults:", () => {
  assert.deepEqual(
    errors(yaml(
      "version: 1",
      "defaults:",
      "  tenants: [acme]",
      "schedules:",
      "  - id: a",
      "    every: 1m",
      "    run: { command: [x] }",
    )).map((e) => e.message),
    ['schedules.yaml:3:3: defaults: unknown field "tenants"; did you mean "tenant"?'],
  );
});

Deno.test("a tenant's schedule id cannot meet a declared one: a declared id holds no ':'", () => {
  const [error] = errors(yaml(
    "version: 1",
    "schedules:",
    "  - id: nightly:acme",
    "    every: 1m",
    "    run: { command: [x] }",
  ));
  assert.equal(error?.code, "schedule-invalid");
  assert.equal(error?.field, "id");
});
