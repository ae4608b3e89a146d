import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  type ConfigError,
  loadSchedules,
  MAX_FILE_BYTES,
  parseSchedules,
  SCHEDULE_DEFAULTS,
} from "../../src/config/load.ts";
import type { Schedule } from "../../src/schedule/types.ts";
import type { ScheduleConfig } from "../../src/config/types.ts";

const EXAMPLE = fileURLToPath(new URL("../../schedules.yaml", import.meta.url));

/** A file from its lines, so that a test reads its own line numbers. */
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

function messages(text: string): string[] {
  return errors(text).map((e) => e.message);
}

/** The one error of a file; fails when there are more. */
function only(text: string): ConfigError {
  const all = errors(text);
  assert.equal(all.length, 1, all.map((e) => e.message).join("\n"));
  return all[0]!;
}

const HELLO = ["  - id: hello", "    every: 15s", '    run: { command: ["echo", "hi"] }'];

// ---------------------------------------------------------------- valid files

Deno.test("the example schedules.yaml parses, with every rhythm and a local-time policy", async () => {
  const result = await loadSchedules(EXAMPLE);
  if (!result.ok) assert.fail(result.errors.map((e) => e.message).join("\n"));
  const kinds = new Set(result.config.schedules.map((s) => s.rhythm.kind));
  assert.deepEqual([...kinds].sort(), ["cron", "every", "manual"]);
  const london = result.config.schedules.find((s) => s.timezone === "Europe/London");
  assert.ok(london?.localTime?.reason);
  const manual = result.config.schedules.find((s) => s.rhythm.kind === "manual");
  assert.ok(manual?.guard && manual.runsWhere);
  // Something visible within a minute of starting the daemon.
  assert.ok(
    result.config.schedules.some((s) => s.rhythm.kind === "every" && s.rhythm.everyMs <= 60_000),
  );
});

Deno.test("a schedule with only id, rhythm and run gets the built-in defaults", () => {
  const config = parsed(yaml("version: 1", "schedules:", ...HELLO));
  assert.deepEqual(config, {
    version: 1,
    queues: {},
    schedules: [{
      id: "hello",
      rhythm: { kind: "every", everyMs: 15_000, anchor: 0 },
      timezone: "UTC",
      misfire: { policy: "fire_once", catchUpLimit: 100, graceMs: 60_000 },
      overlapPolicy: "allow",
      run: { kind: "command", argv: ["echo", "hi"], shell: false },
      queue: "default",
      priority: 0,
      maxAttempts: 20,
      tags: [],
      enabled: true,
    }],
    useCases: {},
    workflows: [],
    pipelines: [],
    reports: [],
    workQueues: [],
  });
  assert.equal(SCHEDULE_DEFAULTS.misfire, "fire_once");
  assert.equal(SCHEDULE_DEFAULTS.overlapPolicy, "allow");
});

Deno.test("snake_case fields map to the camelCase schedule, every field", () => {
  const config = parsed(yaml(
    "version: 1",
    "queues:",
    "  reports: { concurrency: 2, paused: true }",
    "  bulk: {}",
    "schedules:",
    "  - id: nightly.report_v2",
    '    cron: "0 7 * * *"',
    "    timezone: Europe/London",
    "    local_time: { reason: read at 07:00 in London, gap: shift, overlap: first }",
    "    misfire: catch_up",
    "    catch_up_limit: 5",
    "    grace: 2m",
    "    overlap_policy: queue_one",
    '    start_at: "2026-01-01T00:00:00Z"',
    '    end_at: "2027-01-01T00:00:00+01:00"',
    "    jitter: 30s",
    "    queue: reports",
    "    priority: 3",
    "    max_attempts: 4",
    "    backoff: { fixed: 30s }",
    "    timeout: 1h30m",
    "    retention: 7d",
    "    tenant: acme",
    "    tags: [daily, reports]",
    "    enabled: false",
    "    run:",
    '      command: ["report", "--daily"]',
    "      cwd: /srv/reports",
    "      env: { LANG: C }",
  ));
  assert.deepEqual(config.queues, {
    reports: { concurrency: 2, paused: true },
    bulk: { concurrency: 10, paused: false },
  });
  const expected: Schedule = {
    id: "nightly.report_v2",
    rhythm: { kind: "cron", expression: "0 7 * * *" },
    timezone: "Europe/London",
    localTime: { reason: "read at 07:00 in London", gap: "shift", overlap: "first" },
    startAt: Date.UTC(2026, 0, 1),
    endAt: Date.UTC(2026, 11, 31, 23),
    jitterMs: 30_000,
    misfire: { policy: "catch_up", catchUpLimit: 5, graceMs: 120_000 },
    overlapPolicy: "queue_one",
    run: {
      kind: "command",
      argv: ["report", "--daily"],
      shell: false,
      cwd: "/srv/reports",
      env: { LANG: "C" },
    },
    queue: "reports",
    priority: 3,
    maxAttempts: 4,
    backoff: { kind: "fixed", delayMs: 30_000 },
    timeoutMs: 5_400_000,
    retentionMs: 604_800_000,
    tenant: "acme",
    tags: ["daily", "reports"],
    enabled: false,
  };
  assert.deepEqual(config.schedules, [expected]);
});

