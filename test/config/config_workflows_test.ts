/**
 * The `use_cases:` and `workflows:` sections of `schedules.yaml`, and
 * schedules that start a workflow: every record rule of a saga is an error
 * of the file with its code, line and field; a valid file's workflows are
 * compiled onto the config; a schedule's occurrence becomes a
 * `jobs.workflow` job carrying the compiled definition; `jobs check` prints
 * the record errors and fails.
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  type ConfigError,
  loadSchedules,
  type ParseOptions,
  parseSchedules,
} from "../../src/config/load.ts";
import { decide, definitionHash, occurrenceJob } from "../../src/schedule/plan.ts";
import type { Schedule } from "../../src/schedule/types.ts";
import type { ScheduleConfig } from "../../src/config/types.ts";
import { type WorkflowStartRun } from "../../src/workflow/types.ts";
import { WORKFLOW_START_WORKER } from "../../src/kernel/runs.ts";
import { workerNames } from "../../src/runners/workers_module.ts";
import { runJobs, withFiles } from "../support/cli.ts";

const EXAMPLE = fileURLToPath(new URL("../../examples/workflows.yaml", import.meta.url));
const LENDING = fileURLToPath(new URL("../../examples/lending/schedules.yaml", import.meta.url));

/** A file from its lines, so that a test reads its own line numbers. */
function yaml(...lines: string[]): string {
  return lines.join("\n") + "\n";
}

function parsed(text: string, options: ParseOptions = {}): ScheduleConfig {
  const result = parseSchedules(text, "schedules.yaml", options);
  if (!result.ok) assert.fail(result.errors.map((e) => e.message).join("\n"));
  return result.config;
}

function errors(text: string, options: ParseOptions = {}): ConfigError[] {
  const result = parseSchedules(text, "schedules.yaml", options);
  if (result.ok) assert.fail("expected errors, the file parsed");
  return result.errors;
}

/** The one error of a file; fails when there are more. */
function only(text: string): ConfigError {
  const all = errors(text);
  assert.equal(all.length, 1, all.map((e) => e.message).join("\n"));
  return all[0]!;
}

/** `code line:column field` of each error, for one-line comparisons. */
function brief(all: ConfigError[]): string[] {
  return all.map((e) => `${e.code} ${e.line}:${e.column} ${e.field ?? ""}`);
}

/** The issue's example, lines 1-23 (line numbers are used below). */
const ISSUE = [
  "version: 1",
  "use_cases:                      # where behaviour lives: one run per use case",
  '  use-case/lending.place-hold:  { command: ["./bin/app", "place-hold"] }',
  '  use-case/lending.cancel-hold: { command: ["./bin/app", "cancel-hold"] }',
  "  use-case/billing.charge-fee:  { worker: charge_fee }",
  "  use-case/billing.refund-fee:  { worker: refund_fee }",
  '  use-case/lending.notify:      { http: { method: POST, url: "https://notify.internal/v1/send" } }',
  "",
  "workflows:",
  "  - id: lend-copy",
  "    carried_by: workflow        # a saga: every step maps to one use case and names its compensation",
  "    steps:",
  "      - id: place-hold",
  "        use_case: use-case/lending.place-hold",
  "        compensation: { mode: use-case, use_case: use-case/lending.cancel-hold }",
  "      - id: charge-fee",
  "        depends_on: [place-hold]",
  "        use_case: use-case/billing.charge-fee",
  "        compensation: { mode: use-case, use_case: use-case/billing.refund-fee }",
  "      - id: notify",
  "        depends_on: [charge-fee]",
  "        use_case: use-case/lending.notify",
  "        compensation: { mode: none, reason: a sent notice cannot be recalled }",
];

/** Use cases a, b and undo (lines 3-5), then a saga `s` whose steps start on line 10. */
function saga(...steps: string[]): string {
  return yaml(
    "version: 1",
    "use_cases:",
    '  a: { command: ["true"] }',
    '  b: { command: ["true"] }',
    '  undo: { command: ["true"] }',
    "workflows:",
    "  - id: s",
    "    carried_by: workflow",
    "    steps:",
    ...steps,
  );
}

