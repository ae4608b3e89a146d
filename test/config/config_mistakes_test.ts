import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { type ConfigError, parseSchedules } from "../../src/config/load.ts";

const EXAMPLE = Deno.readTextFileSync(
  fileURLToPath(new URL("../../schedules.yaml", import.meta.url)),
);

/** A file from its lines, so that a test reads its own line numbers. */
function yaml(...lines: string[]): string {
  return lines.join("\n") + "\n";
}

function errors(text: string, workers?: readonly string[]): ConfigError[] {
  const result = parseSchedules(
    text,
    "schedules.yaml",
    workers ? { workers: { names: workers } } : {},
  );
  if (result.ok) assert.fail("expected errors, the file parsed");
  return result.errors;
}

/** The message of the one error of a file; fails when there are more. */
function only(text: string, workers?: readonly string[]): string {
  const all = errors(text, workers);
  assert.equal(all.length, 1, all.map((e) => e.message).join("\n"));
  return all[0]!.message;
}

/** The example file with one edit, which must apply. */
function example(from: string, to: string): string {
  assert.ok(EXAMPLE.includes(from), `the example holds ${JSON.stringify(from)}`);
  return EXAMPLE.replace(from, to);
}

const HEAD = ["version: 1", "schedules:", "  - id: a"];

// ---------------------------------------------------------------- YAML syntax: one error each

Deno.test("a tab in the indentation is one error at the tab: indent with spaces", () => {
  // The parser reported six errors for this line of the example file.
  assert.equal(
    only(example("    every: 15s", "\tevery: 15s")),
    "schedules.yaml:21:1: YAML does not allow tabs for indentation; indent with spaces",
  );
  assert.equal(
    only(yaml(...HEAD, "  \tevery: 1m", "    run: { command: [x] }")),
    "schedules.yaml:4:3: YAML does not allow tabs for indentation; indent with spaces",
  );
});

Deno.test("a key without its colon is one error at the key, with the line as it should read", () => {
  assert.equal(
    only(yaml(...HEAD, "    every 1m", "    run: { command: [x] }")),
    'schedules.yaml:4:5: invalid YAML: "every" needs a colon after it, as in every: 1m',
  );
  assert.equal(
    only(yaml("version 1", "schedules: []")),
    'schedules.yaml:1:1: invalid YAML: "version" needs a colon after it, as in version: 1',
  );
  assert.equal(
    only(yaml("version: 1", "schedules:", "  - id a", "    every: 1m")),
    'schedules.yaml:3:5: invalid YAML: "id" needs a colon after it, as in id: a',
  );
  assert.equal(
    only(yaml(...HEAD, "    every: 1m", "    run { command: [x] }")),
    'schedules.yaml:5:5: invalid YAML: "run" needs a colon after it, as in run: { command: [x] }',
  );
  assert.equal(
    only(yaml(...HEAD, "    every: 1m", "    run", "      command: [x]")),
    'schedules.yaml:5:5: invalid YAML: "run" needs a colon after it, as in run:',
  );
});

Deno.test("an unclosed quote is one error at its opening quote, not at the end of the file", () => {
  assert.equal(
    only(example('cron: "@hourly"', 'cron: "@hourly')),
    "schedules.yaml:35:11: invalid YAML: the double quote opened here is never closed; " +
      'end the value with "',
  );
  assert.equal(
    only(yaml(...HEAD, "    guard: 'on call", "    every: 1m")),
    "schedules.yaml:4:12: invalid YAML: the single quote opened here is never closed; " +
      "end the value with '",
  );
});

Deno.test("an unclosed bracket or brace is one error at the bracket", () => {
  assert.equal(
    only(yaml(...HEAD, "    every: 1m", "    run: { command: [x }")),
    'schedules.yaml:5:21: invalid YAML: the list opened with "[" here is never closed; ' +
      'end it with "]" (on one line, or with the lines in between indented deeper)',
  );
  // The parser reported three errors, on the lines after the brace.
  assert.equal(
    only(example("env: { LC_ALL: C }", "env: { LC_ALL: C")),
    'schedules.yaml:38:12: invalid YAML: the mapping opened with "{" here is never closed; ' +
      'end it with "}" (on one line, or with the lines in between indented deeper)',
  );
});

