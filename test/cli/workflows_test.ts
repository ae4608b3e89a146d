/**
 * The workflow commands end to end through the command line: `jobs start`
 * (a workflow of the schedules file; prints the run id), `jobs workflows`,
 * `jobs workflow show | cancel | retry`, and `jobs runbook` covering
 * workflows. The steps run through the real claim -> perform -> record
 * path (`drainAllJobs`) in the test, as a daemon would run them.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { Jobs } from "../../src/jobs.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import { commandWorker } from "../../src/runners/command.ts";
import { drainAllJobs, drainJobs } from "../../src/testing.ts";
import { silentLogger } from "../../src/kernel/logger.ts";
import { runJobs, withFiles } from "../support/cli.ts";
import { BACKENDS } from "../support/backends.ts";
import { withStore } from "../support/stores.ts";
import { LEND_COPY_WORKFLOWS } from "../support/workflows.ts";
import { workflowRunView } from "../../src/admin/workflows.ts";
import type { Store } from "../../src/store/store.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const ENV = { USER: "ada" };

const SCHEDULES = `version: 1
use_cases:
  use-case/lending.place-hold:  { worker: place_hold }
  use-case/lending.cancel-hold: { worker: cancel_hold }
  use-case/billing.charge-fee:  { worker: charge_fee }
  use-case/billing.refund-fee:  { worker: refund_fee }
  use-case/lending.notify:      { worker: notify }
${LEND_COPY_WORKFLOWS}
  - id: import
    steps:
      - id: fetch
        run: { worker: fetch }
      - id: load
        depends_on: [fetch]
        run: { worker: load }
schedules: []
`;

/** Runs every available step job of the store at `db`, as a daemon would; `failing` workers throw. */
async function runSteps(db: string, failing: Set<string> = new Set()): Promise<void> {
  const names = [
    "place_hold",
    "cancel_hold",
    "charge_fee",
    "refund_fee",
    "notify",
    "fetch",
    "load",
  ];
  const workers = names.map((name) =>
    defineWorker({
      name,
      maxAttempts: 1,
      perform: () => {
        if (failing.has(name)) throw new Error(`${name} is down`);
        return { result: { by: name } };
      },
    })
  );
  await withStore(db, async (store) => {
    const jobs = new Jobs({ store, workers, clock: new FakeClock(NOW), logger: silentLogger });
    await drainAllJobs(jobs);
  });
}

Deno.test("jobs start prints the run id, and a second start with the same key starts nothing", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    const run = (args: string[]) =>
      runJobs([...args, "--db", db, "--config", config], { now: NOW, env: ENV });
    const started = await run(["start", "lend-copy", "--input", '{"copy":7}', "--key", "k1"]);
    assert.equal(started.code, 0, started.err);
    assert.match(started.out, /^\d+$/);
    const id = Number(started.out);
    assert.equal(
      started.err,
      `jobs start: started workflow run ${id} of lend-copy (jobsctl workflow show ${id} follows it)`,
    );
    const again = await run(["start", "lend-copy", "--key", "k1", "--json"]);
    assert.equal(again.code, 0, again.err);
    assert.deepEqual(JSON.parse(again.out), { id, workflow: "lend-copy", duplicate: true });
    // The key started a run of no tenant: a start for a tenant is refused it, writing nothing.
    const other = await run(["start", "lend-copy", "--key", "k1", "--tenant", "acme"]);
    assert.equal(other.code, 1);
    assert.match(
      other.err,
      /^jobs start: the key "k1" already started a run outside this tenant's scope: choose another key; nothing started$/,
    );

    await withStore(db, async (store) => {
      const detail = await store.workflowGet({ id });
      assert.deepEqual(detail?.run.input, { copy: 7 });
      assert.equal(detail?.run.key, "k1");
      const audit = await store.auditList({ target: `workflow:${id}` });
      assert.deepEqual(audit.map((a) => [a.action, a.actor, a.details.duplicate]), [
        ["workflow.start", "ada", false],
        ["workflow.start", "ada", true],
      ]);
    });
  });
});