Deno.test("defaults apply to every schedule and a schedule's own value wins, tags included", () => {
  const config = parsed(yaml(
    "version: 1",
    "defaults:",
    "  queue: ops",
    "  priority: 5",
    "  max_attempts: 3",
    "  backoff: { exponential: { base: 1s, max: 1h } }",
    "  timeout: 10m",
    "  retention: 30d",
    "  misfire: skip",
    "  grace: 5m",
    "  catch_up_limit: 7",
    "  overlap_policy: skip",
    "  tenant: acme",
    "  tags: [team-a]",
    "  timezone: America/New_York",
    "  local_time: { reason: office hours in New York, gap: skip, overlap: both }",
    "  jitter: 1s",
    "schedules:",
    ...HELLO,
    "  - id: own",
    "    every: 1m",
    "    queue: mine",
    "    tags: [mine]",
    "    timezone: UTC",
    "    misfire: catch_up",
    "    run: { command: [date] }",
  ));
  const [hello, own] = config.schedules;
  assert.equal(hello?.queue, "ops");
  assert.equal(hello?.priority, 5);
  assert.equal(hello?.maxAttempts, 3);
  assert.deepEqual(hello?.backoff, { kind: "exponential", baseMs: 1000, maxMs: 3_600_000 });
  assert.equal(hello?.timeoutMs, 600_000);
  assert.equal(hello?.retentionMs, 30 * 86_400_000);
  assert.deepEqual(hello?.misfire, { policy: "skip", catchUpLimit: 7, graceMs: 300_000 });
  assert.equal(hello?.overlapPolicy, "skip");
  assert.equal(hello?.tenant, "acme");
  assert.deepEqual(hello?.tags, ["team-a"]);
  assert.equal(hello?.timezone, "America/New_York");
  assert.deepEqual(hello?.localTime, {
    reason: "office hours in New York",
    gap: "skip",
    overlap: "both",
  });
  assert.equal(hello?.jitterMs, 1000);
  assert.equal(own?.queue, "mine");
  assert.deepEqual(own?.tags, ["mine"]);
  assert.equal(own?.timezone, "UTC");
  assert.equal(own?.localTime, undefined, "a UTC schedule keeps no local-time policy");
  assert.deepEqual(own?.misfire, { policy: "catch_up", catchUpLimit: 7, graceMs: 300_000 });
});

Deno.test("each rhythm: cron with seconds and croner syntax, every with an anchor, manual", () => {
  const config = parsed(yaml(
    "version: 1",
    "schedules:",
    "  - id: seconds",
    '    cron: "*/10 * * * * *"',
    "    run: { command: [date] }",
    "  - id: last-friday",
    '    cron: "0 9 * * 5#L"',
    "    run: { command: [date] }",
    "  - id: last-day",
    '    cron: "0 0 L * *"',
    "    run: { command: [date] }",
    "  - id: nickname",
    '    cron: "@daily"',
    "    run: { command: [date] }",
    "  - id: anchored",
    "    every: 1h30m",
    '    anchor: "2026-01-01T00:10:00Z"',
    "    run: { command: [date] }",
    "  - id: by-hand",
    "    manual: true",
    "    guard: on-call only",
    "    runs_where: staging",
    "    run: { command: [date] }",
  ));
  assert.deepEqual(config.schedules.map((s) => s.rhythm), [
    { kind: "cron", expression: "*/10 * * * * *" },
    { kind: "cron", expression: "0 9 * * 5#L" },
    { kind: "cron", expression: "0 0 L * *" },
    { kind: "cron", expression: "@daily" },
    { kind: "every", everyMs: 5_400_000, anchor: Date.UTC(2026, 0, 1, 0, 10) },
    { kind: "manual" },
  ]);
  assert.equal(config.schedules[5]?.guard, "on-call only");
  assert.equal(config.schedules[5]?.runsWhere, "staging");
});