const UNDO = "        compensation: { mode: use-case, use_case: undo }";

// ---------------------------------------------------------------- valid files

Deno.test("the issue's lend-copy saga parses and compiles: 3 steps in order, compensations resolved", () => {
  const config = parsed(yaml(...ISSUE));
  assert.deepEqual(Object.keys(config.useCases), [
    "use-case/lending.place-hold",
    "use-case/lending.cancel-hold",
    "use-case/billing.charge-fee",
    "use-case/billing.refund-fee",
    "use-case/lending.notify",
  ]);
  assert.deepEqual(config.useCases["use-case/billing.charge-fee"], {
    kind: "worker",
    worker: "charge_fee",
  });
  assert.equal(config.workflows.length, 1);
  const [lend] = config.workflows;
  assert.equal(lend!.id, "lend-copy");
  assert.equal(lend!.saga, true);
  assert.match(lend!.hash, /^[\w-]{43}$/);
  assert.deepEqual(lend!.steps.map((s) => [s.id, s.useCase, s.dependsOn]), [
    ["place-hold", "use-case/lending.place-hold", []],
    ["charge-fee", "use-case/billing.charge-fee", ["place-hold"]],
    ["notify", "use-case/lending.notify", ["charge-fee"]],
  ]);
  const [hold, charge, notify] = lend!.steps;
  assert.deepEqual(hold!.job.spec, {
    kind: "command",
    argv: ["./bin/app", "place-hold"],
    shell: false,
  });
  assert.equal(hold!.job.worker, "jobs.command");
  assert.equal(charge!.job.worker, "charge_fee");
  assert.equal(charge!.job.spec, null);
  assert.deepEqual(notify!.job.spec, {
    kind: "http",
    method: "POST",
    url: "https://notify.internal/v1/send",
  });
  const compensation = hold!.compensation;
  assert.equal(compensation?.mode, "use-case");
  if (compensation?.mode !== "use-case") return;
  assert.equal(compensation.useCase, "use-case/lending.cancel-hold");
  assert.deepEqual(compensation.job.spec, {
    kind: "command",
    argv: ["./bin/app", "cancel-hold"],
    shell: false,
  });
  assert.deepEqual(
    charge!.compensation?.mode === "use-case" && charge!.compensation.job.worker,
    "refund_fee",
  );
  assert.deepEqual(notify!.compensation, {
    mode: "none",
    reason: "a sent notice cannot be recalled",
  });
});

Deno.test("a file without workflows has no use cases and an empty workflows list", () => {
  const config = parsed(yaml("version: 1", "schedules: []"));
  assert.deepEqual(config.useCases, {});
  assert.deepEqual(config.workflows, []);
});