Deno.test("jobs start refuses an unknown workflow with the nearest, and bad --input naming it", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    const run = (args: string[]) =>
      runJobs([...args, "--db", db, "--config", config], { now: NOW, env: ENV });
    const unknown = await run(["start", "lend-cpy"]);
    assert.equal(unknown.code, 1);
    assert.equal(
      unknown.err,
      `jobs start: no workflow "lend-cpy" in ${config}; did you mean "lend-copy"? ` +
        `(it has "lend-copy", "import")`,
    );
    const bad = await run(["start", "import", "--input", "{copy:7}"]);
    assert.equal(bad.code, 2);
    assert.match(bad.err, /^jobs start: --input "\{copy:7\}" is not JSON: /);
    const stdin = await runJobs(
      ["start", "import", "--input", "-", "--db", db, "--config", config, "--json"],
      { now: NOW, env: ENV, stdin: '{"file":"a.csv"}' },
    );
    assert.equal(stdin.code, 0, stdin.err);
    const { id } = JSON.parse(stdin.out);
    await withStore(db, async (store) => {
      assert.deepEqual((await store.workflowGet({ id }))?.run.input, { file: "a.csv" });
      // Only the start that succeeded wrote anything.
      assert.equal((await store.workflowsList({})).length, 1);
    });
  });
});

Deno.test("jobs workflows lists runs newest first, filters by state and workflow, and prints JSON", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    const run = (args: string[]) =>
      runJobs([...args, "--db", db, "--config", config], { now: NOW, env: ENV });
    const lend = Number((await run(["start", "lend-copy"])).out);
    const imp = Number((await run(["start", "import"])).out);
    await runSteps(db, new Set(["notify"]));

    const list = await runJobs(["workflows", "--db", db, "--json"], { now: NOW, env: ENV });
    assert.equal(list.code, 0, list.err);
    const runs = JSON.parse(list.out);
    assert.deepEqual(
      runs.map((r: { id: number; workflow: string; state: string }) => [r.id, r.workflow, r.state]),
      [[imp, "import", "completed"], [lend, "lend-copy", "compensated"]],
    );
    assert.equal(runs[1].startedAt, new Date(NOW).toISOString());
    assert.deepEqual(runs[1].steps, {
      total: 3,
      completed: 2,
      running: 0,
      failed: 1,
      cancelled: 0,
      waiting: 0,
    });

    const text = await runJobs(["workflows", "--db", db, "--state", "compensated"], {
      now: NOW,
      env: ENV,
    });
    assert.equal(text.code, 0, text.err);
    const lines = text.out.split("\n");
    assert.match(lines[0]!, /^ID +WORKFLOW +STATE +STEPS +STARTED +FINISHED +ERROR$/);
    assert.equal(lines.length, 2, text.out);
    assert.match(lines[1]!, new RegExp(`^${lend} +lend-copy +compensated +2/3 done, 1 failed `));
    assert.match(lines[1]!, /step "notify" discarded/);

    const none = await runJobs(["workflows", "--db", db, "--workflow", "nope"], {
      now: NOW,
      env: ENV,
    });
    assert.equal(none.out, "no workflow runs match");
    const typo = await runJobs(["workflows", "--db", db, "--state", "compensatd"], {
      now: NOW,
      env: ENV,
    });
    assert.equal(typo.code, 2);
    assert.match(
      typo.err,
      /^jobs workflows: option "--state <states>": "compensatd" is not a run state \(running, compensating, completed, compensated, failed, cancelled\); did you mean "compensated"/,
    );
  });
});

