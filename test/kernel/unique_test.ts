import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { defineWorker } from "../../src/mod.ts";
import { canonicalJson, uniqueKey } from "../../src/kernel/unique.ts";
import { drainQueue } from "../../src/testing.ts";
import { denoScript, lines } from "../support/processes.ts";
import { tempJobs, tempStore } from "../support/stores.ts";

const report = defineWorker<Record<string, unknown>>({ name: "report", perform: () => {} });
const other = defineWorker<Record<string, unknown>>({ name: "other", perform: () => {} });

Deno.test("unique by args: equal args are a duplicate whatever their key order", async () => {
  await using t = await tempJobs([report]);
  const first = await t.jobs.enqueue(report, { a: 1, b: { x: 1, y: 2 } }, { unique: {} });
  assert.equal(first.duplicate, false);
  const again = await t.jobs.enqueue(report, { b: { y: 2, x: 1 }, a: 1 }, { unique: {} });
  assert.deepEqual(again, { ...first, duplicate: true });
  const changed = await t.jobs.enqueue(report, { a: 1, b: { x: 1, y: 3 } }, { unique: {} });
  assert.equal(changed.duplicate, false);
  assert.notEqual(changed.id, first.id);
  const otherWorker = await t.jobs.enqueue(other, { a: 1, b: { x: 1, y: 2 } }, { unique: {} });
  assert.equal(
    otherWorker.duplicate,
    false,
    "another worker with the same args is not a duplicate",
  );
  assert.equal((await t.store.jobsList({})).length, 3);
});

Deno.test("unique by arg keys: only the listed keys decide", async () => {
  await using t = await tempJobs([report]);
  const unique = { by: { keys: ["account"] } };
  const first = await t.jobs.enqueue(report, { account: 7, at: 1 }, { unique });
  const sameAccount = await t.jobs.enqueue(report, { account: 7, at: 2 }, { unique });
  assert.equal(sameAccount.duplicate, true);
  assert.equal(sameAccount.id, first.id);
  const otherAccount = await t.jobs.enqueue(report, { account: 8, at: 1 }, { unique });
  assert.equal(otherAccount.duplicate, false);
  assert.equal((await t.store.jobsList({})).length, 2);
});

Deno.test("unique by worker: any args of the same worker are a duplicate", async () => {
  await using t = await tempJobs([report, other]);
  const unique = { by: "worker" as const };
  const first = await t.jobs.enqueue(report, { n: 1 }, { unique });
  const second = await t.jobs.enqueue(report, { n: 2 }, { unique });
  assert.deepEqual(second, { ...first, duplicate: true });
  assert.equal((await t.jobs.enqueue(other, { n: 1 }, { unique })).duplicate, false);
  assert.equal((await t.store.jobsList({})).length, 2);
});

Deno.test("unique with a period: duplicate within the same bucket, new job in the next", async () => {
  await using t = await tempJobs([report]);
  const unique = { period: 60_000 };
  // The FakeClock starts at 2026-01-01T00:00:00Z, a whole minute: a bucket boundary.
  assert.equal(t.clock.now() % 60_000, 0);
  const first = await t.jobs.enqueue(report, { n: 1 }, { unique });
  t.clock.advance(59_999);
  const sameBucket = await t.jobs.enqueue(report, { n: 1 }, { unique });
  assert.equal(sameBucket.duplicate, true);
  assert.equal(sameBucket.id, first.id);
  t.clock.advance(1);
  const nextBucket = await t.jobs.enqueue(report, { n: 1 }, { unique });
  assert.equal(nextBucket.duplicate, false);
  assert.notEqual(nextBucket.id, first.id);
  t.clock.advance(30_000);
  assert.equal((await t.jobs.enqueue(report, { n: 1 }, { unique })).id, nextBucket.id);
  assert.equal((await t.store.jobsList({})).length, 2);
});

Deno.test('unique states "incomplete": a new job is accepted once the first is final', async () => {
  let fail = true;
  const flaky = defineWorker<{ n: number }>({
    name: "flaky",
    perform: () => {
      if (fail) throw new Error("not yet");
    },
  });
  await using t = await tempJobs([flaky]);
  const unique = { states: "incomplete" as const };
  const first = await t.jobs.enqueue(flaky, { n: 1 }, { unique });
  await drainQueue(t.jobs, "default");
  assert.equal((await t.store.jobGet({ id: first.id }))?.state, "retryable");
  const whileRetryable = await t.jobs.enqueue(flaky, { n: 1 }, { unique });
  assert.equal(whileRetryable.duplicate, true, "still a duplicate while retryable");
  assert.equal(whileRetryable.state, "retryable");

  fail = false;
  t.clock.set((await t.store.jobGet({ id: first.id }))!.scheduledAt);
  await drainQueue(t.jobs, "default");
  const done = await t.store.jobGet({ id: first.id });
  assert.equal(done?.state, "completed");
  assert.equal(done?.uniqueKey, null, "the key is cleared when the job is final");
  const after = await t.jobs.enqueue(flaky, { n: 1 }, { unique });
  assert.equal(after.duplicate, false);
  assert.notEqual(after.id, first.id);
});

