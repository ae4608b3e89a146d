import assert from "node:assert/strict";
import { defineWorker, EnqueueError, Jobs, silentLogger } from "../../src/mod.ts";
import { DEFAULT_ARGS_LIMIT } from "../../src/kernel/enqueue.ts";
import { tempJobs } from "../support/stores.ts";

const ship = defineWorker<Record<string, unknown>>({ name: "ship", perform: () => {} });

type T = Awaited<ReturnType<typeof tempJobs>>;

function createOrders(t: T): void {
  t.store.db.exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL)");
}

function countOf(t: T, table: "jobs" | "orders"): number {
  return Number(
    (t.store.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n,
  );
}

Deno.test("enqueue in a transaction that throws leaves neither the job nor the caller's row", async () => {
  await using t = await tempJobs([ship]);
  createOrders(t);
  await assert.rejects(
    () =>
      t.jobs.transaction(async (tx) => {
        tx.db.prepare("INSERT INTO orders (item) VALUES (?)").run("book");
        const { id } = await t.jobs.enqueue(ship, { order: 1 }, { tx });
        assert.ok(id > 0);
        throw new Error("payment declined");
      }),
    /payment declined/,
  );
  assert.equal(countOf(t, "orders"), 0);
  assert.equal(countOf(t, "jobs"), 0);
  // The store still works after the rollback.
  await t.jobs.enqueue(ship, { order: 2 });
  assert.equal(countOf(t, "jobs"), 1);
});

Deno.test("enqueue in a transaction that commits keeps both the job and the caller's row", async () => {
  await using t = await tempJobs([ship]);
  createOrders(t);
  const result = await t.jobs.transaction(async (tx) => {
    const order = tx.db.prepare("INSERT INTO orders (item) VALUES (?) RETURNING id").get(
      "book",
    ) as { id: number };
    return await t.jobs.enqueue(ship, { order: order.id }, { tx });
  });
  assert.equal(countOf(t, "orders"), 1);
  const job = await t.store.jobGet({ id: result.id });
  assert.equal(job?.state, "available");
  assert.deepEqual(job?.args, { order: 1 });
});

Deno.test("enqueueMany in a transaction rolls back with it", async () => {
  await using t = await tempJobs([ship]);
  await assert.rejects(() =>
    t.jobs.transaction(async (tx) => {
      const results = await t.jobs.enqueueMany(
        [{ worker: ship, args: { n: 1 } }, { worker: ship, args: { n: 2 } }],
        { tx },
      );
      assert.equal(results.length, 2);
      throw new Error("abort");
    })
  );
  assert.equal(countOf(t, "jobs"), 0);
});

Deno.test("args JSON cannot hold are refused with EnqueueError and write no row", async () => {
  await using t = await tempJobs([ship]);
  const cycle: Record<string, unknown> = { name: "loop" };
  cycle.self = cycle;
  const cases: [string, unknown, RegExp][] = [
    ["a function", { callback: () => 1 }, /args\.callback is a function/],
    ["a symbol", { tag: Symbol("x") }, /args\.tag is a symbol/],
    ["a BigInt", { amount: 10n }, /args cannot be serialized/],
    ["a cycle", cycle, /args cannot be serialized/],
    ["NaN", { ratio: NaN }, /args\.ratio is NaN/],
    ["Infinity", { ratio: -Infinity }, /args\.ratio is -Infinity/],
    ["a Map", { seen: new Map([["a", 1]]) }, /args\.seen is a Map/],
    ["a Set", { seen: new Set([1]) }, /args\.seen is a Set/],
    ["undefined", undefined, /args cannot be serialized/],
    ["a bare function", () => 1, /args is a function/],
  ];
  for (const [what, args, message] of cases) {
    await assert.rejects(
      () => t.jobs.enqueue(ship, args as Record<string, unknown>),
      (error: unknown) => {
        assert.ok(error instanceof EnqueueError, `${what}: ${String(error)}`);
        assert.match(error.message, /^enqueue "ship": /, what);
        assert.match(error.message, message, what);
        return true;
      },
    );
  }
  assert.equal(countOf(t, "jobs"), 0);
});

Deno.test("args over the 256 KiB default limit are refused, counted in UTF-8 bytes", async () => {
  await using t = await tempJobs([ship]);
  assert.equal(DEFAULT_ARGS_LIMIT, 256 * 1024);
  const overhead = '{"s":""}'.length;
  // Exactly at the limit: accepted.
  await t.jobs.enqueue(ship, { s: "x".repeat(DEFAULT_ARGS_LIMIT - overhead) });
  await assert.rejects(
    () => t.jobs.enqueue(ship, { s: "x".repeat(DEFAULT_ARGS_LIMIT - overhead + 1) }),
    (error: unknown) =>
      error instanceof EnqueueError &&
      error.message.includes(`${DEFAULT_ARGS_LIMIT + 1} bytes, more than the limit of 262144`),
  );
  // 150 000 characters but 300 000 bytes of UTF-8.
  await assert.rejects(
    () => t.jobs.enqueue(ship, { s: "é".repeat(150_000) }),
    (error: unknown) => error instanceof EnqueueError && /300008 bytes/.test(error.message),
  );
  assert.equal(countOf(t, "jobs"), 1);
});

Deno.test("the argsLimit option sets the largest args accepted", async () => {
  await using t = await tempJobs([ship]);
  const small = new Jobs({ store: t.store, clock: t.clock, logger: silentLogger, argsLimit: 64 });
  await small.enqueue(ship, { s: "x".repeat(40) });
  await assert.rejects(
    () => small.enqueue(ship, { s: "x".repeat(100) }),
    (error: unknown) =>
      error instanceof EnqueueError && /more than the limit of 64$/.test(error.message),
  );
  await assert.rejects(
    () => small.enqueue(ship, {}, { meta: { note: "y".repeat(100) } }),
    (error: unknown) => error instanceof EnqueueError && /ship" meta/.test(error.message),
    "meta is held to the same limit",
  );
  assert.equal(countOf(t, "jobs"), 1);
});

Deno.test("priority is clamped into 0-9", async () => {
  await using t = await tempJobs([ship]);
  for (
    const [given, stored] of [[42, 9], [-3, 0], [3.6, 4], [5, 5], [NaN, 0], [Infinity, 0]] as const
  ) {
    const { id } = await t.jobs.enqueue(ship, {}, { priority: given });
    assert.equal((await t.store.jobGet({ id }))?.priority, stored, `priority ${given}`);
  }
  const urgent = defineWorker({ name: "urgent", priority: 12, perform: () => {} });
  const { id } = await t.jobs.enqueue(urgent, {});
  assert.equal((await t.store.jobGet({ id }))?.priority, 9, "a worker's priority is clamped too");
});

Deno.test("maxAttempts below 1 or not an integer is refused and writes no row", async () => {
  await using t = await tempJobs([ship]);
  for (const maxAttempts of [0, -1, 1.5, NaN]) {
    await assert.rejects(
      () => t.jobs.enqueue(ship, {}, { maxAttempts }),
      new RegExp(`enqueue "ship": maxAttempts must be an integer >= 1, got ${maxAttempts}`),
    );
  }
  assert.equal(countOf(t, "jobs"), 0);
  assert.throws(
    () => defineWorker({ name: "bad", maxAttempts: 0, perform: () => {} }),
    /worker "bad": maxAttempts must be an integer >= 1, got 0/,
  );
  const { id } = await t.jobs.enqueue(ship, {}, { maxAttempts: 1 });
  assert.equal((await t.store.jobGet({ id }))?.maxAttempts, 1);
});

Deno.test("in and at schedule the job for later; now or the past makes it available", async () => {
  await using t = await tempJobs([ship]);
  const now = t.clock.now();
  const later = await t.jobs.enqueue(ship, {}, { in: 60_000 });
  assert.equal(later.state, "scheduled");
  assert.equal((await t.store.jobGet({ id: later.id }))?.scheduledAt, now + 60_000);

  const atNumber = await t.jobs.enqueue(ship, {}, { at: now + 5_000 });
  assert.equal(atNumber.state, "scheduled");
  const atDate = await t.jobs.enqueue(ship, {}, { at: new Date(now + 3_600_000) });
  assert.equal(atDate.state, "scheduled");
  assert.equal((await t.store.jobGet({ id: atDate.id }))?.scheduledAt, now + 3_600_000);

  assert.equal((await t.jobs.enqueue(ship, {}, { in: 0 })).state, "available");
  const past = await t.jobs.enqueue(ship, {}, { at: now - 1_000 });
  assert.equal(past.state, "available");
  assert.equal((await t.store.jobGet({ id: past.id }))?.scheduledAt, now - 1_000);
  const plain = await t.jobs.enqueue(ship, {});
  assert.equal(plain.state, "available");
  assert.equal((await t.store.jobGet({ id: plain.id }))?.insertedAt, now);
});

Deno.test("bad in/at values are refused and write no row", async () => {
  await using t = await tempJobs([ship]);
  await assert.rejects(() => t.jobs.enqueue(ship, {}, { in: 1, at: 2 }), /give "in" or "at"/);
  await assert.rejects(() => t.jobs.enqueue(ship, {}, { in: -1 }), /"in" must be a number/);
  await assert.rejects(
    () => t.jobs.enqueue(ship, {}, { at: new Date("not a date") }),
    /"at" is not a valid instant/,
  );
  assert.equal(countOf(t, "jobs"), 0);
});

Deno.test("options and worker defaults reach the stored row", async () => {
  const mail = defineWorker<{ to: string }>({
    name: "mail",
    queue: "mailers",
    priority: 2,
    maxAttempts: 5,
    perform: () => {},
  });
  await using t = await tempJobs([mail]);
  const byWorker = await t.jobs.enqueue(mail, { to: "ada" });
  const byName = await t.jobs.enqueue("mail", { to: "bob" });
  for (const { id } of [byWorker, byName]) {
    const job = await t.store.jobGet({ id });
    assert.equal(job?.queue, "mailers");
    assert.equal(job?.priority, 2);
    assert.equal(job?.maxAttempts, 5);
  }
  const custom = await t.jobs.enqueue(mail, { to: "cy" }, {
    queue: "urgent",
    priority: 0,
    maxAttempts: 2,
    tags: ["vip", "eu"],
    meta: { campaign: "spring" },
    tenant: "acme",
  });
  const job = await t.store.jobGet({ id: custom.id });
  assert.equal(job?.queue, "urgent");
  assert.equal(custom.queue, "urgent");
  assert.equal(job?.priority, 0);
  assert.equal(job?.maxAttempts, 2);
  assert.deepEqual(job?.tags, ["vip", "eu"]);
  assert.deepEqual(job?.meta, { campaign: "spring" });
  assert.equal(job?.tenant, "acme");
  assert.equal(job?.attempt, 0);
  assert.deepEqual(job?.errors, []);
  await assert.rejects(() => t.jobs.enqueue(mail, { to: "x" }, { queue: "bad queue" }), /queue/);
});

Deno.test("enqueueMany inserts many in one call, results in input order, duplicates mapped", async () => {
  await using t = await tempJobs([ship]);
  const existing = await t.jobs.enqueue(ship, { order: 0 }, { unique: {} });
  const results = await t.jobs.enqueueMany([
    { worker: ship, args: { order: 1 }, options: { unique: {} } },
    { worker: ship, args: { plain: "a" } },
    { worker: ship, args: { order: 0 }, options: { unique: {} } },
    { worker: "ship", args: { later: true }, options: { in: 1000, queue: "slow" } },
    { worker: ship, args: { order: 1 }, options: { unique: {} } },
    { worker: ship, args: { plain: "b" } },
  ]);
  assert.equal(results.length, 6);
  assert.deepEqual(results.map((r) => r.duplicate), [false, false, true, false, true, false]);
  assert.equal(results[2]?.id, existing.id, "a duplicate of an existing row names it");
  assert.equal(results[4]?.id, results[0]?.id, "a duplicate within the batch names the new row");
  assert.deepEqual(results.map((r) => r.state), [
    "available",
    "available",
    "available",
    "scheduled",
    "available",
    "available",
  ]);
  assert.equal(results[3]?.queue, "slow");
  // Each new row holds the args of its own entry.
  const expected: [number, unknown][] = [
    [results[0]!.id, { order: 1 }],
    [results[1]!.id, { plain: "a" }],
    [results[3]!.id, { later: true }],
    [results[5]!.id, { plain: "b" }],
  ];
  for (const [id, args] of expected) {
    assert.deepEqual((await t.store.jobGet({ id }))?.args, args);
  }
  assert.equal(countOf(t, "jobs"), 5);
});

Deno.test("enqueueMany writes nothing when one entry is refused", async () => {
  await using t = await tempJobs([ship]);
  await assert.rejects(
    () =>
      t.jobs.enqueueMany([
        { worker: ship, args: { n: 1 } },
        { worker: ship, args: { n: 2n } },
        { worker: ship, args: { n: 3 } },
      ]),
    EnqueueError,
  );
  assert.equal(countOf(t, "jobs"), 0);
  assert.deepEqual(await t.jobs.enqueueMany([]), []);
});

Deno.test("enqueue without a worker name is refused", async () => {
  await using t = await tempJobs([]);
  await assert.rejects(() => t.jobs.enqueue("", {}), EnqueueError);
  assert.equal(countOf(t, "jobs"), 0);
});

Deno.test("an enqueue inside jobs.transaction without { tx } joins the transaction", async () => {
  const note = defineWorker({ name: "note", perform: () => {} });
  await using t = await tempJobs([note]);
  await assert.rejects(
    t.jobs.transaction(async () => {
      await t.jobs.enqueue(note, { n: 1 });
      throw new Error("roll back");
    }),
    /roll back/,
  );
  assert.equal((await t.store.jobsList({})).length, 0);
  await t.jobs.transaction(async () => {
    await t.jobs.enqueue(note, { n: 2 });
  });
  assert.equal((await t.store.jobsList({})).length, 1);
});

Deno.test("every refused enqueue throws EnqueueError naming the field and value", async () => {
  const note = defineWorker({ name: "note", perform: () => {} });
  await using t = await tempJobs([note]);
  const refusals: [string, Promise<unknown>, RegExp][] = [
    ["maxAttempts", t.jobs.enqueue(note, {}, { maxAttempts: 0 }), /maxAttempts .* got 0/],
    ["queue", t.jobs.enqueue(note, {}, { queue: "no spaces" }), /queue .* "no spaces"/],
    ["unique", t.jobs.enqueue(note, {}, { unique: { period: -1 } }), /unique.period .* -1/],
    ["in", t.jobs.enqueue(note, {}, { in: -5 }), /"in" .* -5/],
  ];
  for (const [field, refused, message] of refusals) {
    await assert.rejects(refused, (error: Error) => {
      assert.ok(error instanceof EnqueueError, `${field}: ${error.name}`);
      assert.match(error.message, message);
      return true;
    });
  }
  assert.equal((await t.store.jobsList({})).length, 0);
});