Deno.test("each runner: argv, one string through the shell, http, worker", () => {
  const config = parsed(yaml(
    "version: 1",
    "schedules:",
    "  - id: argv",
    "    every: 1m",
    '    run: { command: ["echo", "a b"] }',
    "  - id: shell",
    "    every: 1m",
    '    run: { command: "echo $HOME | wc -c", shell: true }',
    "  - id: http",
    "    every: 1m",
    "    run:",
    "      http:",
    "        method: post",
    "        url: https://example.com/hook",
    "        headers: { X-Team: ops }",
    "        body: '{\"ping\": true}'",
    "        timeout: 10s",
    "  - id: worker",
    "    every: 1m",
    "    run: { worker: send-digest }",
    "  - id: worker-args",
    "    every: 1m",
    "    run: { worker: send-digest, args: { to: [a, b], n: 2 } }",
  ));
  assert.deepEqual(config.schedules.map((s) => s.run), [
    { kind: "command", argv: ["echo", "a b"], shell: false },
    { kind: "command", argv: ["echo $HOME | wc -c"], shell: true },
    {
      kind: "http",
      method: "POST",
      url: "https://example.com/hook",
      headers: { "X-Team": "ops" },
      body: '{"ping": true}',
      timeoutMs: 10_000,
    },
    { kind: "worker", worker: "send-digest", args: {} },
    { kind: "worker", worker: "send-digest", args: { to: ["a", "b"], n: 2 } },
  ]);
});

// ---------------------------------------------------------------- one error of each code

Deno.test("an unknown time zone: timezone-unknown at the value, with id, field and value", () => {
  const error = only(yaml(
    "version: 1",
    "schedules:",
    "  - id: nightly",
    '    cron: "0 3 * * *"',
    "    timezone: Europe/Berln",
    "    run: { command: [backup] }",
  ));
  assert.deepEqual(error, {
    code: "timezone-unknown",
    file: "schedules.yaml",
    line: 5,
    column: 15,
    scheduleId: "nightly",
    field: "timezone",
    value: "Europe/Berln",
    message:
      'schedules.yaml:5:15: schedule "nightly": unknown time zone "Europe/Berln"; did you mean "Europe/Berlin"?',
  });
});

Deno.test("a time zone in the wrong case is unknown, with a suggestion", () => {
  const error = only(yaml(
    "version: 1",
    "defaults:",
    "  timezone: europe/london",
    "schedules:",
    ...HELLO,
  ));
  assert.equal(error.code, "timezone-unknown");
  assert.equal(
    error.message,
    'schedules.yaml:3:13: defaults: unknown time zone "europe/london"; did you mean "Europe/London"?',
  );
});

Deno.test("a zone other than UTC without local_time: local-time-policy-missing", () => {
  const error = only(yaml(
    "version: 1",
    "schedules:",
    "  - id: nightly",
    '    cron: "0 3 * * *"',
    "    timezone: Europe/London",
    "    run: { command: [backup] }",
  ));
  assert.equal(error.code, "local-time-policy-missing");
  assert.equal(
    error.message,
    'schedules.yaml:5:15: schedule "nightly": time zone "Europe/London" needs local_time with reason, gap and overlap',
  );
});

Deno.test("an incomplete local_time: local-time-policy-missing for each missing part", () => {
  const all = errors(yaml(
    "version: 1",
    "schedules:",
    "  - id: nightly",
    '    cron: "0 3 * * *"',
    "    timezone: Europe/London",
    '    local_time: { reason: "", gap: skip }',
    "    run: { command: [backup] }",
  ));
  assert.deepEqual(all.map((e) => [e.code, e.message]), [
    [
      "local-time-policy-missing",
      'schedules.yaml:6:17: schedule "nightly": local_time.overlap is missing',
    ],
    [
      "local-time-policy-missing",
      'schedules.yaml:6:27: schedule "nightly": local_time.reason must not be empty',
    ],
  ]);
});