Deno.test('unique states "incomplete" is the default and cancelled or discarded jobs free the key', async () => {
  const ends = defineWorker<{ how: string }>({
    name: "ends",
    perform: (args) => (args.how === "cancel" ? { cancel: "no" } : { discard: "no" }),
  });
  await using t = await tempJobs([ends]);
  const a = await t.jobs.enqueue(ends, { how: "cancel" }, { unique: {} });
  const b = await t.jobs.enqueue(ends, { how: "discard" }, { unique: {} });
  await drainQueue(t.jobs, "default");
  assert.equal((await t.store.jobGet({ id: a.id }))?.state, "cancelled");
  assert.equal((await t.store.jobGet({ id: b.id }))?.state, "discarded");
  assert.equal((await t.jobs.enqueue(ends, { how: "cancel" }, { unique: {} })).duplicate, false);
  assert.equal((await t.jobs.enqueue(ends, { how: "discard" }, { unique: {} })).duplicate, false);
});

Deno.test('unique states "all": a duplicate is refused even after the first completed', async () => {
  await using t = await tempJobs([report]);
  const unique = { states: "all" as const };
  const first = await t.jobs.enqueue(report, { n: 1 }, { unique });
  assert.equal((await drainQueue(t.jobs, "default")).completed, 1);
  const done = await t.store.jobGet({ id: first.id });
  assert.equal(done?.state, "completed");
  assert.notEqual(done?.uniqueKey, null, "the key stays while the row exists");
  const again = await t.jobs.enqueue(report, { n: 1 }, { unique });
  assert.deepEqual(again, { id: first.id, duplicate: true, queue: "default", state: "completed" });
  assert.equal((await t.store.jobsList({})).length, 1);
});

Deno.test("a worker's unique option applies by default and unique: false turns it off", async () => {
  const daily = defineWorker<{ day: string }>({
    name: "daily",
    unique: { by: "args" },
    perform: () => {},
  });
  await using t = await tempJobs([daily]);
  const first = await t.jobs.enqueue(daily, { day: "2026-01-01" });
  assert.equal((await t.jobs.enqueue(daily, { day: "2026-01-01" })).duplicate, true);
  // By name too: the registered worker's defaults apply.
  const byName = await t.jobs.enqueue("daily", { day: "2026-01-01" });
  assert.deepEqual(byName, { ...first, duplicate: true });
  const off = await t.jobs.enqueue(daily, { day: "2026-01-01" }, { unique: false });
  assert.equal(off.duplicate, false);
  assert.equal((await t.store.jobsList({})).length, 2);
});

Deno.test("unique byQueue: the same args in another queue are not a duplicate", async () => {
  await using t = await tempJobs([report]);
  const unique = { byQueue: true };
  const a = await t.jobs.enqueue(report, { n: 1 }, { unique, queue: "a" });
  assert.equal((await t.jobs.enqueue(report, { n: 1 }, { unique, queue: "a" })).id, a.id);
  assert.equal((await t.jobs.enqueue(report, { n: 1 }, { unique, queue: "b" })).duplicate, false);
  // Without byQueue the queue is not part of the identity.
  const c = await t.jobs.enqueue(report, { n: 2 }, { unique: {}, queue: "a" });
  assert.equal((await t.jobs.enqueue(report, { n: 2 }, { unique: {}, queue: "b" })).id, c.id);
});

Deno.test("invalid unique options are refused and write no row", async () => {
  await using t = await tempJobs([report]);
  await assert.rejects(
    () => t.jobs.enqueue(report, {}, { unique: { period: -5 } }),
    /unique\.period must be a positive number of ms, got -5/,
  );
  await assert.rejects(
    () => t.jobs.enqueue(report, {}, { unique: { by: { keys: [] } } }),
    /unique\.by\.keys must list at least one arg key/,
  );
  await assert.rejects(
    // deno-lint-ignore no-explicit-any
    () => t.jobs.enqueue(report, {}, { unique: { states: "some" as any } }),
    /unique\.states must be "incomplete" or "all", got "some"/,
  );
  assert.equal((await t.store.jobsList({})).length, 0);
});

