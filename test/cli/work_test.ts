/**
 * `jobs work` as the issue pins it: `add <queue> --key --data [--tenant]`,
 * `ls <queue> --json` (each item's key, score and inputs, best first),
 * `next <queue> --as <person> --json` (the claimed item's key),
 * `claim|release|skip <queue> <key> --as <person>` and `do <queue> <key>
 * <action> --as <person> --reason`, on a `required` queue: another's claim
 * refuses an action, the action's job is enqueued with the key
 * `<queue>/<item>/<action>`, `--as` must name a person the store knows and
 * the audit row names the person, the door and the OS user. Once through
 * main.ts itself, in a process of its own.
 */

import assert from "node:assert/strict";
import { runJobs, withFiles } from "../support/cli.ts";
import { withStore } from "../support/stores.ts";

const NOW = Date.UTC(2026, 11, 6, 9);
const ENV = { USER: "root" };
const MAIN = new URL("../../main.ts", import.meta.url).pathname;

const SCHEDULES = [
  "version: 1",
  "work_queues:",
  "  - id: disputes",
  "    claim: required",
  "    lease: 1h",
  "    score:",
  "      rule: rule/dispute.urgency-score",
  "      inputs: [amount, age, evidence_missing]",
  "      weights: { amount: 0.01, age: 2/day, evidence_missing: 30 }",
  "    actions:",
  "      - id: refund",
  "        run: { worker: refund_dispute }",
  "",
].join("\n");

async function addPerson(db: string, name: string, role: string): Promise<void> {
  const added = await runJobs(["users", "add", name, "--role", role, "--db", db], {
    now: NOW,
    env: ENV,
    stdin: "correct horse battery\n",
  });
  assert.equal(added.code, 0, added.err);
}

Deno.test("jobs work add, ls, next, claim, release, skip and do with --json on a required queue", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await addPerson(db, "ada", "admin");
    await addPerson(db, "bob", "admin");
    await addPerson(db, "val", "viewer");
    const jobs = (args: string[], now = NOW) =>
      runJobs([...args, "--db", db, "--config", config], { now, env: ENV, osUser: "root" });
    const json = async (args: string[], now = NOW) => {
      const r = await jobs([...args, "--json"], now);
      assert.equal(r.code, 0, `${args.join(" ")}: ${r.err}`);
      return JSON.parse(r.out);
    };

    const d1 = await json([
      "work",
      "add",
      "disputes",
      "--key",
      "d1",
      "--data",
      '{"amount": 1900, "currency": "EUR", "evidence_missing": true}',
    ]);
    assert.equal(d1.created, true);
    assert.equal(d1.score, 49);
    await json(["work", "add", "disputes", "--key", "d2", "--data", '{"amount": 100}']);
    await json(["work", "add", "disputes", "--key", "d3", "--data", '{"amount": 5000}']);

    // Six days on, the age adds 12 to each score.
    const later = NOW + 6 * 86_400_000;
    const listed = await json(["work", "ls", "disputes"], later);
    assert.deepEqual(
      listed.items.map((i: { key: string; score: number }) => [i.key, i.score]),
      [["d3", 62], ["d1", 61], ["d2", 13]],
    );
    assert.deepEqual(listed.items[1].inputs, {
      amount: 1900,
      age: 6 * 86_400_000,
      evidence_missing: true,
    });

    const first = await json(["work", "next", "disputes", "--as", "ada"], later);
    assert.equal(first.key, "d3");
    const second = await json(["work", "next", "disputes", "--as", "bob"], later);
    assert.equal(second.key, "d1");

    // Bob's claim refuses Ada's action, and Ada's unclaimed action too.
    const held = await jobs(["work", "do", "disputes", "d1", "refund", "--as", "ada"], later);
    assert.equal(held.code, 1);
    assert.match(held.err, /claimed by bob .*\[work-item-held\]/);
    const unclaimed = await jobs(["work", "do", "disputes", "d2", "refund", "--as", "ada"], later);
    assert.match(unclaimed.err, /needs your claim first .*\[work-item-unclaimed\]/);

    const done = await json(
      ["work", "do", "disputes", "d3", "refund", "--as", "ada", "--reason", "card charged twice"],
      later,
    );
    assert.equal(done.state, "done");
    assert.equal(done.outcome, "refund");
    assert.equal(typeof done.jobId, "number");

    // Release, then skip: Bob's next passes over what he skipped.
    await json(["work", "release", "disputes", "d1", "--as", "bob"], later);
    const claimed = await json(["work", "claim", "disputes", "d2", "--as", "bob"], later);
    assert.equal(claimed.claim.owner, "bob");
    const skipped = await json(["work", "skip", "disputes", "d2", "--as", "bob"], later);
    assert.equal(skipped.claim, null);
    const after = await json(["work", "next", "disputes", "--as", "bob"], later);
    assert.equal(after.key, "d1");
    const none = await json(["work", "next", "disputes", "--as", "bob"], later);
    assert.equal(none.key, null);

    const viewer = await jobs(["work", "claim", "disputes", "d2", "--as", "val"], later);
    assert.match(viewer.err, /val may not claim on work queue "disputes".*\[work-forbidden\]/);
    const stranger = await jobs(["work", "next", "disputes", "--as", "mallory"], later);
    assert.match(
      stranger.err,
      /"mallory" is not a person the store knows.*\[work-person-unknown\]/,
    );
    const unknown = await jobs(["work", "ls", "dispute"], later);
    assert.match(unknown.err, /no work queue "dispute".*did you mean "disputes"/);

    const doneList = await json(["work", "ls", "disputes", "--done"], later);
    assert.deepEqual(doneList.items.map((i: { key: string }) => i.key), ["d3"]);
    assert.equal(doneList.items[0].actionJobId, done.jobId);

    await withStore(db, async (store) => {
      const job = await store.jobGet({ id: done.jobId });
      assert.equal(job?.worker, "refund_dispute");
      assert.equal(job?.uniqueKey, "disputes/d3/refund");
      assert.equal((job?.args as { idempotencyKey: string }).idempotencyKey, "disputes/d3/refund");
      const trail = await store.auditList({ target: "work:disputes/d3" });
      assert.deepEqual(trail.map((a) => [a.action, a.actor]), [
        ["work.add", "root"],
        ["work.claim", "ada"],
        ["work.do", "ada"],
      ]);
      const act = trail[2]!;
      assert.equal(act.reason, "card charged twice");
      assert.equal(act.details.door, "cli");
      assert.equal(act.details.osUser, "root");
      assert.equal(act.details.jobId, done.jobId);
    });
  });
});