Deno.test("a manual schedule without guard or runs_where: job-guard-missing", () => {
  const all = errors(yaml(
    "version: 1",
    "schedules:",
    "  - id: purge",
    "    manual: true",
    "    run: { command: [purge] }",
  ));
  assert.deepEqual(all.map((e) => [e.code, e.message]), [
    [
      "job-guard-missing",
      'schedules.yaml:3:5: schedule "purge": manual schedule needs guard: who may run it and when',
    ],
    [
      "job-guard-missing",
      'schedules.yaml:3:5: schedule "purge": manual schedule needs runs_where: the environment it may touch',
    ],
  ]);
});

Deno.test("a repeated id: duplicate-id at the second, naming the first line", () => {
  const error = only(yaml("version: 1", "schedules:", ...HELLO, ...HELLO));
  assert.equal(error.code, "duplicate-id");
  assert.equal(
    error.message,
    'schedules.yaml:6:9: schedule "hello": duplicate id "hello", first declared on line 3',
  );
});

Deno.test("February 31st: never-fires at the cron expression", () => {
  const error = only(yaml(
    "version: 1",
    "schedules:",
    "  - id: feb",
    '    cron: "0 0 31 2 *"',
    "    run: { command: [date] }",
  ));
  assert.equal(error.code, "never-fires");
  assert.equal(
    error.message,
    'schedules.yaml:4:11: schedule "feb": cron expression "0 0 31 2 *" never fires',
  );
});

Deno.test("a window between start_at and end_at with no occurrence: never-fires", () => {
  const error = only(yaml(
    "version: 1",
    "schedules:",
    "  - id: new-year",
    '    cron: "0 0 1 1 *"',
    '    start_at: "2026-02-01T00:00:00Z"',
    '    end_at: "2026-03-01T00:00:00Z"',
    "    run: { command: [date] }",
  ));
  assert.equal(error.code, "never-fires");
  assert.equal(
    error.message,
    'schedules.yaml:5:15: schedule "new-year": never fires after start_at "2026-02-01T00:00:00Z" before end_at "2026-03-01T00:00:00Z"',
  );
});

Deno.test("an invalid cron expression: schedule-invalid with the reason", () => {
  const error = only(yaml(
    "version: 1",
    "schedules:",
    "  - id: bad",
    '    cron: "61 * * * *"',
    "    run: { command: [date] }",
  ));
  assert.equal(error.code, "schedule-invalid");
  assert.match(
    error.message,
    /^schedules\.yaml:4:11: schedule "bad": invalid cron expression "61 \* \* \* \*": .+[^.]$/,
  );
  assert.equal(error.field, "cron");
});

Deno.test("an unknown field: schedule-invalid at the key", () => {
  const error = only(yaml(
    "version: 1",
    "schedules:",
    ...HELLO,
    "    colour: blue",
  ));
  assert.deepEqual(
    [error.code, error.line, error.column, error.field, error.message],
    [
      "schedule-invalid",
      6,
      5,
      "colour",
      'schedules.yaml:6:5: schedule "hello": unknown field "colour"',
    ],
  );
});

Deno.test("unknown fields at every level are errors", () => {
  assert.deepEqual(
    messages(yaml(
      "version: 1",
      "extra: 1",
      "defaults: { colour: red }",
      "queues: { q: { concurrency: 1, speed: 2 } }",
      "schedules:",
      "  - id: a",
      "    every: 1m",
      "    run: { command: [x], shel: true }",
    )),
    [
      'schedules.yaml:2:1: unknown field "extra"',
      'schedules.yaml:3:13: defaults: unknown field "colour"',
      'schedules.yaml:4:32: queue "q": unknown field "speed"',
      'schedules.yaml:8:26: schedule "a": unknown field "run.shel"; did you mean "shell"?',
    ],
  );
});

Deno.test("zero and negative durations are refused", () => {
  assert.deepEqual(
    messages(yaml(
      "version: 1",
      "schedules:",
      "  - id: a",
      "    every: 0s",
      "    timeout: -5m",
      "    grace: 15",
      "    run: { command: [x] }",
    )),
    [
      'schedules.yaml:4:12: schedule "a": every must be more than zero, got "0s"',
      'schedules.yaml:5:14: schedule "a": timeout must be more than zero, got "-5m"',
      'schedules.yaml:6:12: schedule "a": grace must be a duration such as "30s" or "1h30m", got 15',
    ],
  );
});