Deno.test("a plain workflow: run steps, for_each, engine settings, use-case queue and priority", () => {
  const config = parsed(yaml(
    "version: 1",
    "use_cases:",
    '  report: { command: ["sh", "-c", "cat"], queue: reports, priority: 3 }',
    '  undo-report: { command: ["true"], queue: undo }',
    "workflows:",
    "  - id: import",
    "    queue: imports",
    "    steps:",
    "      - id: report",
    "        depends_on: [each]",
    "        use_case: report",
    "        compensation: { mode: use-case, use_case: undo-report }",
    "      - id: list",
    '        run: { command: ["ls"], cwd: /tmp, env: { A: b } }',
    "      - id: each",
    "        for_each: list",
    "        optional: true",
    "        run: { worker: import-one }",
    "        max_attempts: 4",
    "        timeout: 30s",
    "        backoff: { exponential: { base: 1s, max: 1m } }",
    "        priority: 7",
    "        tags: [bulk]",
    "      - id: notify",
    "        depends_on: [report]",
    "        queue: mail",
    "        priority: 1",
    '        run: { http: { method: post, url: "https://x.test/done", timeout: 5s } }',
  ));
  const [flow] = config.workflows;
  assert.equal(flow!.saga, false);
  // Dependencies first, file order otherwise.
  assert.deepEqual(flow!.steps.map((s) => s.id), ["list", "each", "report", "notify"]);
  const byId = Object.fromEntries(flow!.steps.map((s) => [s.id, s]));
  assert.deepEqual(byId.list!.job, {
    worker: "jobs.command",
    spec: { kind: "command", argv: ["ls"], shell: false, cwd: "/tmp", env: { A: "b" } },
    queue: "imports",
    priority: 0,
    maxAttempts: 20,
    tags: [],
  });
  assert.deepEqual(byId.each!.forEach, "list");
  assert.deepEqual(byId.each!.dependsOn, ["list"]);
  assert.equal(byId.each!.optional, true);
  assert.deepEqual(byId.each!.job, {
    worker: "import-one",
    spec: null,
    queue: "imports",
    priority: 7,
    maxAttempts: 4,
    tags: ["bulk"],
    timeoutMs: 30_000,
    backoff: { kind: "exponential", baseMs: 1_000, maxMs: 60_000 },
  });
  // The use case's queue and priority beat the workflow's, for the step and its compensation.
  assert.equal(byId.report!.job.queue, "reports");
  assert.equal(byId.report!.job.priority, 3);
  const undo = byId.report!.compensation;
  assert.ok(undo?.mode === "use-case");
  assert.equal(undo.job.queue, "undo");
  // A step's own queue and priority win.
  assert.equal(byId.notify!.job.queue, "mail");
  assert.equal(byId.notify!.job.priority, 1);
  assert.deepEqual(byId.notify!.job.spec, {
    kind: "http",
    method: "POST",
    url: "https://x.test/done",
    timeoutMs: 5_000,
  });
});

Deno.test("examples/workflows.yaml loads: a plain workflow a schedule starts", async () => {
  const result = await loadSchedules(EXAMPLE);
  if (!result.ok) assert.fail(result.errors.map((e) => e.message).join("\n"));
  const { workflows, schedules } = result.config;
  assert.deepEqual(workflows.map((w) => [w.id, w.saga]), [["shout-words", false]]);
  assert.equal(workflows[0]!.steps.find((s) => s.id === "shout")?.forEach, "list");
  for (const step of workflows[0]!.steps) assert.equal(step.job.spec?.kind, "command");
  assert.equal(schedules[0]?.workflow, "shout-words");
});

Deno.test("examples/lending/schedules.yaml loads the issue's saga, its workers module checked", async () => {
  const result = await loadSchedules(LENDING, { workers: workerNames });
  if (!result.ok) assert.fail(result.errors.map((e) => e.message).join("\n"));
  const [saga] = result.config.workflows;
  assert.equal(saga?.id, "lend-copy");
  assert.equal(saga?.saga, true);
  assert.deepEqual(saga?.steps.map((s) => [s.id, s.useCase]), [
    ["place-hold", "use-case/lending.place-hold"],
    ["charge-fee", "use-case/billing.charge-fee"],
    ["notify", "use-case/lending.notify"],
  ]);
});

// ---------------------------------------------------------------- record errors

Deno.test("a saga step with no use case: behavior-unrecorded at the step", () => {
  const error = only(saga("      - id: place-hold", UNDO));
  assert.equal(error.code, "behavior-unrecorded");
  assert.equal(error.line, 10);
  assert.equal(error.field, "steps[0].use_case");
  assert.match(
    error.message,
    /^schedules\.yaml:10:9: workflow "s": behavior-unrecorded: saga step "place-hold" maps to no use case/,
  );
});

Deno.test("a saga step whose id is a declared use case maps to it", () => {
  const config = parsed(saga("      - id: a", UNDO));
  assert.equal(config.workflows[0]!.steps[0]!.useCase, "a");
});