Deno.test("a list item under schedules: indented unlike the others is one error, not fourteen", () => {
  assert.equal(errors(EXAMPLE.replace("  - id: clock", " - id: clock")).length, 1);
  assert.equal(
    only(example("  - id: clock", " - id: clock")),
    "schedules.yaml:26:2: invalid YAML: this list item is indented 1 space but the one on " +
      "line 20 is indented 2; indent the items of one list alike",
  );
  assert.equal(
    only(example("  - id: clock", "   - id: clock")),
    "schedules.yaml:26:4: invalid YAML: this list item is indented 3 spaces but the one on " +
      "line 20 is indented 2; indent the items of one list alike",
  );
});

Deno.test("a key indented unlike the keys beside it is one error naming the key to line up with", () => {
  assert.equal(
    only(example("    overlap_policy: skip", "   overlap_policy: skip")),
    'schedules.yaml:28:4: invalid YAML: this line is indented 3 spaces but "every" on line 27 ' +
      "is indented 4; indent the keys of one mapping alike",
  );
  assert.equal(
    only(example("    overlap_policy: skip", "     overlap_policy: skip")),
    'schedules.yaml:28:6: invalid YAML: this line is indented 5 spaces but "every" on line 27 ' +
      "is indented 4; indent the keys of one mapping alike",
  );
  // At the column of the list's "-", a key is neither the item's nor the next item.
  assert.equal(
    only(yaml(...HEAD, "    every: 1m", "  run: { command: [x] }")),
    'schedules.yaml:5:3: invalid YAML: this line is indented 2 spaces but "every" on line 4 ' +
      "is indented 4; indent the keys of one mapping alike",
  );
});

Deno.test("a line indented unlike its neighbours is found below multi-line values", () => {
  const mistake = "    tags: [a]";
  const above = [
    ["a plain value over two lines", "    guard: on call", "      only"],
    ["a block scalar", "    guard: |", "      on call", "        only"],
    ["a flow list over two lines", "    tags_: [a,", "      b]"],
    ["a quoted value over two lines", '    guard: "on call', '      only"'],
  ];
  for (const [what, ...lines] of above) {
    const all = errors(yaml(...HEAD, "    every: 1m", ...lines!, "     " + mistake.trim()));
    const line = 5 + lines.length;
    assert.deepEqual(
      all.map((e) => e.message.replace(/ but .*$/, "")),
      [`schedules.yaml:${line}:6: invalid YAML: this line is indented 5 spaces`],
      what,
    );
  }
});

Deno.test("of several YAML syntax errors only the first is reported", () => {
  const all = errors(yaml(...HEAD, "    every 1m", "  - id: b", "    every 2m"));
  assert.deepEqual(all.map((e) => [e.code, e.line, e.column]), [["yaml-invalid", 4, 5]]);
});

Deno.test("each duplicated key is its own error, naming the line of the first", () => {
  assert.deepEqual(
    errors(yaml(...HEAD, "    every: 1m", "    every: 2m", "  - id: b", "    id: c")).map((e) =>
      e.message
    ),
    [
      'schedules.yaml:5:5: duplicate key "every", first on line 4; a mapping holds each key once, keep one of them',
      'schedules.yaml:7:5: duplicate key "id", first on line 6; a mapping holds each key once, keep one of them',
    ],
  );
});

Deno.test("a value that YAML reserves is one error with the value quoted", () => {
  assert.equal(
    only(yaml(...HEAD, "    cron: @daily", "    run: { command: [x] }")),
    'schedules.yaml:4:11: invalid YAML: a value cannot start with "@" unless quoted; write it in quotes: "@daily"',
  );
  assert.equal(
    only(yaml("version: 1", "---", "version: 1")),
    'schedules.yaml:2:1: a schedules file holds one YAML document; remove the "---" line and ' +
      "what follows it, or merge the documents",
  );
});

// ---------------------------------------------------------------- keys indentation put elsewhere