Deno.test("uniqueKey() is readable, bucketed by period and independent of key order", () => {
  const job = { worker: "report", queue: "default", args: { b: 2, a: 1 } };
  const key = uniqueKey({}, job, 0);
  assert.match(key, /^report\|\*\|\*\|[\w-]+$/);
  assert.equal(key, uniqueKey({}, { ...job, args: { a: 1, b: 2 } }, 123));
  assert.equal(uniqueKey({ period: 1000 }, job, 2_500).split("|")[2], "2");
  assert.equal(uniqueKey({ byQueue: true }, job, 0).split("|")[1], "default");
  assert.equal(canonicalJson({ b: [{ d: 1, c: 2 }], a: null }), '{"a":null,"b":[{"c":2,"d":1}]}');
});

Deno.test("a batch with the same unique job twice inserts one row and maps both to it", async () => {
  await using t = await tempJobs([report]);
  const results = await t.jobs.enqueueMany([
    { worker: report, args: { n: 1 }, options: { unique: {} } },
    { worker: report, args: { n: 1 }, options: { unique: {} } },
  ]);
  assert.equal(results[0]?.duplicate, false);
  assert.deepEqual(results[1], { ...results[0], duplicate: true });
  assert.equal((await t.store.jobsList({})).length, 1);
});

Deno.test("3 processes racing the same unique jobs on one file make exactly one row per key", async () => {
  await using t = await tempStore();
  const keys = 10;
  const rounds = 20;
  const script = fileURLToPath(new URL("../support/child_enqueue.ts", import.meta.url));
  const children = Array.from({ length: 3 }, () =>
    denoScript(script, [
      t.path,
      String(keys),
      String(rounds),
    ], {
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn());
  const stdouts = children.map((c) => lines(c.stdout));
  const stderrs = children.map((c) => new Response(c.stderr).text());
  // Start barrier: every child has opened the store before any enqueues.
  for (const [i, out] of stdouts.entries()) {
    const first = await out.next();
    // Read stderr only on failure: it ends when the child exits, after "go".
    if (first.value !== "ready") assert.fail(`child ${i} is not ready: ${await stderrs[i]}`);
  }
  const go = new TextEncoder().encode("go\n");
  await Promise.all(children.map(async (c) => {
    const writer = c.stdin.getWriter();
    await writer.write(go);
    await writer.close();
  }));
  const reported: { key: number; id: number; duplicate: boolean }[] = [];
  for (const [i, child] of children.entries()) {
    const rest: string[] = [];
    for await (const line of stdouts[i]!) rest.push(line);
    const status = await child.status;
    assert.equal(status.code, 0, `child ${i} failed: ${await stderrs[i]}`);
    reported.push(...JSON.parse(rest.join("")));
  }
  assert.equal(reported.length, 3 * rounds * keys * 2);

  const rows = t.store.db.prepare(
    `SELECT id, json_extract(args, '$.day') AS day FROM jobs WHERE worker = 'report' ORDER BY day`,
  ).all() as { id: number; day: number }[];
  assert.equal(rows.length, keys * rounds, "one row per unique key");
  assert.deepEqual(rows.map((r) => r.day), Array.from({ length: keys * rounds }, (_, i) => i));
  const idOf = new Map(rows.map((r) => [r.day, r.id]));
  for (const r of reported) {
    assert.equal(r.id, idOf.get(r.key), `every insert of key ${r.key} names its one row`);
  }
  const inserted = reported.filter((r) => !r.duplicate);
  assert.equal(inserted.length, keys * rounds, "one insert per key reports duplicate: false");
  assert.equal(new Set(inserted.map((r) => r.key)).size, keys * rounds);
});

Deno.test("unique.debounce through the library: the worker runs once, with the latest args", async () => {
  const seen: unknown[] = [];
  const reindex = defineWorker<{ doc: number; rev: number }>({
    name: "reindex",
    unique: { by: { keys: ["doc"] }, debounce: 60_000 },
    perform: (args) => {
      seen.push(args);
    },
  });
  await using t = await tempJobs([reindex]);
  const first = await t.jobs.enqueue(reindex, { doc: 1, rev: 1 });
  assert.equal(first.state, "scheduled");
  t.clock.advance(10_000);
  const second = await t.jobs.enqueue(reindex, { doc: 1, rev: 2 });
  assert.deepEqual([second.id, second.duplicate, second.replaced], [first.id, true, true]);
  t.clock.advance(50_000);
  await drainQueue(t.jobs, "default");
  assert.deepEqual(seen, [{ doc: 1, rev: 2 }]);
});

Deno.test("unique.debounce must be a number of ms or { window, extend }", () => {
  for (const debounce of [-1, Number.NaN, { window: "1m" }]) {
    assert.throws(
      () =>
        defineWorker({
          name: "bad",
          // deno-lint-ignore no-explicit-any
          unique: { debounce: debounce as any },
          perform: () => {},
        }),
      /unique\.debounce must be a number of ms >= 0 or \{ window, extend \}/,
    );
  }
});
