/**
 * The `work_queues:` section of `schedules.yaml`: the issue's disputes queue
 * is valid and built into a typed definition (its score rule versioned, its
 * actions' runs, its bulk action's money and confirmation); `jobs check`
 * refuses, at the field's line and with its code, a queue without a claim
 * mode, a score without a rule, a bulk action with money and no
 * `confirm_by`, an action or a bulk action that names nothing, and a score
 * input without a weight.
 */

import assert from "node:assert/strict";
import { type ConfigError, parseSchedules } from "../../src/config/load.ts";
import { scoreAt, scoreItem } from "../../src/workqueue/definition.ts";

/** The issue's shape, with its formula; line numbers are used below. */
const ISSUE = [
  "version: 1", //                                          1
  "use_cases:", //                                          2
  "  use-case/payments.refund:", //                         3
  "    worker: refund_dispute", //                          4
  "work_queues:", //                                        5
  "  - id: disputes", //                                    6
  "    use_case: use-case/payments.review-dispute", //      7
  "    claim: required", //                                 8
  "    lease: 1h", //                                       9
  "    score:", //                                          10
  "      rule: rule/dispute.urgency-score", //              11
  "      inputs: [amount, age, evidence_missing]", //       12
  "      weights: { amount: 0.01, age: 2/day, evidence_missing: 30 }", // 13
  "    show: [amount, currency, age, evidence_missing]", // 14
  "    actions:", //                                        15
  "      - id: refund", //                                  16
  "        use_case: use-case/payments.refund", //          17
  "      - id: reject", //                                  18
  '        run: { command: ["./bin/reject-dispute"] }', //  19
  "    bulk:", //                                           20
  "      - id: release", //                                 21
  "        action: refund", //                              22
  "        money: { amount: amount, currency: currency }", // 23
  "        confirm_by: { totp: approver }", //              24
  "        second_person: true", //                         25
  "    roles: [support]", //                                26
];

function parse(lines: string[]) {
  return parseSchedules(lines.join("\n") + "\n", "/srv/app/schedules.yaml");
}

function errors(lines: string[]): ConfigError[] {
  const result = parse(lines);
  if (result.ok) assert.fail("expected errors, the file parsed");
  return result.errors;
}

Deno.test("the issue's disputes queue builds into a typed definition", () => {
  const result = parse(ISSUE);
  if (!result.ok) assert.fail(result.errors.map((e) => e.message).join("\n"));
  const [queue] = result.config.workQueues;
  assert.ok(queue);
  assert.equal(queue.id, "disputes");
  assert.equal(queue.claim, "required");
  assert.equal(queue.leaseMs, 3_600_000);
  assert.equal(queue.useCase, "use-case/payments.review-dispute");
  assert.deepEqual(queue.score?.inputs, ["amount", "age", "evidence_missing"]);
  assert.deepEqual(queue.score?.weights.age, {
    kind: "per-age",
    weight: 2,
    unitMs: 86_400_000,
    unit: "day",
  });
  assert.match(queue.score!.version, /^[\w-]{16}$/);
  assert.deepEqual(queue.actions, [
    {
      id: "refund",
      useCase: "use-case/payments.refund",
      run: { kind: "worker", worker: "refund_dispute" },
      queue: "default",
    },
    {
      id: "reject",
      useCase: null,
      run: { kind: "command", argv: ["./bin/reject-dispute"], shell: false },
      queue: "default",
    },
  ]);
  assert.deepEqual(queue.bulk, [{
    id: "release",
    action: "refund",
    money: { amount: "amount", currency: "currency" },
    confirmBy: { kind: "totp", role: "approver" },
    secondPerson: true,
  }]);
  assert.deepEqual(queue.roles, ["support"]);

  // The issue's row: EUR 1,900, 6 days old, evidence missing.
  const stored = scoreItem(queue.score!, { amount: 1900, evidence_missing: true });
  const item = {
    score: stored.score,
    scoreRate: stored.rate,
    inputs: stored.inputs,
    requestedAt: 0,
    ruleVersion: stored.version,
  };
  const at = scoreAt(item, 6 * 86_400_000, queue.score);
  assert.equal(at?.score, 19 + 12 + 30);
  assert.deepEqual(at?.terms.map((t) => [t.input, t.adds]), [
    ["amount", 19],
    ["age", 12],
    ["evidence_missing", 30],
  ]);
});

Deno.test("a changed weight changes the score rule's version", () => {
  const a = parse(ISSUE);
  const b = parse(ISSUE.map((l) => l.replace("amount: 0.01", "amount: 0.02")));
  assert.ok(a.ok && b.ok);
  assert.notEqual(a.config.workQueues[0]!.score!.version, b.config.workQueues[0]!.score!.version);
});

function only(errs: ConfigError[]): ConfigError {
  assert.equal(errs.length, 1, errs.map((e) => e.message).join("\n"));
  return errs[0]!;
}

Deno.test("jobs check refuses a queue without a claim mode, at the queue", () => {
  const e = only(errors(ISSUE.filter((l) => !l.includes("claim: required"))));
  assert.equal(e.code, "work-claim-missing");
  assert.equal(e.line, 6);
  assert.match(
    e.message,
    /^\/srv\/app\/schedules.yaml:6:\d+: work queue "disputes": work-claim-missing: needs claim/,
  );
});

Deno.test("jobs check refuses an unknown claim mode with the modes", () => {
  const e = only(errors(ISSUE.map((l) => l.replace("claim: required", "claim: always"))));
  assert.equal(e.code, "schedule-invalid");
  assert.equal(e.line, 8);
  assert.match(
    e.message,
    /claim must be one of "disabled", "optional" or "required", got "always"/,
  );
});

