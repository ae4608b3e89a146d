/**
 * A queue's flow keys in `schedules.yaml` (`global`, `partition: { by,
 * limit }`, `rate: { limit, per, burst }`): what they compile to, and the
 * errors `jobs check` gives for them, each naming the file, line, field and
 * value.
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

Deno.test("queues: global, partition and rate compile to the queue's flow limits", () => {
  const config = parsed(yaml(
    "version: 1",
    "queues:",
    "  payments:",
    "    concurrency: 5",
    "    global: 5",
    "    partition: { by: tenant, limit: 2 }",
    "    rate: { limit: 100, per: 1m, burst: 10 }",
    "  sync:",
    "    partition: { by: args.account, rate: { limit: 6, per: 1m } }",
    "  tagged:",
    "    partition: { by: meta.region, limit: 1 }",
    "  plain: { concurrency: 3 }",
  ));
  assert.deepEqual(config.queues.payments, {
    concurrency: 5,
    paused: false,
    flow: {
      global: 5,
      partition: { by: { kind: "tenant" }, limit: 2 },
      rate: { limit: 100, perMs: 60_000, burst: 10 },
    },
  });
  assert.deepEqual(config.queues.sync?.flow, {
    partition: {
      by: { kind: "args", key: "account" },
      rate: { limit: 6, perMs: 60_000, burst: 6 },
    },
  });
  assert.deepEqual(config.queues.tagged?.flow?.partition?.by, { kind: "meta", key: "region" });
  assert.deepEqual(config.queues.plain, { concurrency: 3, paused: false });
});

Deno.test("jobs check: a partition's by must be tenant, args.<key> or meta.<key>", () => {
  const [error, ...rest] = errors(yaml(
    "version: 1",
    "queues:",
    "  payments:",
    "    partition: { by: customer, limit: 2 }",
  ));
  assert.deepEqual(rest, []);
  assert.match(
    error!.message,
    /^schedules\.yaml:4:\d+: .*partition\.by.*tenant, args\.<key> or meta\.<key>.*"customer"/,
  );
});

Deno.test("jobs check: a partition needs a limit or a rate; limits are whole numbers of at least 1", () => {
  const found = errors(yaml(
    "version: 1",
    "queues:",
    "  a:",
    "    partition: { by: tenant }",
    "  b:",
    "    global: 0",
    "  c:",
    "    rate: { limit: 10, per: soon }",
  )).map((e) => e.message);
  assert.equal(found.length, 3, found.join("\n"));
  assert.match(found[0]!, /^schedules\.yaml:4:.*partition.*needs a limit .*a rate/);
  assert.match(found[1]!, /^schedules\.yaml:6:.*global/);
  assert.match(found[2]!, /^schedules\.yaml:8:.*rate\.per/);
});