Deno.test("a saga step that runs a command directly: behavior-unrecorded at run", () => {
  const error = only(saga("      - id: hold", '        run: { command: ["true"] }', UNDO));
  assert.equal(error.code, "behavior-unrecorded");
  assert.deepEqual([error.line, error.column, error.field], [11, 14, "steps[0].run"]);
  assert.deepEqual(error.value, { command: ["true"] });
});

Deno.test("a saga step mapped to two use cases, or to a use case and a run: use-case-ambiguous", () => {
  const all = errors(saga(
    "      - id: one",
    "        use_case: [a, b]",
    UNDO,
    "      - id: two",
    "        use_case: b",
    '        run: { command: ["true"] }',
    UNDO,
  ));
  assert.deepEqual(brief(all), [
    "use-case-ambiguous 11:19 steps[0].use_case",
    "use-case-ambiguous 14:19 steps[1].use_case",
  ]);
  assert.deepEqual(all[0]!.value, ["a", "b"]);
});

Deno.test("a plain workflow's step mapped to two use cases is use-case-ambiguous too", () => {
  const error = only(yaml(
    "version: 1",
    "use_cases: { a: { command: [x] }, b: { command: [y] } }",
    "workflows:",
    "  - id: w",
    "    steps:",
    "      - { id: one, use_case: [a, b] }",
  ));
  assert.equal(error.code, "use-case-ambiguous");
  assert.equal(error.line, 6);
  assert.match(error.message, /step "one" maps to more than one use case \(a, b\)/);
});

Deno.test("a use case nobody declared: use-case-unknown, for a step and a compensation", () => {
  const all = errors(saga(
    "      - id: one",
    "        use_case: aa",
    "        compensation: { mode: use-case, use_case: undoo }",
  ));
  assert.deepEqual(brief(all), [
    "use-case-unknown 11:19 steps[0].use_case",
    "use-case-unknown 12:51 steps[0].compensation.use_case",
  ]);
  assert.match(all[0]!.message, /no use case "aa"; did you mean "a"\?$/);
  assert.match(all[1]!.message, /no use case "undoo"; did you mean "undo"\?$/);
});

Deno.test("a use case claimed by two steps of one saga: use-case-shared at the second", () => {
  const error = only(saga(
    "      - id: one",
    "        use_case: a",
    UNDO,
    "      - id: two",
    "        use_case: a",
    UNDO,
  ));
  assert.equal(error.code, "use-case-shared");
  assert.deepEqual([error.line, error.field, error.value], [14, "steps[1].use_case", "a"]);
  assert.match(error.message, /use case "a" is claimed by steps "one" and "two"/);
});

Deno.test("a saga step without compensation: compensation-missing at the step", () => {
  const error = only(saga("      - id: one", "        use_case: a"));
  assert.equal(error.code, "compensation-missing");
  assert.deepEqual([error.line, error.field], [10, "steps[0].compensation"]);
  assert.match(error.message, /\{ mode: use-case, use_case \} or \{ mode: none, reason \}/);
});

Deno.test("a compensation with no such mode, or without what its mode needs: compensation-invalid", () => {
  const all = errors(saga(
    "      - id: a",
    "        compensation: { mode: sometimes }",
    "      - id: b",
    "        compensation: { mode: none }",
    "      - id: undo",
    "        compensation: { mode: use-case }",
  ));
  assert.deepEqual(brief(all), [
    "compensation-invalid 11:31 steps[0].compensation.mode",
    "compensation-invalid 13:23 steps[1].compensation.reason",
    "compensation-invalid 15:23 steps[2].compensation.use_case",
  ]);
  assert.match(all[0]!.message, /mode must be use-case or none, got "sometimes"/);
});