Deno.test("wrong types and out-of-range values name the field and the value", () => {
  assert.deepEqual(
    messages(yaml(
      "version: 2",
      "schedules:",
      "  - id: a",
      "    every: 1m",
      '    priority: "high"',
      "    max_attempts: 0",
      "    enabled: yes",
      "    misfire: later",
      "    tags: [ok, 3]",
      "    run: { command: [x] }",
      "  - 5",
    )),
    [
      "schedules.yaml:1:10: version must be 1, got 2",
      'schedules.yaml:5:15: schedule "a": priority must be a whole number, got "high"',
      'schedules.yaml:6:19: schedule "a": max_attempts must be at least 1, got 0',
      'schedules.yaml:7:14: schedule "a": enabled must be true or false, got "yes"',
      'schedules.yaml:8:14: schedule "a": misfire must be one of "skip", "fire_once" or "catch_up", got "later"',
      'schedules.yaml:9:16: schedule "a": tags[1] must be a string, got 3',
      "schedules.yaml:11:5: schedule #2 must be a mapping, got 5",
    ],
  );
});

Deno.test("rhythm and runner must each be exactly one", () => {
  assert.deepEqual(
    messages(yaml(
      "version: 1",
      "schedules:",
      "  - id: none",
      "    run: {}",
      "  - id: both",
      '    cron: "* * * * *"',
      "    every: 1m",
      "    run: { command: [x], worker: w }",
      "  - id: shell-list",
      "    every: 1m",
      '    run: { command: "echo hi" }',
    )),
    [
      'schedules.yaml:3:5: schedule "none": needs a rhythm: cron, every or manual: true',
      'schedules.yaml:4:10: schedule "none": run needs one of command, http, worker, workflow or pipeline',
      'schedules.yaml:7:12: schedule "both": has both cron and every, choose one rhythm',
      'schedules.yaml:8:34: schedule "both": run has both command and worker, choose one',
      'schedules.yaml:11:21: schedule "shell-list": run.command must be a list of strings, or one string with shell: true, got "echo hi"',
    ],
  );
});

Deno.test("a missing id, run and version are reported as missing", () => {
  assert.deepEqual(
    messages(yaml("schedules:", "  - every: 1m")),
    [
      "schedules.yaml:1:1: version is missing",
      "schedules.yaml:2:5: schedule #1: id is missing",
      "schedules.yaml:2:5: schedule #1: run is missing",
    ],
  );
});

Deno.test("several errors in one file are all reported, in file order", () => {
  const all = errors(yaml(
    "version: 1",
    "schedules:",
    "  - id: nightly",
    '    cron: "0 3 * * *"',
    "    timezone: Europe/Berln",
    "    run: { command: [backup] }",
    "  - id: nightly",
    "    manual: true",
    "    run: { command: [restore] }",
    "  - id: feb",
    '    cron: "0 0 31 2 *"',
    "    run: { command: [date] }",
  ));
  assert.deepEqual(all.map((e) => [e.code, e.line]), [
    ["timezone-unknown", 5],
    ["job-guard-missing", 7],
    ["job-guard-missing", 7],
    ["duplicate-id", 7],
    ["never-fires", 11],
  ]);
});

// ---------------------------------------------------------------- YAML

Deno.test("YAML syntax errors: yaml-invalid with a position", () => {
  const error = errors(yaml("version: 1", "schedules:", "  - id: a", "    cron: @daily"))[0]!;
  assert.equal(error.code, "yaml-invalid");
  assert.deepEqual([error.line, error.column], [4, 11]);
  assert.equal(
    error.message,
    'schedules.yaml:4:11: invalid YAML: a value cannot start with "@" unless quoted; write it in quotes: "@daily"',
  );
});

Deno.test("a duplicate YAML key: yaml-invalid at the second key", () => {
  const error = only(yaml("version: 1", "schedules:", ...HELLO, "    every: 1m"));
  assert.equal(error.code, "yaml-invalid");
  assert.equal(
    error.message,
    'schedules.yaml:6:5: duplicate key "every", first on line 4; a mapping holds each key once, keep one of them',
  );
});

Deno.test("several YAML documents and unknown tags are yaml-invalid", () => {
  assert.equal(errors(yaml("version: 1", "---", "version: 1"))[0]?.code, "yaml-invalid");
  assert.deepEqual(messages(yaml("version: !secret 1", "schedules: []")), [
    'schedules.yaml:1:10: unknown YAML tag "!secret"',
  ]);
  assert.deepEqual(
    messages(yaml("version: 1", "x: !!binary aGk=", "y: !!set { a }", "z: !!str 1")),
    [
      'schedules.yaml:2:13: unsupported YAML tag "!!binary"',
      'schedules.yaml:3:10: unsupported YAML tag "!!set"',
    ],
  );
});