Deno.test("main.ts lists a work queue's items with --json", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await addPerson(db, "ada", "admin");
    const add = await runJobs(
      [
        "work",
        "add",
        "disputes",
        "--key",
        "d1",
        "--data",
        '{"amount": 300}',
        "--db",
        db,
        "--config",
        config,
      ],
      { now: NOW, env: ENV },
    );
    assert.equal(add.code, 0, add.err);
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", MAIN, "work", "ls", "disputes", "--json", "--db", db, "--config", config],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const listed = JSON.parse(new TextDecoder().decode(out.stdout));
    assert.equal(listed.items[0].key, "d1");
    assert.equal(typeof listed.items[0].score, "number");
    assert.equal(listed.items[0].inputs.amount, 300);
  });
});

Deno.test("jobs work rescore rewrites the scores a changed weight left behind, audited", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    const jobs = (args: string[]) =>
      runJobs([...args, "--db", db, "--config", config, "--json"], { now: NOW, env: ENV });
    await addPerson(db, "ada", "admin");
    const added = await jobs([
      "work",
      "add",
      "disputes",
      "--key",
      "d1",
      "--data",
      '{"amount": 1000}',
    ]);
    assert.equal(JSON.parse(added.out).score, 10);
    await Deno.writeTextFile(config, SCHEDULES.replace("amount: 0.01", "amount: 0.02"));
    const before = JSON.parse((await jobs(["work", "ls", "disputes"])).out);
    assert.equal(before.items[0].score, 10);
    const rescored = await jobs([
      "work",
      "rescore",
      "disputes",
      "--reason",
      "amount weighs double",
    ]);
    assert.equal(rescored.code, 0, rescored.err);
    assert.deepEqual(JSON.parse(rescored.out), { queue: "disputes", rescored: 1, left: false });
    const after = JSON.parse((await jobs(["work", "ls", "disputes"])).out);
    assert.equal(after.items[0].score, 20);
    assert.equal(after.items[0].terms[0].weight, "0.02");
    await withStore(db, async (store) => {
      const trail = await store.auditList({ target: "work:disputes" });
      assert.deepEqual(trail.map((a) => [a.action, a.actor, a.reason]), [
        ["work.rescore", "root", "amount weighs double"],
      ]);
    });
  });
});

Deno.test("jobs work show prints an item's score with its inputs, its claim and its history", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await addPerson(db, "ada", "admin");
    const jobs = (args: string[], now = NOW) =>
      runJobs([...args, "--db", db, "--config", config], { now, env: ENV, osUser: "root" });
    const data = '{"amount": 1900, "currency": "EUR", "evidence_missing": true}';
    assert.equal((await jobs(["work", "add", "disputes", "--key", "d1", "--data", data])).code, 0);
    assert.equal((await jobs(["work", "next", "disputes", "--as", "ada"], NOW + 60_000)).code, 0);

    const shown = await jobs(["work", "show", "disputes", "d1"], NOW + 120_000);
    assert.equal(shown.code, 0, shown.err);
    assert.match(shown.out, /^disputes\/d1: open\n/);
    assert.match(shown.out, /score 49: amount 1900, age 0\.0d, evidence_missing true/);
    assert.match(shown.out, /claim ada until 2026-12-06T10:01:00\.000Z, fence 1/);
    assert.match(shown.out, /2026-12-06T09:00:00\.000Z +added +root/);
    assert.match(shown.out, /2026-12-06T09:01:00\.000Z +claimed +ada/);

    const json = await jobs(["work", "show", "disputes", "d1", "--json"], NOW + 120_000);
    const parsed = JSON.parse(json.out);
    assert.equal(parsed.item.claim.owner, "ada");
    assert.deepEqual(parsed.history.map((e: { kind: string }) => e.kind), ["added", "claimed"]);

    const missing = await jobs(["work", "show", "disputes", "nope"]);
    assert.equal(missing.code, 1);
    assert.match(missing.err, /no item "nope" in work queue "disputes"/);
  });
});