Deno.test("retries, timeouts and backoff in a saga's record: engine-config-in-record for each", () => {
  const all = errors(saga(
    "      - id: a",
    UNDO,
    "        max_attempts: 3",
    "        timeout: 5m",
    "        backoff: { fixed: 1s }",
  ));
  assert.deepEqual(brief(all), [
    "engine-config-in-record 12:23 steps[0].max_attempts",
    "engine-config-in-record 13:18 steps[0].timeout",
    "engine-config-in-record 14:18 steps[0].backoff",
  ]);
  assert.match(
    all[0]!.message,
    /saga step "a" sets max_attempts: retries, backoff and timeouts live/,
  );
  assert.match(all[1]!.message, /sets timeout:/);
});

Deno.test("steps that depend on each other: workflow-cycle, and on themselves", () => {
  const all = errors(yaml(
    "version: 1",
    "workflows:",
    "  - id: w",
    "    steps:",
    '      - { id: a, depends_on: [c], run: { command: ["true"] } }',
    '      - { id: b, depends_on: [a], run: { command: ["true"] } }',
    '      - { id: c, depends_on: [b], run: { command: ["true"] } }',
    '      - { id: d, depends_on: [d], run: { command: ["true"] } }',
  ));
  assert.deepEqual(brief(all), [
    "workflow-cycle 5:7 steps",
    "workflow-cycle 8:31 steps[3].depends_on[0]",
  ]);
  assert.match(all[0]!.message, /in a cycle: a -> c -> b -> a/);
  assert.match(all[1]!.message, /step "d" depends on itself/);
});

Deno.test("depends_on and for_each that name no step: step-unknown, with a suggestion", () => {
  const all = errors(yaml(
    "version: 1",
    "workflows:",
    "  - id: w",
    "    steps:",
    '      - { id: list, run: { command: ["true"] } }',
    '      - { id: each, for_each: lst, run: { command: ["true"] } }',
    '      - { id: sum, depends_on: [each, nope], run: { command: ["true"] } }',
  ));
  assert.deepEqual(brief(all), [
    "step-unknown 6:31 steps[1].for_each",
    "step-unknown 7:39 steps[2].depends_on[1]",
  ]);
  assert.match(all[0]!.message, /no step "lst"; did you mean "list"\?$/);
});

Deno.test("a repeated workflow id or step id is refused", () => {
  const all = errors(yaml(
    "version: 1",
    "workflows:",
    '  - { id: w, steps: [{ id: a, run: { command: ["true"] } }] }',
    '  - { id: w, steps: [{ id: a, run: { command: ["true"] } }, { id: a, run: { worker: x } }] }',
  ));
  assert.deepEqual(brief(all), ["duplicate-id 4:11 id", "step-duplicate 4:67 steps[1].id"]);
  assert.match(all[0]!.message, /duplicate workflow id "w", first declared on line 3/);
});

Deno.test("unknown keys in a workflow, a step and a use case name the nearest key", () => {
  const all = errors(yaml(
    "version: 1",
    "use_cases:",
    '  a: { comand: ["true"] }',
    "workflows:",
    "  - id: w",
    "    carried_by: workflow",
    "    stepz: []",
    "  - id: v",
    "    carried_by: workflow",
    "    steps:",
    "      - id: a",
    "        compensaton: { mode: none, reason: r }",
    "        depend_on: [a]",
  ));
  assert.deepEqual(
    all.map((e) => e.message.replace(/^schedules\.yaml:/, "")),
    [
      '3:8: use case "a": unknown field "comand"; did you mean "command"?',
      '7:5: workflow "w": unknown field "stepz"; did you mean "steps"?',
      '12:9: workflow "v": unknown field "steps[0].compensaton"; did you mean "compensation"?',
      '13:9: workflow "v": unknown field "steps[0].depend_on"; did you mean "depends_on"?',
    ],
  );
});