Deno.test("an empty file and a file that is not a mapping name the file", () => {
  assert.deepEqual(messages(""), [
    "schedules.yaml:1:1: the file must be a mapping with version and schedules, got an empty value",
  ]);
  assert.deepEqual(messages("- 1\n"), [
    "schedules.yaml:1:1: the file must be a mapping with version and schedules, got a list",
  ]);
});

Deno.test("anchors and aliases: yaml-limits, each one reported", () => {
  const all = errors(yaml(
    "version: 1",
    "defaults: &base { queue: q }",
    "schedules:",
    "  - id: a",
    "    every: 1m",
    "    run: *base",
  ));
  assert.deepEqual(all.map((e) => [e.code, e.message]), [
    ["yaml-limits", 'schedules.yaml:2:11: YAML anchors are not allowed, got "&base"'],
    ["yaml-limits", 'schedules.yaml:6:10: YAML aliases are not allowed, got "*base"'],
  ]);
});

Deno.test("an alias bomb is refused quickly", () => {
  const lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (let i = 1; i < 10; i++) {
    lines.push(`a${i}: &a${i} [${Array.from({ length: 9 }, () => `*a${i - 1}`).join(",")}]`);
  }
  const started = performance.now();
  const all = errors(yaml(...lines));
  assert.ok(performance.now() - started < 1000);
  assert.ok(all.every((e) => e.code === "yaml-limits"));
  assert.equal(
    all.at(-1)?.message,
    "schedules.yaml:11:1: 71 more YAML anchors or aliases are not listed",
  );
});

Deno.test("flow nesting beyond 32 levels: yaml-limits, even a megabyte of it quickly", () => {
  const error = only(`version: 1\nx: ${"[".repeat(40)}${"]".repeat(40)}\n`);
  assert.equal(error.code, "yaml-limits");
  assert.equal(error.message, "schedules.yaml:2:35: YAML nesting is deeper than 32 levels");

  const started = performance.now();
  const big = only("[".repeat(MAX_FILE_BYTES - 10));
  assert.equal(big.code, "yaml-limits");
  assert.ok(performance.now() - started < 3000);
});

Deno.test("block nesting beyond 32 levels: yaml-limits", () => {
  const lines = Array.from({ length: 40 }, (_, i) => `${" ".repeat(i)}k${i}:`);
  const error = only(yaml(...lines, `${" ".repeat(40)}leaf`));
  assert.equal(error.code, "yaml-limits");
  assert.equal(error.message, "schedules.yaml:33:33: YAML nesting is deeper than 32 levels");
  const compact = only(yaml(`x: ${"- ".repeat(40)}leaf`));
  assert.equal(compact.code, "yaml-limits");
});