Deno.test("schedule keys flush with schedules: are one error, not every field reported missing", () => {
  assert.deepEqual(
    errors(yaml("version: 1", "schedules:", "- id: a", "every: 1m", "run: { command: [x] }")).map((
      e,
    ) => [e.code, e.line, e.column, e.field, e.message]),
    [[
      "schedule-invalid",
      4,
      1,
      "every",
      'schedules.yaml:4:1: "every" belongs to schedule "a" (line 3) but is not indented under it; ' +
      'indent it, and the key after it, to line up with "id"',
    ]],
  );
  assert.equal(
    only(yaml(...HEAD, "    every: 1m", "run: { command: [x] }")),
    'schedules.yaml:5:1: "run" belongs to schedule "a" (line 3) but is not indented under it; ' +
      'indent it to line up with "id"',
  );
});

Deno.test("defaults: and queues: with their keys not indented are one error each", () => {
  const flush = EXAMPLE.replace(/^ {2}(?=\S)/gm, (indent, offset) =>
    // Only the defaults and queues sections lose their indentation.
    offset < EXAMPLE.indexOf("schedules:") ? "" : indent);
  assert.deepEqual(errors(flush).map((e) => e.message), [
    'schedules.yaml:7:1: "queue" belongs to defaults (line 6) but is not indented under it; ' +
    'indent it, and the 5 keys after it, under "defaults:"',
    // The queue "reports" after it, flush, reads as the top-level reports: section.
    'schedules.yaml:15:1: "default" belongs to queues (line 14) but is not indented under it; ' +
    'indent it under "queues:"',
  ]);
  assert.equal(
    only(yaml("version: 1", "defaults:", "  queue: a", "max_attempts: 3")),
    'schedules.yaml:4:1: "max_attempts" belongs to defaults (line 2) but is not indented under it; ' +
      'indent it to line up with "queue"',
  );
});

Deno.test("a section indented under the one above it is one error: indent it less", () => {
  // queues: under defaults, with its queues still under it.
  assert.equal(
    only(example("queues:", "  queues:")),
    'schedules.yaml:14:3: "queues" belongs to the top level, not to defaults; indent it, and the ' +
      'key after it, 2 spaces less, to line up with "defaults"',
  );
  assert.equal(
    only(yaml(...HEAD, "    every: 1m", "    run:", "      command: [x]", "      timeout: 5m")),
    'schedules.yaml:7:7: "timeout" belongs to schedule "a", not to run of schedule "a"; indent it ' +
      '2 spaces less, to line up with "run"',
  );
});

Deno.test("a key without its colon before a flow mapping is one error, though it parses", () => {
  // `default { concurrency: 4 }` reads as the key "default { concurrency" with the value "4 }".
  assert.equal(
    only(example("default: { concurrency: 4 }", "default { concurrency: 4 }")),
    'schedules.yaml:15:3: invalid YAML: "default" needs a colon after it, as in ' +
      "default: { concurrency: 4 }",
  );
});

Deno.test("repeated keys where a list item's dash is missing are one error saying so", () => {
  assert.equal(
    only(EXAMPLE.replace("  - id: clock\n", "")),
    'schedules.yaml:26:5: duplicate key "every", first on line 21; 1 more key repeats below it: ' +
      'two entries may have run together where a "- " is missing',
  );
});

Deno.test("an empty run: with its command beside it is one error at the command", () => {
  const all = errors(yaml(...HEAD, "    every: 1m", "    run:", "    command: [x]"));
  assert.deepEqual(all.map((e) => [e.field, e.scheduleId, e.message]), [[
    "command",
    "a",
    'schedules.yaml:6:5: "command" belongs to run of schedule "a" (line 5) but is not indented ' +
    'under it; indent it under "run:"',
  ]]);
});

Deno.test("an unknown key that fits no mapping above it stays an unknown field", () => {
  assert.equal(
    only(yaml("version: 1", "queues:", "  fast: {}", "colour: blue")),
    'schedules.yaml:4:1: unknown field "colour"',
  );
  // A mapping of defaults' keys is no queue: `default` is a misspelt `defaults`.
  assert.equal(
    only(yaml("version: 1", "queues:", "  fast: {}", "default:", "  queue: x")),
    'schedules.yaml:4:1: unknown field "default"; did you mean "defaults"?',
  );
});