Deno.test("a use case must run one thing, and its id follow the id rule", () => {
  const all = errors(yaml(
    "version: 1",
    "use_cases:",
    '  a: { command: ["true"], worker: w }',
    "  b: { queue: q }",
    '  "#bad": { worker: w }',
  ));
  assert.deepEqual(all.map((e) => e.message.replace(/^schedules\.yaml:/, "")), [
    '3:35: use case "a": has both command and worker, choose one',
    '4:6: use case "b": needs one of command, http or worker',
    '5:3: use case "#bad": id must be 1-128 letters, digits or ._/-, starting with a letter or digit, got "#bad"',
  ]);
});

Deno.test("with a workers module, a use case's or step's unknown worker is worker-unknown", () => {
  const all = errors(
    yaml(
      "version: 1",
      "workers: ./workers.ts",
      "use_cases:",
      "  charge: { worker: charge_fe }",
      "workflows:",
      "  - id: w",
      "    steps:",
      "      - { id: a, use_case: charge }",
      "      - { id: b, run: { worker: refund } }",
    ),
    { workers: { names: ["charge_fee", "refund_fee"] } },
  );
  assert.deepEqual(brief(all), [
    "worker-unknown 4:21 worker",
    "worker-unknown 9:33 steps[1].run.worker",
  ]);
  assert.match(
    all[0]!.message,
    /worker "charge_fe" is not a worker of .*did you mean "charge_fee"\?/,
  );
});

// ---------------------------------------------------------------- schedules that start a workflow

const STARTS = [
  "schedules:",
  "  - id: lend-hourly",
  "    every: 1h",
  '    run: { workflow: lend-copy, input: { copy: "c-1", days: 14 } }',
];

Deno.test("a schedule that starts lend-copy plans jobs.workflow occurrences carrying the definition", () => {
  const config = parsed(yaml(...ISSUE, ...STARTS));
  const schedule = config.schedules[0]!;
  assert.equal(schedule.workflow, "lend-copy");
  const T = Date.UTC(2026, 0, 1);
  const decision = decide(
    schedule,
    { enabled: true, lastPlannedFor: T, executing: 0, waiting: 0 },
    T + 3_600_000,
  );
  assert.equal(decision.jobs.length, 1);
  const job = decision.jobs[0]!;
  assert.equal(job.worker, WORKFLOW_START_WORKER);
  assert.equal(job.occurrence, "lend-hourly@2026-01-01T01:00:00.000Z");
  const args = JSON.parse(job.args) as WorkflowStartRun;
  assert.equal(args.kind, "workflow");
  assert.deepEqual(args.input, { copy: "c-1", days: 14 });
  assert.deepEqual(args.definition, config.workflows[0]);
  assert.deepEqual(args.definition.steps.map((s) => s.id), ["place-hold", "charge-fee", "notify"]);
});

Deno.test("a workflow run without input starts with {}", () => {
  const config = parsed(yaml(...ISSUE, ...STARTS.slice(0, 3), "    run: { workflow: lend-copy }"));
  const job = occurrenceJob(config.schedules[0]!, {
    at: 0,
    occurrence: "lend-hourly@1970-01-01T00:00:00.000Z",
    local: "",
    note: null,
  });
  assert.deepEqual((JSON.parse(job.args) as WorkflowStartRun).input, {});
});

Deno.test("the schedule's definition hash changes when the workflow it starts changes", () => {
  const hash = (text: string): string => definitionHash(parsed(text).schedules[0]! as Schedule);
  const before = hash(yaml(...ISSUE, ...STARTS));
  assert.equal(hash(yaml(...ISSUE, ...STARTS)), before);
  const changed = ISSUE.map((line) => line.replace('"cancel-hold"]', '"cancel-hold", "--now"]'));
  assert.notEqual(hash(yaml(...changed, ...STARTS)), before);
});