Deno.test("a file beyond 1 MiB: yaml-limits before parsing", async () => {
  const text = `version: 1\n# ${"x".repeat(MAX_FILE_BYTES)}\n`;
  const error = only(text);
  assert.equal(error.code, "yaml-limits");
  assert.match(
    error.message,
    /^schedules\.yaml:1:1: the file is \d+ bytes, more than the limit of 1048576 \(1 MiB\)$/,
  );

  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/big.yaml`, text);
    const result = await loadSchedules(`${dir}/big.yaml`);
    assert.equal(!result.ok && result.errors[0]?.code, "yaml-limits");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("loadSchedules() on a missing file: file-unreadable", async () => {
  const result = await loadSchedules("/nonexistent/schedules.yaml");
  assert.deepEqual(result, {
    ok: false,
    errors: [{
      code: "file-unreadable",
      file: "/nonexistent/schedules.yaml",
      line: 1,
      column: 1,
      message: "/nonexistent/schedules.yaml:1:1: the file does not exist",
    }],
  });
});

Deno.test("loadSchedules() on a directory or non-UTF-8 bytes is refused", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const asDir = await loadSchedules(dir);
    assert.equal(!asDir.ok && asDir.errors[0]?.code, "file-unreadable");
    await Deno.writeFile(`${dir}/latin1.yaml`, new Uint8Array([0x76, 0x3a, 0x20, 0xe9, 0x0a]));
    const latin1 = await loadSchedules(`${dir}/latin1.yaml`);
    assert.equal(
      !latin1.ok && latin1.errors[0]?.message,
      `${dir}/latin1.yaml:1:1: the file is not UTF-8 text`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a command's arguments must be strings, named by index", () => {
  assert.deepEqual(
    messages(yaml(
      "version: 1",
      "schedules:",
      "  - id: a",
      "    every: 1m",
      "    run: { command: [echo, true, 3] }",
    )),
    [
      'schedules.yaml:5:28: schedule "a": run.command[1] must be a string, got true',
      'schedules.yaml:5:34: schedule "a": run.command[2] must be a string, got 3',
    ],
  );
});

// ---------------------------------------------------------------- workers module and fan-out

const FAN = [
  "  - id: fan",
  "    every: 1h",
  '    selection: { command: ["list-accounts", "--active"] }',
];

Deno.test("a selection with a run makes a fan-out; batch_size defaults to 100", () => {
  const [schedule] = parsed(yaml(
    "version: 1",
    "schedules:",
    ...FAN,
    '    run: { command: ["reindex", "--account", "{item}"] }',
  )).schedules;
  assert.deepEqual(schedule?.fanOut, {
    selection: { kind: "command", argv: ["list-accounts", "--active"], shell: false },
    batchSize: 100,
  });
  assert.deepEqual(schedule?.run.kind === "command" && schedule.run.argv, [
    "reindex",
    "--account",
    "{item}",
  ]);
});

Deno.test("a worker selection with args, a shell selection, and batch_size are read", () => {
  const config = parsed(yaml(
    "version: 1",
    "schedules:",
    "  - id: by-worker",
    "    cron: '0 3 * * *'",
    "    selection: { worker: list-accounts, args: { region: eu } }",
    "    batch_size: 250",
    "    run: { worker: reindex, args: { deep: true } }",
    "  - id: by-shell",
    "    manual: true",
    "    guard: ops on call",
    "    runs_where: production",
    "    selection: { command: 'ls /srv | grep -v tmp', shell: true, env: { A: '${A}' } }",
    "    run: { command: 'reindex \"$JOBS_ITEM\"', shell: true }",
  ));
  assert.deepEqual(config.schedules.map((s) => s.fanOut), [
    {
      selection: { kind: "worker", worker: "list-accounts", args: { region: "eu" } },
      batchSize: 250,
    },
    {
      selection: {
        kind: "command",
        argv: ["ls /srv | grep -v tmp"],
        shell: true,
        env: { A: "${A}" },
      },
      batchSize: 100,
    },
  ]);
  // A schedule without a selection has no fanOut at all.
  assert.equal(parsed(yaml("version: 1", "schedules:", ...HELLO)).schedules[0]?.fanOut, undefined);
});

Deno.test("fan-out errors name the line, field and value", () => {
  assert.deepEqual(
    messages(yaml(
      "version: 1",
      "schedules:",
      "  - id: a",
      "    every: 1h",
      "    selection: { command: [ls], worker: w }",
      "    batch_size: 0",
      "    run: { worker: w, args: [1, 2] }",
      "  - id: b",
      "    every: 1h",
      "    selection: { shell: true }",
      "    batch_size: 2.5",
      "    run: { command: 'echo {item}', shell: true }",
      "  - id: c",
      "    every: 1h",
      "    batch_size: 10",
      "    run: { worker: w, args: { item: x } }",
      "  - id: d",
      "    every: 1h",
      "    selection: { http: { method: GET, url: 'https://x.test' } }",
      "    run: { worker: w, args: { item: x } }",
    )),
    [
      'schedules.yaml:5:41: schedule "a": selection has both command and worker, choose one',
      'schedules.yaml:6:17: schedule "a": batch_size must be at least 1, got 0',
      'schedules.yaml:7:29: schedule "a": run.args must be a mapping with selection (the item is added as args.item), got a list',
      'schedules.yaml:10:16: schedule "b": selection needs one of command or worker',
      'schedules.yaml:11:17: schedule "b": batch_size must be a whole number, got 2.5',
      'schedules.yaml:12:21: schedule "b": run.command must not hold {item} with shell: true (the item would run as shell code), use "$JOBS_ITEM", got "echo {item}"',
      'schedules.yaml:15:5: schedule "c": batch_size applies only with selection',
      'schedules.yaml:19:16: schedule "d": selection needs one of command or worker',
      'schedules.yaml:19:18: schedule "d": unknown field "selection.http"',
      'schedules.yaml:20:37: schedule "d": run.args.item is set by the selection, leave it out',
    ],
  );
  const error = errors(
    yaml("version: 1", "schedules:", ...FAN, "    batch_size: 20000", "    run: { worker: w }"),
  )[0]!;
  assert.equal(error.field, "batch_size");
  assert.equal(error.value, 20000);
  assert.equal(error.scheduleId, "fan");
  assert.equal(
    error.message,
    'schedules.yaml:6:17: schedule "fan": batch_size must be at most 10000, got 20000',
  );
});

Deno.test("workers: is resolved against the schedules file's folder", () => {
  const text = yaml("version: 1", "workers: ./workers.ts", "schedules:", ...HELLO);
  const at = (file: string) => {
    const result = parseSchedules(text, file);
    if (!result.ok) assert.fail(result.errors.map((e) => e.message).join("\n"));
    return result.config.workersModule;
  };
  assert.equal(at("schedules.yaml"), "workers.ts");
  assert.equal(at("/etc/jobs/schedules.yaml"), "/etc/jobs/workers.ts");
  assert.equal(at("conf/schedules.yaml"), "conf/workers.ts");
  const absolute = parseSchedules(yaml("version: 1", "workers: /opt/w.ts"), "/etc/s.yaml");
  assert.equal(absolute.ok && absolute.config.workersModule, "/opt/w.ts");
});

Deno.test("workers: must be a local module path", () => {
  for (const value of ["https://example.com/w.ts", "npm:workers", "./workers.py", "''"]) {
    const error = only(yaml("version: 1", `workers: ${value}`));
    assert.equal(error.field, "workers");
    assert.match(
      error.message,
      /^schedules\.yaml:2:10: workers must be the path of a local TypeScript or JavaScript module such as \.\/workers\.ts, got /,
    );
  }
});

Deno.test("with the module's worker names, an unknown run.worker or selection.worker is worker-unknown", () => {
  const text = yaml(
    "version: 1",
    "workers: ./workers.ts",
    "schedules:",
    "  - id: a",
    "    every: 1h",
    "    run: { worker: reindex }",
    "  - id: b",
    "    every: 1h",
    "    selection: { worker: list-acounts }",
    "    run: { worker: reindx }",
  );
  const result = parseSchedules(text, "schedules.yaml", {
    workers: { names: ["reindex", "list-accounts"] },
  });
  assert.equal(result.ok, false);
  const found = !result.ok ? result.errors : [];
  assert.deepEqual(found.map((e) => [e.code, e.field, e.value, e.scheduleId]), [
    ["worker-unknown", "selection.worker", "list-acounts", "b"],
    ["worker-unknown", "run.worker", "reindx", "b"],
  ]);
  assert.equal(
    found[0]!.message,
    'schedules.yaml:9:26: schedule "b": selection.worker "list-acounts" is not a worker of ' +
      '"./workers.ts" (it exports "reindex", "list-accounts"); did you mean "list-accounts"?',
  );
  // Without names (the parser alone), nothing is checked.
  assert.equal(parseSchedules(text, "schedules.yaml").ok, true);

  const broken = parseSchedules(text, "schedules.yaml", {
    workers: { error: "cannot be imported: boom" },
  });
  assert.deepEqual(!broken.ok && broken.errors.map((e) => [e.code, e.message]), [[
    "workers-invalid",
    'schedules.yaml:2:10: workers module "./workers.ts" cannot be loaded: cannot be imported: boom',
  ]]);
});

Deno.test("loadSchedules() with a workers loader checks the names it returns", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/schedules.yaml`;
    await Deno.writeTextFile(
      file,
      yaml(
        "version: 1",
        "workers: ./w.ts",
        "schedules:",
        "  - id: a",
        "    every: 1h",
        "    run: { worker: x }",
      ),
    );
    const asked: string[] = [];
    const ok = await loadSchedules(file, {
      workers: (module) => {
        asked.push(module);
        return Promise.resolve(["x"]);
      },
    });
    assert.equal(ok.ok, true);
    assert.deepEqual(asked, [`${dir}/w.ts`]);
    const missing = await loadSchedules(file, { workers: () => Promise.resolve(["y"]) });
    assert.equal(!missing.ok && missing.errors[0]?.code, "worker-unknown");
    const failing = await loadSchedules(file, {
      workers: () => Promise.reject(Object.assign(new Error("x"), { reason: "no such\nfile" })),
    });
    assert.equal(
      !failing.ok && failing.errors[0]?.message,
      `${file}:2:10: workers module "./w.ts" cannot be loaded: no such file`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