Deno.test("jobs workflow show prints the run as a tree with its compensation and audit trails", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    const id = Number(
      (await runJobs(["start", "lend-copy", "--db", db, "--config", config], {
        now: NOW,
        env: ENV,
      }))
        .out,
    );
    await runSteps(db, new Set(["notify"]));

    const show = await runJobs(["workflow", "show", String(id), "--db", db], {
      now: NOW,
      env: ENV,
    });
    assert.equal(show.code, 0, show.err);
    const lines = show.out.split("\n");
    assert.equal(lines[0], `run ${id}  lend-copy (saga)  compensated`);
    const at = (re: RegExp) => {
      const i = lines.findIndex((l) => re.test(l));
      assert.ok(i >= 0, `missing ${re}\n${show.out}`);
      return i;
    };
    const hold = at(
      /^ {2}place-hold {2}completed {2}1\/20 attempt {2}result 19 B {2}job \d+ .*undo: use-case\/lending\.cancel-hold/,
    );
    const charge = at(/^ {4}charge-fee {2}completed {2}1\/20 attempt/);
    const notify = at(
      /^ {6}notify {2}discarded {2}20\/20 attempts .*no undo: a sent notice cannot be recalled/,
    );
    assert.ok(hold < charge && charge < notify);
    // Stored errors are shown by their first line; --json has them whole.
    at(/^ {2}error: step "notify" discarded: notify is down$/);
    at(/^ +error: notify is down$/);
    const trail = at(/^compensations, in the order they ran:$/);
    assert.match(
      lines[trail + 1]!,
      /^ {2}1\. undo charge-fee with use-case\/billing\.refund-fee {2}completed/,
    );
    assert.match(
      lines[trail + 2]!,
      /^ {2}2\. undo place-hold with use-case\/lending\.cancel-hold {2}completed/,
    );
    // The discard that began the compensations is on the run's trail, by the node that ran it.
    at(/^audit \(2\):$/);
    at(/^ {2}2026-06-01T09:00:00\.000Z \(now\) workflow\.start by ada$/);
    at(
      /^ {2}2026-06-01T09:00:00\.000Z \(now\) step\.discard by drain:\w+: step "notify" discarded: notify is down$/,
    );

    const json = await runJobs(["workflow", "show", String(id), "--db", db, "--json"], {
      now: NOW,
      env: ENV,
    });
    assert.equal(json.code, 0, json.err);
    const view = JSON.parse(json.out);
    assert.equal(view.run.state, "compensated");
    assert.deepEqual(
      view.steps.map((s: { id: string; state: string }) => [s.id, s.state]),
      [["place-hold", "completed"], ["charge-fee", "completed"], ["notify", "discarded"]],
    );
    assert.deepEqual(view.compensations.map((c: { step: string }) => c.step), [
      "charge-fee",
      "place-hold",
    ]);
    assert.deepEqual(view.audit.map((a: { action: string }) => a.action), [
      "workflow.start",
      "step.discard",
    ]);

    const missing = await runJobs(["workflow", "show", "999", "--db", db], { now: NOW, env: ENV });
    assert.equal(missing.code, 1);
    assert.equal(missing.err, `jobs workflow show: no workflow run 999 in the store "${db}"`);
    const notId = await runJobs(["workflow", "show", "abc", "--db", db], { now: NOW, env: ENV });
    assert.equal(notId.code, 2);
    assert.equal(notId.err, `jobs workflow show: run id "abc" is not a whole number >= 1`);
  });
});