Deno.test("jobs check refuses a score without a rule", () => {
  const e = only(errors(ISSUE.filter((l) => !l.includes("rule: rule/"))));
  assert.equal(e.code, "work-score-rule-missing");
  assert.equal(e.line, 11);
});

Deno.test("jobs check refuses a bulk action with money and no confirm_by", () => {
  const e = only(errors(ISSUE.filter((l) => !l.includes("confirm_by"))));
  assert.equal(e.code, "work-bulk-confirm-missing");
  assert.equal(e.line, 21);
  assert.match(e.message, /bulk "release" moves money and needs confirm_by/);
});

Deno.test("jobs check refuses a bulk action naming no action of the queue", () => {
  const e = only(errors(ISSUE.map((l) => l.replace("action: refund", "action: refnud"))));
  assert.equal(e.code, "work-action-unknown");
  assert.equal(e.line, 22);
  assert.match(
    e.message,
    /names action "refnud", which is not an action of the queue \(refund, reject\)/,
  );
});

Deno.test("jobs check refuses an action naming no use case, and one that runs nothing", () => {
  const e = only(
    errors(
      ISSUE.map((l) =>
        l.replace("use_case: use-case/payments.refund", "use_case: use-case/payments.nope")
      ),
    ),
  );
  assert.equal(e.code, "work-action-unknown");
  assert.equal(e.line, 17);
  const nothing = only(errors(ISSUE.filter((l) => !l.includes('run: { command: ["./bin/reject'))));
  assert.equal(nothing.code, "work-action-invalid");
  assert.equal(nothing.line, 18);
});

Deno.test("jobs check refuses an input without a weight and a weight of no input", () => {
  const missing = only(errors(ISSUE.map((l) => l.replace(", evidence_missing: 30 }", " }"))));
  assert.equal(missing.code, "work-input-unknown");
  assert.equal(missing.line, 12);
  assert.match(missing.message, /score input "evidence_missing" has no weight/);
  const stray = only(
    errors(
      ISSUE.map((l) =>
        l.replace("inputs: [amount, age, evidence_missing]", "inputs: [amount, age]")
      ),
    ),
  );
  assert.equal(stray.code, "work-input-unknown");
  assert.match(
    stray.message,
    /score.weights names "evidence_missing", which is not one of score.inputs/,
  );
  const age = only(errors(ISSUE.map((l) => l.replace("age: 2/day", "age: 2"))));
  assert.equal(age.code, "work-input-unknown");
  assert.match(age.message, /the weight of age must be a number per unit of time such as "2\/day"/);
});

Deno.test("jobs check refuses an action's worker the workers module does not export", () => {
  const lines = [
    ...ISSUE.map((l) =>
      l.replace('run: { command: ["./bin/reject-dispute"] }', "run: { worker: reject_dispute }")
    ),
    "workers: ./workers.ts",
  ];
  const result = parseSchedules(lines.join("\n") + "\n", "/srv/app/schedules.yaml", {
    workers: { names: ["refund_dispute", "reject_disputes"] },
  });
  if (result.ok) assert.fail("expected errors, the file parsed");
  const e = only(result.errors);
  assert.equal(e.code, "worker-unknown");
  assert.equal(e.line, 19);
  assert.match(e.message, /run.worker "reject_dispute" is not a worker of "\.\/workers.ts"/);
});

Deno.test("jobs check refuses a queue role no person could hold, at its line", () => {
  const e = only(errors(ISSUE.map((l) => l.replace("[support]", '[support, "Support Team"]'))));
  assert.equal(e.code, "work-role-invalid");
  assert.equal(e.line, 26);
  assert.match(e.message, /role "Support Team" is not a role's name/);
});

/** The issue's queue fed by a pipeline whose sink is `sink` (at line 35). */
function withPipeline(sink: string): string[] {
  return [
    ...ISSUE,
    "pipelines:", //                                          27
    "  - id: chargebacks", //                                 28
    "    source: { file: ./chargebacks.ndjson }", //          29
    "    key: id", //                                         30
    "    steps:", //                                          31
    "      - drop: auto-refund", //                           32
    "        run: { worker: screen }", //                     33
    "    drop_reasons: [auto-refunded, poison]", //           34
    `    sink: ${sink}`, //                                    35
  ];
}

Deno.test("a pipeline's work queue sink carries the queue's definition", () => {
  const result = parse(withPipeline("{ work_queue: disputes, key: case, tenant: merchant }"));
  if (!result.ok) assert.fail(result.errors.map((e) => e.message).join("\n"));
  const sink = result.config.pipelines[0]!.sink;
  assert.equal(sink.kind, "work_queue");
  if (sink.kind !== "work_queue") return;
  assert.deepEqual([sink.queue, sink.key, sink.tenant], ["disputes", "case", "merchant"]);
  assert.deepEqual(sink.definition, result.config.workQueues[0]);
});

Deno.test("jobs check refuses a work queue sink naming no queue of the file, at its line", () => {
  const e = only(errors(withPipeline("{ work_queue: dispute }")));
  assert.equal(e.code, "sink-queue-unknown");
  assert.equal(e.line, 35);
  assert.match(
    e.message,
    /work queue "dispute", which work_queues: does not declare \(disputes\); did you mean "disputes"\?/,
  );
});

Deno.test("jobs check refuses a sink key or tenant without work_queue", () => {
  const e = only(errors(withPipeline("{ worker: save, key: case }")));
  assert.equal(e.code, "schedule-invalid");
  assert.match(e.message, /sink\.key applies only to work_queue/);
});
