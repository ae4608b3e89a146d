/**
 * The `pruner:` section of schedules.yaml: the shape it takes, what it
 * builds to (only what the file sets: the defaults are the pruner's), and
 * its errors, in the same shape as every other field's.
 */

import assert from "node:assert/strict";
import { parseSchedules } from "../../src/config/load.ts";
import type { ConfigError } from "../../src/config/load.ts";
import type { ScheduleConfig } from "../../src/config/types.ts";

const DAY = 24 * 60 * 60 * 1000;

/** A file from its lines, so that a test reads its own line numbers. */
function yaml(...lines: string[]): string {
  return lines.join("\n") + "\n";
}

const HELLO = ["schedules:", "  - id: hello", "    every: 15s", '    run: { command: ["true"] }'];

function parsed(text: string): ScheduleConfig {
  const result = parseSchedules(text, "schedules.yaml");
  if (!result.ok) assert.fail(result.errors.map((e) => e.message).join("\n"));
  return result.config;
}

/** The one error of a file; fails when there are more. */
function only(text: string): ConfigError {
  const result = parseSchedules(text, "schedules.yaml");
  if (result.ok) assert.fail("expected an error, the file parsed");
  assert.equal(result.errors.length, 1, result.errors.map((e) => e.message).join("\n"));
  return result.errors[0]!;
}

Deno.test("pruner: with every, batch and retention by state builds to milliseconds", () => {
  const config = parsed(yaml(
    "version: 1",
    "pruner:",
    "  every: 30s",
    "  batch: 5000",
    "  retention: { completed: 1d, cancelled: 14d, discarded: 90d }",
    ...HELLO,
  ));
  assert.deepEqual(config.pruner, {
    everyMs: 30_000,
    batch: 5000,
    retention: { completed: DAY, cancelled: 14 * DAY, discarded: 90 * DAY },
  });
});

Deno.test("pruner: keeps only the fields the file sets, and is absent without the section", () => {
  const some = parsed(yaml("version: 1", "pruner:", "  retention: { completed: 2d }", ...HELLO));
  assert.deepEqual(some.pruner, { retention: { completed: 2 * DAY } });
  assert.deepEqual(parsed(yaml("version: 1", "pruner: {}", ...HELLO)).pruner, {});
  assert.equal("pruner" in parsed(yaml("version: 1", ...HELLO)), false);
});

Deno.test("pruner.batch of 0 is one error naming the line, column, field and value", () => {
  const error = only(yaml("version: 1", "pruner:", "  every: 1m", "  batch: 0", ...HELLO));
  assert.deepEqual(error, {
    code: "schedule-invalid",
    file: "schedules.yaml",
    line: 4,
    column: 10,
    field: "pruner.batch",
    value: 0,
    message: "schedules.yaml:4:10: pruner.batch must be at least 1, got 0",
  });
});

Deno.test("pruner: a bad duration, a batch too large and a misspelt key each name their field", () => {
  assert.equal(
    only(yaml("version: 1", "pruner: { every: 60 }", ...HELLO)).message,
    'schedules.yaml:2:18: pruner.every must be a duration such as "30s" or "1h30m", got 60',
  );
  assert.equal(
    only(yaml("version: 1", "pruner: { batch: 20000 }", ...HELLO)).message,
    "schedules.yaml:2:18: pruner.batch must be at most 10000, got 20000",
  );
  assert.equal(
    only(yaml("version: 1", "pruner:", "  retention: { completed: 0s }", ...HELLO)).message,
    'schedules.yaml:3:27: pruner.retention.completed must be more than zero, got "0s"',
  );
  const typo = only(yaml("version: 1", "pruner:", "  retention: { complete: 7d }", ...HELLO));
  assert.equal(
    typo.message,
    'schedules.yaml:3:16: unknown field "pruner.retention.complete"; did you mean "completed"?',
  );
});