Deno.test("jobs workflow cancel and retry are audited, say what changed, and refuse what they cannot do", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    const run = (args: string[]) => runJobs([...args, "--db", db], { now: NOW, env: ENV });
    const start = async (workflow: string) =>
      Number((await run(["start", workflow, "--config", config])).out);

    // Cancel a run whose first step waits: that job is cancelled, the run ends cancelled.
    const waiting = await start("import");
    const noReason = await run(["workflow", "cancel", String(waiting)]);
    assert.equal(noReason.code, 2);
    assert.match(noReason.err, /required option "--reason <text>" not specified/);
    const cancelled = await run(["workflow", "cancel", String(waiting), "--reason", "wrong file"]);
    assert.equal(cancelled.code, 0, cancelled.err);
    assert.match(
      cancelled.out,
      new RegExp(
        `^cancelled workflow run ${waiting} \\(import\\): it was running, now cancelled; ` +
          `1 job cancelled: #\\d+$`,
      ),
    );
    const again = await run(["workflow", "cancel", String(waiting), "--reason", "again"]);
    assert.equal(again.code, 1);
    assert.equal(
      again.err,
      `jobs workflow cancel: workflow run ${waiting} (import) is already cancelled: nothing to ` +
        `cancel; nothing changed`,
    );

    // Retry a failed run: its discarded step runs again and the run completes.
    const failing = await start("import");
    await runSteps(db, new Set(["load"]));
    const early = await run(["workflow", "retry", String(waiting), "--reason", "x"]);
    assert.equal(early.code, 1);
    assert.match(
      early.err,
      /is cancelled, not failed: only a failed run can be retried; nothing changed$/,
    );
    const retried = await run([
      "workflow",
      "retry",
      String(failing),
      "--reason",
      "the loader is back",
      "--actor",
      "grace",
      "--json",
    ]);
    assert.equal(retried.code, 0, retried.err);
    const done = JSON.parse(retried.out);
    assert.deepEqual([done.id, done.workflow, done.was, done.state], [
      failing,
      "import",
      "failed",
      "running",
    ]);
    assert.equal(done.jobs.length, 1);
    await runSteps(db);
    const unknown = await run(["workflow", "retry", "999", "--reason", "x"]);
    assert.equal(unknown.code, 1);
    assert.equal(
      unknown.err,
      "jobs workflow retry: no workflow run 999: nothing to retry; nothing changed",
    );

    await withStore(db, async (store) => {
      assert.equal((await store.workflowGet({ id: failing }))?.run.state, "completed");
      const audit = async (id: number) =>
        (await store.auditList({ target: `workflow:${id}` })).map((
          a,
        ) => [a.action, a.actor, a.reason]);
      assert.deepEqual(await audit(waiting), [
        ["workflow.start", "ada", null],
        ["workflow.cancel", "ada", "wrong file"],
      ]);
      const trail = await audit(failing);
      assert.match(String(trail[1]![2]), /^step "load" discarded: load is down\n/);
      assert.deepEqual(trail.map(([action, actor]) => [action, String(actor).split(":")[0]]), [
        ["workflow.start", "ada"],
        ["step.discard", "drain"],
        ["workflow.retry", "grace"],
      ]);
    });
  });
});

Deno.test("jobs workflow names its commands, and help reaches each of them", async () => {
  const bare = await runJobs(["workflow"], { now: NOW });
  assert.equal(bare.code, 2);
  assert.equal(
    bare.err,
    `jobs workflow: name a command: show, cancel, retry (run "jobsctl help workflow" for its commands)`,
  );
  const typo = await runJobs(["workflow", "shw", "1"], { now: NOW });
  assert.equal(typo.code, 2);
  assert.match(typo.err, /^jobs workflow: (unknown command "shw"|too many arguments)/);
  const typo1 = await runJobs(["workflow", "cancle"], { now: NOW });
  assert.equal(typo1.code, 2);
  assert.equal(
    typo1.err,
    `jobs workflow: unknown command "cancle"; did you mean "cancel"? (run "jobsctl help workflow" for its commands)`,
  );
  const help = await runJobs(["help", "workflow"], { now: NOW });
  assert.equal(help.code, 0, help.err);
  assert.match(help.out, /^ {2}show \[options\] <run-id>/m);
  const show = await runJobs(["help", "workflow", "show"], { now: NOW });
  assert.equal(show.code, 0, show.err);
  assert.match(show.out, /^Usage: jobsctl workflow show \[options\] <run-id>/);
  const flag = await runJobs(["workflow", "show", "1", "--jsn"], { now: NOW });
  assert.equal(flag.code, 2);
  assert.equal(
    flag.err,
    `jobs workflow show: unknown option "--jsn"; did you mean "--json"? ` +
      `(run "jobsctl help workflow show" for the options)`,
  );
  const nope = await runJobs(["help", "workflow", "shw"], { now: NOW });
  assert.equal(nope.code, 2);
  assert.match(nope.err, /^jobs help: "workflow" has no command "shw" .*did you mean "show"\?$/);
});