Deno.test("a schedule naming no workflow of the file: workflow-unknown with a suggestion", () => {
  const error = only(yaml(
    ...ISSUE,
    "schedules:",
    "  - id: lend",
    "    every: 1h",
    "    run: { workflow: lend-cpy }",
  ));
  assert.equal(error.code, "workflow-unknown");
  assert.deepEqual([error.line, error.field, error.value], [27, "run.workflow", "lend-cpy"]);
  assert.match(
    error.message,
    /schedule "lend": run\.workflow "lend-cpy" is not a workflow of the file; did you mean "lend-copy"\?/,
  );
});

Deno.test("a workflow run with a selection, or input without a workflow, is refused", () => {
  const all = errors(yaml(
    ...ISSUE,
    "schedules:",
    "  - id: fan",
    "    every: 1h",
    "    selection: { command: [ls] }",
    "    run: { workflow: lend-copy }",
    "  - id: cmd",
    "    every: 1h",
    "    run: { command: [ls], input: {} }",
  ));
  assert.deepEqual(all.map((e) => e.message.replace(/^schedules\.yaml:/, "")), [
    '28:22: schedule "fan": run.workflow cannot be fanned out by a selection: a workflow\'s step may use for_each',
    '31:27: schedule "cmd": run.input applies only to workflow',
  ]);
});

// ---------------------------------------------------------------- jobs check

Deno.test("jobs check prints a saga's record error with file:line and code, and exits 1", async () => {
  const text = saga("      - id: one", "        use_case: a");
  await withFiles(text, async ({ config }) => {
    const { code, err } = await runJobs(["check", "--config", config], { now: 0 });
    assert.equal(code, 1);
    assert.match(
      err,
      /schedules\.yaml:10:9: workflow "s": compensation-missing: saga step "one" names no compensation/,
    );
    assert.match(err, /jobs check: .*schedules\.yaml: 1 error/);
    const json = await runJobs(["check", "--config", config, "--json"], { now: 0 });
    assert.equal(json.code, 1);
    const [error] = JSON.parse(json.out).errors;
    assert.equal(error.code, "compensation-missing");
    assert.equal(error.line, 10);
  });
});

Deno.test("jobs check on examples/workflows.yaml passes and counts its workflows", async () => {
  const { code, out, err } = await runJobs(["check", "--config", EXAMPLE], { now: 0 });
  assert.equal(code, 0, err);
  assert.match(out, /valid, 1 schedule, 0 queues, 1 workflow \(0 sagas\), 3 use cases$/);
});

// ------------------------------------------------- a use case's retries (issue 26.2)

/** A saga of command use cases that say how their jobs are retried; lines 1-18. */
const RETRYING = [
  "version: 1",
  "use_cases:",
  "  hold:",
  '    command: ["./bin/app", "hold"]',
  "    max_attempts: 3",
  "    backoff: { fixed: 10s }",
  "    timeout: 30s",
  '  release: { command: ["./bin/app", "release"], max_attempts: 5, timeout: 1m }',
  "  charge: { worker: charge_fee, max_attempts: 2, backoff: { exponential: { base: 1s, max: 1m } } }",
  '  refund: { command: ["./bin/app", "refund"] }',
  "workflows:",
  "  - id: s",
  "    carried_by: workflow",
  "    steps:",
  "      - { id: hold, compensation: { mode: use-case, use_case: release } }",
  "      - id: charge",
  "        depends_on: [hold]",
  "        compensation: { mode: use-case, use_case: refund }",
];