Deno.test("valid layouts are read as written: indentless lists, block scalars, flow over lines", () => {
  const result = parseSchedules(
    yaml(
      "version: 1",
      "defaults:",
      "  tags:",
      "  - team-a",
      "schedules:",
      "- id: a",
      "  every: 1m",
      "  enabled: false",
      "  run:",
      "    command: |",
      "      echo one",
      "        echo two",
      "    shell: true",
      "    env:",
      "      LANG: C",
      "- id: b",
      "  every: 1m",
      "  run: { command: [",
      "    x, y] }",
    ),
    "schedules.yaml",
  );
  if (!result.ok) assert.fail(result.errors.map((e) => e.message).join("\n"));
  assert.deepEqual(result.config.schedules.map((s) => s.run), [
    { kind: "command", argv: ["echo one\n  echo two\n"], shell: true, env: { LANG: "C" } },
    { kind: "command", argv: ["x", "y"], shell: false },
  ]);
});

// ---------------------------------------------------------------- did you mean

Deno.test("an unknown key suggests the nearest key at its level", () => {
  assert.equal(
    only(yaml("version: 1", "schedual:", "  - id: a")),
    'schedules.yaml:2:1: unknown field "schedual"; did you mean "schedules"?',
  );
  assert.equal(
    only(yaml(...HEAD, "    every: 1m", "    timout: 5m", "    run: { command: [x] }")),
    'schedules.yaml:5:5: schedule "a": unknown field "timout"; did you mean "timeout"?',
  );
  assert.equal(
    only(
      yaml(
        ...HEAD,
        "    every: 1m",
        "    backoff: { exponental: { base: 1s, max: 1m } }",
        "    run: { command: [x] }",
      ),
    ),
    'schedules.yaml:5:16: schedule "a": unknown field "backoff.exponental"; did you mean "exponential"?',
  );
  assert.equal(
    only(yaml("version: 1", "defaults: { colour: red }")),
    'schedules.yaml:2:13: defaults: unknown field "colour"',
  );
});

Deno.test("a misspelt key is one error: the key it meant is not also reported missing", () => {
  assert.deepEqual(
    errors(yaml(
      ...HEAD,
      "    evry: 1m",
      "    timezone: Europe/Paris",
      "    local_time: { reson: office hours, gap: skip, overlap: first }",
      "    run: { comand: [x] }",
    )).map((e) => e.message),
    [
      'schedules.yaml:4:5: schedule "a": unknown field "evry"; did you mean "every"?',
      'schedules.yaml:6:19: schedule "a": unknown field "local_time.reson"; did you mean "reason"?',
      'schedules.yaml:7:12: schedule "a": unknown field "run.comand"; did you mean "command"?',
    ],
  );
  // Another missing key is still reported.
  assert.deepEqual(
    errors(yaml(...HEAD, "    evry: 1m", "    timezone: Europe/Paris", "    run: { command: [x] }"))
      .map((e) => e.code),
    ["schedule-invalid", "local-time-policy-missing"],
  );
});

Deno.test("an unknown time zone suggests the nearest IANA names", () => {
  const zone = (name: string) => only(yaml("version: 1", "defaults:", `  timezone: ${name}`));
  assert.equal(
    zone("Europe/Berln"),
    'schedules.yaml:3:13: defaults: unknown time zone "Europe/Berln"; did you mean "Europe/Berlin"?',
  );
  assert.match(zone("America/New_Yrok"), /; did you mean "America\/New_York"\?$/);
  assert.match(zone("UTX"), /; did you mean "UTC"\?$/);
  assert.equal(
    zone("Nowhere/Atall"),
    'schedules.yaml:3:13: defaults: unknown time zone "Nowhere/Atall"',
  );
});

Deno.test("an unknown worker suggests the nearest worker names, and lists the exports when none is near", () => {
  const file = (worker: string) =>
    yaml(...HEAD, "    every: 1h", `    run: { worker: ${worker} }`, "workers: ./w.ts");
  const names = ["send-digest", "reindex", "cleanup"];
  assert.equal(
    only(file("send-digets"), names),
    'schedules.yaml:5:20: schedule "a": run.worker "send-digets" is not a worker of "./w.ts" ' +
      '(it exports "send-digest", "reindex", "cleanup"); did you mean "send-digest"?',
  );
  assert.equal(
    only(file("mailer"), names),
    'schedules.yaml:5:20: schedule "a": run.worker "mailer" is not a worker of "./w.ts"; ' +
      'it exports "send-digest", "reindex", "cleanup"',
  );
});