Deno.test("jobs runbook covers each workflow with the commands to paste", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    const failed = Number(
      (await runJobs(["start", "import", "--db", db, "--config", config], { now: NOW, env: ENV }))
        .out,
    );
    await runSteps(db, new Set(["load"]));
    const going = Number(
      (await runJobs(["start", "import", "--db", db, "--config", config], { now: NOW, env: ENV }))
        .out,
    );
    const r = await runJobs(["runbook", "--db", db, "--config", config], { now: NOW, env: ENV });
    assert.equal(r.code, 0, r.err);
    const has = (line: string) =>
      assert.ok(r.out.split("\n").includes(line), `missing: ${line}\n${r.out}`);
    has("## workflow lend-copy (saga)");
    has(
      "    charge-fee  (after place-hold; use-case/billing.charge-fee; undo: use-case/billing.refund-fee)",
    );
    has("## workflow import");
    has("  runs     running 1, failed 1");
    has(`    jobsctl start import --input '{}' --db ${db} --config ${config}`);
    has(`    jobsctl workflows --workflow import --db ${db}`);
    has(`    jobsctl workflow show ${going} --db ${db}`);
    has(`    jobsctl workflow cancel ${going} --reason '<why you are cancelling it>' --db ${db}`);
    has(`    jobsctl workflow retry ${failed} --reason '<why you are retrying it>' --db ${db}`);
    assert.match(r.out, /## workflow lend-copy[\s\S]*Nothing to retry: no failed run\./);

    const one = await runJobs(["runbook", "import", "--config", config, "--db", db, "--json"], {
      now: NOW,
      env: ENV,
    });
    assert.equal(one.code, 0, one.err);
    const book = JSON.parse(one.out);
    assert.deepEqual(book.schedules, []);
    assert.deepEqual(book.workflows.map((w: { id: string }) => w.id), ["import"]);
    assert.deepEqual(
      book.workflows[0].procedures.map((p: { title: string }) => p.title),
      ["Start a run", "Inspect", "Cancel a run", "Retry a failed run"],
    );
    const unknown = await runJobs(["runbook", "imprt", "--config", config], { now: NOW });
    assert.equal(unknown.code, 1);
    assert.match(
      unknown.err,
      /^jobs runbook: no schedule or workflow "imprt" in .*; did you mean "import"\? \(it has "lend-copy", "import"\)$/,
    );
  });
});

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: jobs start, workflows, workflow show and cancel act on the store at --db`, async () => {
    const h = await backend.open(NOW);
    try {
      await withFiles(SCHEDULES, async ({ config }) => {
        const run = (args: string[]) =>
          runJobs([...args, "--db", h.location], { now: NOW, env: ENV });
        const started = await run([
          "start",
          "lend-copy",
          "--input",
          '{"copy":1}',
          "--config",
          config,
          "--json",
        ]);
        assert.equal(started.code, 0, started.err);
        const { id } = JSON.parse(started.out);
        const list = await run(["workflows", "--json"]);
        assert.equal(list.code, 0, list.err);
        assert.deepEqual(
          JSON.parse(list.out).map((r: { id: number; state: string }) => [r.id, r.state]),
          [[id, "running"]],
        );
        const show = await run(["workflow", "show", String(id)]);
        assert.equal(show.code, 0, show.err);
        assert.match(show.out, /^ {2}place-hold {2}running {2}0\/20 attempts {2}job \d+/m);
        assert.match(show.out, /^ {4}charge-fee {2}waiting {2}\(/m);
        assert.match(show.out, /^compensations: none ran$/m);
        const cancelled = await run(["workflow", "cancel", String(id), "--reason", "not today"]);
        assert.equal(cancelled.code, 0, cancelled.err);
        assert.match(cancelled.out, /it was running, now (compensating|cancelled)/);
      });
      const detail = await h.store.workflowGet({ id: (await h.store.workflowsList({}))[0]!.id });
      assert.equal(detail?.run.cancelReason, "not today");
    } finally {
      await h.close();
    }
  });
}

Deno.test("a step waiting to retry: workflow show and jobs show say when its next attempt is (issue 26.2)", async () => {
  const schedules = `version: 1
use_cases:
  place: { command: ["true"] }
  release: { command: ["true"] }
  hold: { command: ["sh", "-c", "exit 1"], max_attempts: 2, backoff: { fixed: 35s } }
workflows:
  - id: s
    carried_by: workflow
    steps:
      - { id: place, use_case: place, compensation: { mode: use-case, use_case: release } }
      - id: hold
        depends_on: [place]
        use_case: hold
        compensation: { mode: none, reason: it holds nothing when it fails }