Deno.test("use_cases: max_attempts, backoff and timeout go onto the jobs that run the use case, its compensations' included", () => {
  const config = parsed(yaml(...RETRYING));
  const byId = Object.fromEntries(config.workflows[0]!.steps.map((s) => [s.id, s]));
  const hold = byId.hold!;
  assert.equal(hold.job.maxAttempts, 3);
  assert.deepEqual(hold.job.backoff, { kind: "fixed", delayMs: 10_000 });
  assert.equal(hold.job.timeoutMs, 30_000);
  assert.ok(hold.compensation?.mode === "use-case");
  assert.equal(hold.compensation.job.maxAttempts, 5);
  assert.equal(hold.compensation.job.timeoutMs, 60_000);
  assert.equal(hold.compensation.job.backoff, undefined);
  // A worker use case's declared attempts are not replaced by the worker's own.
  const charge = byId.charge!;
  assert.equal(charge.job.maxAttempts, 2);
  assert.equal(charge.job.attemptsFromWorker, undefined);
  assert.deepEqual(charge.job.backoff, { kind: "exponential", baseMs: 1_000, maxMs: 60_000 });
  // A use case that says nothing keeps the defaults.
  assert.ok(charge.compensation?.mode === "use-case");
  assert.equal(charge.compensation.job.maxAttempts, 20);
  assert.equal(charge.compensation.job.timeoutMs, undefined);
  // The settings are part of the definition: its hash changes with them.
  const other = parsed(
    yaml(...RETRYING.map((l) => l.replace("max_attempts: 3", "max_attempts: 4"))),
  );
  assert.notEqual(other.workflows[0]!.hash, config.workflows[0]!.hash);
});

Deno.test("jobs check accepts a use case's retries and refuses bad values with file:line and the value, as for a schedule", async () => {
  await withFiles(yaml(...RETRYING), async ({ config }) => {
    const { code, out, err } = await runJobs(["check", "--config", config], { now: 0 });
    assert.equal(code, 0, err);
    assert.match(out, /valid, .*1 workflow \(1 saga\), 4 use cases$/);
  });
  const bad = yaml(
    "version: 1",
    "use_cases:",
    "  a:",
    '    command: ["false"]',
    "    max_attempts: 0",
    "    backoff: { fixed: soon }",
    "    timeout: 30x",
    '  b: { command: ["false"], backoff: { exponential: { base: 1m, max: 1s } } }',
    '  c: { command: ["false"], backoff: {} }',
    '  d: { command: ["false"], max_attempts: 2.5, retries: 3 }',
  );
  const messages = errors(bad).map((e) => e.message);
  assert.deepEqual(messages.slice(0, 5), [
    'schedules.yaml:5:19: use case "a": max_attempts must be at least 1, got 0',
    'schedules.yaml:6:23: use case "a": backoff.fixed must be a number with a unit, such as "250ms", "90s", "15m", "1h30m" or "7d", got "soon"',
    'schedules.yaml:7:14: use case "a": timeout must be a number with a unit, such as "250ms", "90s", "15m", "1h30m" or "7d", got "30x"',
    'schedules.yaml:8:69: use case "b": backoff.exponential.max must not be less than base, got "1s"',
    'schedules.yaml:9:37: use case "c": backoff needs fixed or exponential',
  ]);
  assert.match(
    messages[5]!,
    /^schedules\.yaml:10:\d+: use case "d": max_attempts must be a whole number/,
  );
  assert.match(messages[6]!, /^schedules\.yaml:10:\d+: use case "d": unknown field "retries"/);
  await withFiles(bad, async ({ config }) => {
    const { code, err } = await runJobs(["check", "--config", config], { now: 0 });
    assert.equal(code, 1);
    assert.match(err, /schedules\.yaml:5:19: use case "a": max_attempts must be at least 1, got 0/);
  });
});

Deno.test("max_attempts, backoff and timeout stay out of a saga's steps when its use cases may set them", () => {
  const all = errors(yaml(
    ...RETRYING.slice(0, 14),
    "      - id: hold",
    "        compensation: { mode: use-case, use_case: release }",
    "        max_attempts: 3",
    "        timeout: 5m",
    "        backoff: { fixed: 1s }",
  ));
  assert.deepEqual(brief(all), [
    "engine-config-in-record 17:23 steps[0].max_attempts",
    "engine-config-in-record 18:18 steps[0].timeout",
    "engine-config-in-record 19:18 steps[0].backoff",
  ]);
  assert.match(
    all[0]!.message,
    /sets max_attempts: retries, backoff and timeouts live in its use case/,
  );
});