schedules: []
`;
  await withFiles(schedules, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    const start = await runJobs(["start", "s", "--db", db, "--config", config], {
      now: NOW,
      env: ENV,
    });
    assert.equal(start.code, 0, start.err);
    const id = Number(start.out);
    const clock = new FakeClock(NOW);
    await withStore(db, async (store) => {
      const worker = commandWorker({ clock, env: () => undefined });
      const jobs = new Jobs({ store, workers: [worker], clock, logger: silentLogger });
      await drainJobs(jobs); // due jobs only: `hold` fails once and waits 35 s
    });

    const later = NOW + 5_000;
    const show = await runJobs(["workflow", "show", String(id), "--db", db], {
      now: later,
      env: ENV,
    });
    assert.equal(show.code, 0, show.err);
    const line = show.out.split("\n").find((l) => /^ {4}hold /.test(l));
    assert.match(
      line ?? show.out,
      /^ {4}hold {2}running {2}1\/2 attempt {2}next attempt 2026-06-01T09:00:35Z, in 30 s {2}job (\d+)/,
    );
    const jobId = line!.match(/job (\d+)/)![1]!;

    const json = await runJobs(["workflow", "show", String(id), "--db", db, "--json"], {
      now: later,
      env: ENV,
    });
    const hold = JSON.parse(json.out).steps.find((s: { id: string }) => s.id === "hold");
    assert.equal(hold.nextAttemptAt, "2026-06-01T09:00:35.000Z");

    const job = await runJobs(["show", jobId, "--db", db], { now: later, env: ENV });
    assert.equal(job.code, 0, job.err);
    assert.match(job.out, /^ {2}next attempt +2026-06-01T09:00:35Z, in 30 s$/m);
  });
});

// ------------------------------------------------ issue 26.12: the workflow views

/** Runs every step job of `store` (any backend) as node `node` would; `failing` workers throw. */
async function runStepsOn(
  store: Store,
  failing: Set<string> = new Set(),
  node = "node-a",
): Promise<void> {
  const names = [
    "place_hold",
    "cancel_hold",
    "charge_fee",
    "refund_fee",
    "notify",
    "fetch",
    "load",
  ];
  const workers = names.map((name) =>
    defineWorker({
      name,
      maxAttempts: 1,
      perform: () => {
        if (failing.has(name)) throw new Error(`${name} is down`);
        return { result: { by: name } };
      },
    })
  );
  const jobs = new Jobs({ store, workers, clock: new FakeClock(NOW), logger: silentLogger });
  await drainAllJobs(jobs, { node });
}

/** The `jobs workflows` line of run `id`, and the lines of `jobs workflow show <id>`. */
async function views(location: string, id: number): Promise<{ listed: string; shown: string[] }> {
  const list = await runJobs(["workflows", "--db", location], { now: NOW, env: ENV });
  assert.equal(list.code, 0, list.err);
  const listed = list.out.split("\n").find((l) => l.startsWith(`${id} `));
  assert.ok(listed, `no line of run ${id} in\n${list.out}`);
  const show = await runJobs(["workflow", "show", String(id), "--db", location], {
    now: NOW,
    env: ENV,
  });
  assert.equal(show.code, 0, show.err);
  return { listed, shown: show.out.split("\n") };
}

/** The run's `error:` line under its header in `workflow show`, or null without one. */
function headerError(shown: string[]): string | null {
  const steps = shown.indexOf("steps:");
  return shown.slice(1, steps).find((l) => l.startsWith("  error: "))?.slice(9) ?? null;
}

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a command step's stderr: workflow show quotes it a line each, workflows sums it up on one line (issue 26.12a)`, async () => {
    const schedules = String.raw`version: 1
use_cases:
  place: { command: ["true"] }
  release: { command: ["true"] }
  hold: { command: ["sh", "-c", "printf 'bad \\033]0;pwned\\007 title\\nno room left\\n' >&2; exit 3"], max_attempts: 1 }
workflows:
  - id: s
    carried_by: workflow
    steps:
      - { id: place, use_case: place, compensation: { mode: use-case, use_case: release } }
      - id: hold
        depends_on: [place]
        use_case: hold
        compensation: { mode: none, reason: it holds nothing when it fails }
schedules: []
`;
    const h = await backend.open(NOW);
    try {
      await withFiles(schedules, async ({ config }) => {
        const start = await runJobs(["start", "s", "--db", h.location, "--config", config], {
          now: NOW,
          env: ENV,
        });
        assert.equal(start.code, 0, start.err);
        const id = Number(start.out);
        const clock = new FakeClock(NOW);
        const worker = commandWorker({ clock, env: () => undefined });
        await drainAllJobs(
          new Jobs({ store: h.store, workers: [worker], clock, logger: silentLogger }),
        );

        const { listed, shown } = await views(h.location, id);
        const summary =
          'step "hold" discarded: command "sh" exited with code 3; stderr: …no room left';
        assert.ok(listed.endsWith(`  ${summary}`), listed);
        // One line, never a literal \n, and no control character reaches the terminal.
        assert.ok(!listed.includes("\\n"), listed);
        assert.equal(headerError(shown), summary);
        const hold = shown.findIndex((l) => /^ {4}hold {2}discarded/.test(l));
        assert.deepEqual(shown.slice(hold + 1, hold + 4), [
          '      error: command "sh" exited with code 3, stderr:',
          "        | bad \\x1b]0;pwned\\x07 title",
          "        | no room left",
        ]);
        assert.ok(!shown.join("\n").includes("\x1b"), shown.join("\n"));
        assert.ok(!shown.some((l) => l.includes("\\nstderr")), shown.join("\n"));
      });
    } finally {
      await h.close();
    }
  });

  Deno.test(`${backend.name}: a retried run keeps its last error until it completes, alike in workflows and workflow show (issue 26.12b)`, async () => {
    const h = await backend.open(NOW);
    try {
      await withFiles(SCHEDULES, async ({ config }) => {
        const run = (args: string[]) =>
          runJobs([...args, "--db", h.location], { now: NOW, env: ENV });
        const start = async (workflow: string) =>
          Number((await run(["start", workflow, "--config", config])).out);
        const retry = async (id: number) => {
          const r = await run(["workflow", "retry", String(id), "--reason", "it is back"]);
          assert.equal(r.code, 0, r.err);
        };

        // A plain run: failed, retried (running again, saying what went wrong last), completed.
        const plain = await start("import");
        await runStepsOn(h.store, new Set(["load"]));
        await retry(plain);
        let seen = await views(h.location, plain);
        assert.match(seen.listed, /running .* {2}step "load" discarded: load is down$/);
        assert.equal(headerError(seen.shown), 'step "load" discarded: load is down');
        await runStepsOn(h.store);
        seen = await views(h.location, plain);
        assert.match(seen.listed, /completed .*\(now\)$/);
        assert.equal(headerError(seen.shown), null);
        assert.equal((await h.store.workflowGet({ id: plain }))?.run.error, null);

        // A saga whose compensation failed: retried, it compensates, and says why it did.
        const saga = await start("lend-copy");
        await runStepsOn(h.store, new Set(["notify", "refund_fee"]));
        const failed = 'compensation of step "charge-fee" discarded: refund_fee is down';
        seen = await views(h.location, saga);
        assert.match(seen.listed, new RegExp(`failed .* {2}${escape(failed)}$`));
        await retry(saga);
        seen = await views(h.location, saga);
        assert.match(seen.listed, new RegExp(`compensating .* {2}${escape(failed)}$`));
        assert.equal(headerError(seen.shown), failed);
        await runStepsOn(h.store, new Set(["notify"]));
        seen = await views(h.location, saga);
        const cause = 'step "notify" discarded: notify is down';
        assert.match(seen.listed, new RegExp(`compensated .* {2}${escape(cause)}$`));
        assert.equal(headerError(seen.shown), cause);
      });
    } finally {
      await h.close();
    }
  });

  Deno.test(`${backend.name}: a cancelled run lists the steps that never ran as cancelled, not run, and gives its reason once (issue 26.12c)`, async () => {
    const h = await backend.open(NOW);
    try {
      await withFiles(SCHEDULES, async ({ config }) => {
        const run = (args: string[]) =>
          runJobs([...args, "--db", h.location], { now: NOW, env: ENV });
        for (const workflow of ["import", "lend-copy"]) {
          const id = Number((await run(["start", workflow, "--config", config])).out);
          const cancel = await run(["workflow", "cancel", String(id), "--reason", "wrong file"]);
          assert.equal(cancel.code, 0, cancel.err);
          const { listed, shown } = await views(h.location, id);
          const steps = workflow === "import" ? 2 : 3;
          assert.match(
            listed,
            new RegExp(`cancelled +0/${steps} done, ${steps} cancelled .*  cancelled: wrong file$`),
          );
          const header = shown.slice(0, shown.indexOf("steps:"));
          assert.deepEqual(header.slice(2), ["  cancelled: wrong file"], shown.join("\n"));
          const tree = shown.slice(shown.indexOf("steps:") + 1);
          const first = workflow === "import" ? "fetch" : "place-hold";
          assert.match(tree[0]!, new RegExp(`^ {2}${first} {2}cancelled {2}not run {2}job \\d+`));
          assert.equal(tree[1], "    error: run cancelled: wrong file");
          const later = workflow === "import" ? ["load"] : ["charge-fee", "notify"];
          for (const [i, step] of later.entries()) {
            const line = tree.find((l) => l.trimStart().startsWith(`${step}  `));
            assert.match(
              line ?? tree.join("\n"),
              new RegExp(`^ {${4 + 2 * i}}${step} {2}cancelled {2}not run( |$)`),
            );
          }
          assert.ok(!shown.some((l) => / waiting( |$)/.test(l)), shown.join("\n"));
          const json = await run(["workflow", "show", String(id), "--json"]);
          assert.deepEqual(
            JSON.parse(json.out).steps.map((s: { state: string }) => s.state),
            Array(steps).fill("cancelled"),
          );
        }
      });
    } finally {
      await h.close();
    }
  });

  Deno.test(`${backend.name}: the step discard that begins a saga's compensations is on the run's audit trail (issue 26.12d)`, async () => {
    const h = await backend.open(NOW);
    try {
      await withFiles(SCHEDULES, async ({ config }) => {
        const run = (args: string[]) =>
          runJobs([...args, "--db", h.location], { now: NOW, env: ENV });
        const start = async () =>
          Number((await run(["start", "lend-copy", "--config", config])).out);

        // Its attempts used up on node-a.
        const used = await start();
        await runStepsOn(h.store, new Set(["notify"]), "node-a");
        const notify = (await workflowRunView(h.store, used))!.steps.find((s) =>
          s.id === "notify"
        )!;
        const trail = await h.store.auditList({ target: `workflow:${used}` });
        assert.deepEqual(trail.map((a) => [a.action, a.actor]), [
          ["workflow.start", "ada"],
          ["step.discard", "node-a"],
        ]);
        assert.match(trail[1]!.reason!, /^step "notify" discarded: notify is down\n/);
        assert.deepEqual(trail[1]!.details, {
          step: "notify",
          job: notify.jobId,
          run: "compensating",
        });
        const { shown } = await views(h.location, used);
        assert.ok(
          shown.includes(
            '  2026-06-01T09:00:00.000Z (now) step.discard by node-a: step "notify" discarded: notify is down',
          ),
          shown.join("\n"),
        );

        // Discarded by an operator while it waits: the operator is named.
        const stopped = await start();
        const hold = (await workflowRunView(h.store, stopped))!.steps[0]!;
        const discard = await run([
          "discard",
          String(hold.jobId),
          "--reason",
          "the copy is lost",
          "--actor",
          "grace",
        ]);
        assert.equal(discard.code, 0, discard.err);
        const after = await h.store.auditList({ target: `workflow:${stopped}` });
        assert.deepEqual(after.map((a) => [a.action, a.actor, a.reason]), [
          ["workflow.start", "ada", null],
          ["step.discard", "grace", 'step "place-hold" discarded: the copy is lost'],
        ]);
        assert.equal(after[1]!.details.run, "failed");
      });
    } finally {
      await h.close();
    }
  });
}

/** `text` as a regular expression that matches it literally. */
function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
