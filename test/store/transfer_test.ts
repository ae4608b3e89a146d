/**
 * `storeTransfer` (src/store/transfer.ts) from a SQLite store holding a bit
 * of everything (jobs in every state, attempts, unique keys, occurrences,
 * a waiting replay, schedules with recovery points and misfires, a disabled
 * one, a paused queue, settings, audit) into a fresh PostgreSQL schema and
 * back: every row equal through the Store API, ids and sequences kept,
 * counts and checksums equal on both sides; refusals that write nothing;
 * a failure mid-copy that leaves the target empty. And `jobs migrate-store`
 * in-process, for its messages and output.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { openJobs } from "../../src/jobs.ts";
import { describeLocation } from "../../src/store/location.ts";
import { openStore } from "../../src/store/open.ts";
import { compileWorkflow } from "../../src/workflow/definition.ts";
import { openPostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import type { Store } from "../../src/store/store.ts";
import {
  storeChecksums,
  storeTransfer,
  TRANSFER_TABLES,
  TransferRefusedError,
} from "../../src/store/transfer.ts";
import { type Harness, newJob, openPostgresHarness } from "../support/backends.ts";
import { runJobs } from "../support/cli.ts";
import { postgresLocation } from "../support/pg_schema.ts";
import { insertJob, tempDir, tempStore } from "../support/stores.ts";

const T0 = Date.UTC(2026, 2, 8, 12, 0, 0);
const HOUR = 3_600_000;

/**
 * Fills `store` with rows of every kind at instants around `T0`; returns
 * the id of a job that was deleted afterwards (above every id left), so the
 * sequence must stay past it.
 */
async function seed(store: SqliteStore): Promise<{ prunedId: number }> {
  const now = T0 - HOUR;
  const inserted = await store.jobsInsert({
    now,
    jobs: [
      newJob({ scheduledAt: now, queue: "default", args: '{"n":1}', tags: '["a","b"]' }),
      newJob({ scheduledAt: now, queue: "default", meta: '{"owner":"ops"}', priority: 3 }),
      newJob({ scheduledAt: now, queue: "default", maxAttempts: 1 }),
      newJob({ scheduledAt: now, queue: "default" }),
      newJob({ scheduledAt: now, queue: "mail", tenant: "acme" }),
      newJob({ scheduledAt: now + 2 * HOUR, queue: "mail", uniqueKey: "mail:7" }),
      newJob({
        scheduledAt: now,
        queue: "default",
        worker: "jobs.command",
        occurrence: "nightly@2026-03-08T11:00:00.000Z",
        scheduleId: "nightly",
        scheduledFor: now,
        uniqueKey: "u:nightly",
        uniqueStates: "all",
      }),
    ],
  });
  const ids = inserted.map((r) => r.id);
  const { jobs: claimed } = await store.jobsClaim({
    queue: "default",
    node: "node-a",
    limit: 10,
    now: now + 1000,
    leaseMs: 10 * HOUR,
  });
  assert.equal(claimed.length, 5);
  const [a, b, c, , e] = claimed as [
    (typeof claimed)[0],
    (typeof claimed)[0],
    (typeof claimed)[0],
    (typeof claimed)[0],
    (typeof claimed)[0],
  ];
  const base = (job: typeof a) => ({
    id: job.id,
    fence: job.fence,
    attempt: job.attempt,
    startedAt: job.attemptedAt,
  });
  await store.jobsRecord({
    node: "node-a",
    now: now + 2000,
    results: [
      { ...base(a), outcome: "completed", output: "done\n" },
      { ...base(b), outcome: "retryable", error: 'boom: {"z":1,"a":2}', at: now + HOUR },
      { ...base(c), outcome: "discarded", error: "no more" },
      { ...base(e), occurrence: e.occurrence, outcome: "completed", definition: "h1" },
    ],
  });
  // claimed[3] stays executing, with its lease and fence.
  await store.jobsCancel({ ids: [ids[4]!], now: now + 3000, reason: "operator" });
  const replay = await store.jobReplay({
    id: a.id,
    now: now + 4000,
    actor: "alice",
    reason: "rerun",
    force: false,
  });
  assert.equal(replay?.replayed, true);
  // Final rows of other kinds, straight into the table.
  await insertJob(store, { state: "completed", completedAt: now, occurrence: "hourly@x" });
  await insertJob(store, { state: "retryable", attempt: 2, fence: 2, scheduledAt: T0 });

  await store.schedulesSync({
    now,
    schedules: [
      { id: "nightly", hash: "h1", tenant: null },
      { id: "hourly", hash: "h2", tenant: "acme" },
      { id: "paused-one", hash: "h3", tenant: null },
    ],
  });
  await store.schedulePlan({
    id: "nightly",
    now,
    plan: () => ({
      jobs: [],
      cancelled: [],
      misfires: 3,
      lastMisfireFor: now - 60_000,
      plannedFor: now,
    }),
  });
  await store.schedulePlan({
    id: "hourly",
    now,
    plan: () => ({ jobs: [], cancelled: [], misfires: 0, lastMisfireFor: null, plannedFor: now }),
  });
  await store.scheduleSetEnabled({
    id: "paused-one",
    enabled: false,
    reason: "broken upstream",
    actor: "bob",
    now,
  });
  await store.queuePause({ name: "mail", paused: true, now });
  await store.queuePause({ name: "default", paused: false, now });
  await store.queueLimitsSet({
    name: "mail",
    limits: { global: 3, partitionLimit: 2, rate: { limit: 100, perMs: 60_000, burst: 10 } },
    now,
  });
  await store.settingSet({ key: "retention", value: { completed: "7d" }, now });
  await store.settingSet({ key: "limits", value: [1, "two", { three: 3 }], now });
  for (const [i, target] of ["mail", "schedule:paused-one", `job:${a.id}`].entries()) {
    await store.auditRecord({
      at: now + i,
      actor: "alice",
      action: "test.action",
      target,
      reason: i === 0 ? null : "because",
      details: { i, nested: { b: 1, a: [true, null] } },
    });
  }
  // A workflow run: its row, its first step's row and job.
  const definition = compileWorkflow({
    id: "flow",
    queue: "flows",
    steps: [{ id: "a", worker: "noop" }, { id: "b", worker: "noop", dependsOn: ["a"] }],
  });
  await store.workflowStart({ definition, input: '{"order":1}', tenant: "acme", key: "k1", now });
  // A person and a token, with their secrets' hashes.
  await store.principalInsert({
    principal: {
      kind: "person",
      name: "ada",
      displayName: "Ada",
      roles: ["admin", "viewer"],
      secretHash: "scrypt$ln=17,r=8,p=1$c2FsdA$aGFzaA",
      createdBy: "root",
    },
    now,
  });
  await store.principalInsert({
    principal: {
      kind: "token",
      name: "ci",
      roles: ["operator"],
      tenant: "acme",
      secretHash: "sha256$00ff",
      expiresAt: now + HOUR,
      createdBy: "ada",
    },
    now,
  });
  await store.principalUpdate({ kind: "person", name: "ada", disabled: true, now: now + 1 });
  await store.principalUsed({ kind: "token", name: "ci", now: now + 2 });
  // Work items: scored (a fraction), claimed, done with its action's job, and their history.
  const rate = 2 / 86_400_000;
  for (const [key, amount] of [["d1", 240], ["d2", 1900]] as const) {
    await store.workItemAdd({
      queue: "disputes",
      key,
      tenant: "acme",
      data: { zeta: 1, amount, currency: "EUR", nested: { b: 2, a: [1, "x"] } },
      score: {
        score: amount / 100,
        rate,
        inputs: { amount, evidence_missing: null },
        version: "v1",
      },
      actor: "ada",
      now,
    });
  }
  await store.workItemClaim({ queue: "disputes", key: "d1", person: "ada", now, leaseMs: HOUR });
  await store.workItemDo({
    queue: "disputes",
    key: "d2",
    person: "ada",
    action: "refund",
    job: newJob({ worker: "refund", uniqueKey: "disputes/d2/refund", scheduledAt: now }),
    needClaim: false,
    fence: null,
    reason: "charged twice",
    now,
  });
  // A TOTP enrolment with a spent step, and confirmation requests: one pending with its code's
  // hash, one confirmed by TOTP.
  await store.totpEnrol({ person: "ada", secret: "JBSWY3DPEHPK3PXP", by: "root", now });
  await store.totpUse({ person: "ada", step: 98_765 });
  const request = {
    manifest: "a".repeat(64),
    queue: "disputes",
    bulk: "release",
    tenant: "acme",
    items: [{ id: "d-1", amount: "1900", currency: "EUR" }],
    totals: { EUR: "1900" },
    requester: "bob",
    secondPerson: true,
    expiresAt: now + HOUR,
    now,
  };
  await store.bulkRequestCreate({
    ...request,
    channel: "email",
    approverRole: null,
    codeHash: "scrypt$ln=14,r=8,p=1$c2FsdA$aGFzaA",
  });
  const viaTotp = await store.bulkRequestCreate({
    ...request,
    manifest: "b".repeat(64),
    channel: "totp",
    approverRole: "approver",
    codeHash: null,
    tries: 2,
  });
  await store.bulkRequestConfirm({
    id: viaTotp.id,
    confirmer: "ada",
    totpStep: 98_765,
    limit: 5,
    now: now + 1,
  });
  // An old node (a daemon killed long ago): not live, and not copied.
  await store.nodeBeat({ node: "old-node", queues: { default: 2 }, now: T0 - 2 * HOUR });
  // The highest job, pruned: its id must never be handed out again.
  const [last] = await store.jobsInsert({ jobs: [newJob({ scheduledAt: now })], now });
  store.db.prepare("DELETE FROM jobs WHERE id = ?").run(last!.id);
  return { prunedId: last!.id };
}

/** Everything a store holds that the transfer copies, read through the Store API. */
async function snapshot(store: Store) {
  const jobs = await store.jobsList({});
  const attempts = [];
  for (const job of jobs) attempts.push(await store.attemptsList({ jobId: job.id }));
  const targets = ["mail", "schedule:paused-one", ...jobs.map((j) => `job:${j.id}`)];
  const audit = [];
  for (const target of targets) audit.push(...await store.auditList({ target }));
  return {
    jobs,
    attempts,
    schedules: await store.schedulesList({}),
    queues: await store.queuesList(),
    settings: {
      retention: await store.settingGet({ key: "retention" }),
      limits: await store.settingGet({ key: "limits" }),
    },
    audit,
    workflows: await Promise.all(
      (await store.workflowsList({})).map((r) => store.workflowGet({ id: r.id })),
    ),
    principals: await store.principalsList({}),
    workItems: [
      ...await store.workItemsList({ queue: "disputes" }),
      ...await store.workItemsList({ queue: "disputes", state: "done" }),
    ],
    workItemEvents: [
      ...await store.workItemEvents({ queue: "disputes", key: "d1" }),
      ...await store.workItemEvents({ queue: "disputes", key: "d2" }),
    ],
    secrets: [
      await store.principalSecretHash({ kind: "person", name: "ada" }),
      await store.principalSecretHash({ kind: "token", name: "ci" }),
    ],
    totp: await store.totpSecret({ person: "ada" }),
    bulkRequests: await Promise.all(
      (await store.bulkRequestsList({})).map((r) => store.bulkRequestCodeHash({ id: r.id })),
    ),
  };
}

async function counts(store: Store): Promise<Record<string, number>> {
  return Object.fromEntries((await storeChecksums(store)).map((t) => [t.table, t.rows]));
}

/** A seeded SQLite store and a fresh PostgreSQL schema; both closed and removed after `fn`. */
async function withStores(
  fn: (s: { sqlite: SqliteStore; path: string; pg: Harness; prunedId: number }) => Promise<void>,
): Promise<void> {
  await using source = await tempStore();
  const { prunedId } = await seed(source.store);
  const pg = await openPostgresHarness(T0);
  try {
    await fn({ sqlite: source.store, path: source.path, pg, prunedId });
  } finally {
    await pg.close();
  }
}

Deno.test("storeTransfer copies every row of a SQLite store to PostgreSQL, ids and recovery points kept", async () => {
  await withStores(async ({ sqlite, pg, prunedId }) => {
    const before = await snapshot(sqlite);
    // Every state is there, so every state is compared.
    assert.deepEqual(
      [...new Set(before.jobs.map((j) => j.state))].sort(),
      ["available", "cancelled", "completed", "discarded", "executing", "retryable", "scheduled"],
    );
    const report = await storeTransfer(sqlite, pg.store, { now: T0, batchSize: 3 });

    assert.deepEqual(await snapshot(pg.store), before);
    const nightly = before.schedules.find((s) => s.id === "nightly")!;
    assert.equal(nightly.lastPlannedFor, T0 - HOUR);
    assert.equal(nightly.misfires, 3);
    assert.equal(before.schedules.find((s) => s.id === "paused-one")!.enabled, false);
    assert.deepEqual(await pg.store.nodesList(), [], "nodes belong to the source's processes");

    const source = await storeChecksums(sqlite);
    assert.deepEqual(await storeChecksums(pg.store), source);
    assert.deepEqual(report.tables.map((t) => t.table), [...TRANSFER_TABLES]);
    for (const t of report.tables) {
      const s = source.find((x) => x.table === t.table)!;
      assert.deepEqual([t.rows, t.checksum, t.targetRows, t.targetChecksum], [
        s.rows,
        s.checksum,
        s.rows,
        s.checksum,
      ]);
    }
    assert.equal(source.find((t) => t.table === "replays")!.rows, 1, "the waiting replay");
    assert.equal(report.nextIds!.jobs, prunedId + 1);

    const [fresh] = await pg.store.jobsInsert({ jobs: [newJob({ scheduledAt: T0 })], now: T0 });
    assert.equal(fresh!.id, prunedId + 1, "above every id the source handed out, pruned ones too");
  });
});

Deno.test("storeTransfer back from PostgreSQL to SQLite gives the same rows and checksums", async () => {
  await withStores(async ({ sqlite, pg, prunedId }) => {
    await storeTransfer(sqlite, pg.store, { now: T0 });
    const dir = await tempDir();
    const back = await openSqliteStore(`${dir.path}/back.db`, { now: T0 });
    try {
      const report = await storeTransfer(pg.store, back, { now: T0 });
      assert.deepEqual(await snapshot(back), await snapshot(sqlite));
      assert.deepEqual(await storeChecksums(back), await storeChecksums(sqlite));
      assert.equal(report.nextIds!.jobs, prunedId + 1);
      const [fresh] = await back.jobsInsert({ jobs: [newJob({ scheduledAt: T0 })], now: T0 });
      assert.equal(fresh!.id, prunedId + 1);
    } finally {
      await back.close();
      await dir.cleanup();
    }
  });
});

Deno.test("a checksum changes when one value of one row changes, and only that table's", async () => {
  await withStores(async ({ sqlite, pg }) => {
    await storeTransfer(sqlite, pg.store, { now: T0 });
    const [job] = await pg.store.jobsList({ limit: 1, desc: true });
    const raw = await openPostgresStore(pg.location, { migrate: false, max: 1 });
    try {
      await raw.transaction((tx) =>
        tx.sql`UPDATE jobs SET attempted_by = 'someone-else' WHERE id = ${job!.id}`
      );
    } finally {
      await raw.close();
    }
    const source = await storeChecksums(sqlite);
    const tampered = await storeChecksums(pg.store);
    const differ = tampered.filter((t, i) => t.checksum !== source[i]!.checksum);
    assert.deepEqual(differ.map((t) => t.table), ["jobs"]);
    assert.deepEqual(tampered.map((t) => t.rows), source.map((t) => t.rows));
  });
});

Deno.test("storeTransfer refuses a target that already holds jobs and leaves it as it was", async () => {
  await withStores(async ({ sqlite, pg }) => {
    await pg.store.jobsInsert({ jobs: [newJob({ scheduledAt: T0 })], now: T0 });
    const before = await storeChecksums(pg.store);
    await assert.rejects(
      storeTransfer(sqlite, pg.store, { now: T0 }),
      (error: Error) => {
        assert.ok(error instanceof TransferRefusedError);
        assert.equal(error.reason, "target-not-empty");
        assert.match(error.message, /already holds rows \(jobs: 1\)/);
        return true;
      },
    );
    assert.deepEqual(await storeChecksums(pg.store), before);
  });
});

Deno.test("storeTransfer refuses a source whose node beat within the last minute, naming it and when", async () => {
  await withStores(async ({ sqlite, pg }) => {
    await sqlite.nodeBeat({ node: "host:42", queues: { default: 1 }, now: T0 - 12_000 });
    await assert.rejects(
      storeTransfer(sqlite, pg.store, { now: T0 }),
      (error: Error) => {
        assert.ok(error instanceof TransferRefusedError);
        assert.equal(error.reason, "live-nodes");
        assert.match(error.message, /host:42 \(beat 12s ago\); stop their daemons first/);
        assert.doesNotMatch(error.message, /old-node/);
        return true;
      },
    );
    assert.deepEqual(Object.values(await counts(pg.store)), TRANSFER_TABLES.map(() => 0));
    // A minute later the node counts as gone.
    const report = await storeTransfer(sqlite, pg.store, { now: T0 + 60_000 - 12_000 + 1 });
    assert.ok(report.tables.every((t) => t.rows === t.targetRows));
  });
});

Deno.test("a dry run counts what it would copy and writes nothing", async () => {
  await withStores(async ({ sqlite, pg }) => {
    const source = await counts(sqlite);
    const report = await storeTransfer(sqlite, pg.store, { now: T0, dryRun: true });
    assert.deepEqual(Object.fromEntries(report.tables.map((t) => [t.table, t.rows])), source);
    assert.equal(report.nextIds, null);
    assert.deepEqual(Object.values(await counts(pg.store)), TRANSFER_TABLES.map(() => 0));
    // Without a target (not created yet) it still counts the source.
    const alone = await storeTransfer(sqlite, null, { now: T0, dryRun: true });
    assert.deepEqual(alone.tables, report.tables);
  });
});

Deno.test("a row PostgreSQL refuses mid-copy rolls the whole copy back", async () => {
  await withStores(async ({ sqlite, pg }) => {
    // PostgreSQL's attempt is a 32-bit integer; SQLite's holds 64 bits. The row comes last.
    await insertJob(sqlite, { attempt: 2 ** 31, fence: 1 });
    await assert.rejects(
      storeTransfer(sqlite, pg.store, { now: T0, batchSize: 2 }),
      /out of range/,
    );
    assert.deepEqual(Object.values(await counts(pg.store)), TRANSFER_TABLES.map(() => 0));
  });
});

// ------------------------------------------------------------------- the CLI

Deno.test("jobs migrate-store prints each table's rows and checksums on both sides", async () => {
  await withStores(async ({ sqlite, path, pg }) => {
    await sqlite.close();
    const source = await openSqliteStore(path);
    const sums = await storeChecksums(source);
    await source.close();
    const { code, out, err } = await runJobs(
      ["migrate-store", "--from", path, "--to", pg.location],
      { now: T0 },
    );
    assert.equal(code, 0, err);
    const lines = out.split("\n");
    assert.match(lines[0]!, /^copied ".*jobs\.db" to "postgres:\/\/.*":$/);
    for (const t of sums) {
      const short = t.checksum.slice(0, 16);
      const row = new RegExp(`^  ${t.table} +${t.rows} +${short} +${t.rows} +${short} +equal$`);
      assert.ok(lines.some((l) => row.test(l)), `${t.table}:\n${out}`);
    }
    assert.match(lines.at(-3)!, /every count and checksum equal; the next job id is \d+/);
    assert.match(lines.at(-2)!, /^next: point every daemon and command at "postgres:/);
  });
});

Deno.test("jobs migrate-store --dry-run --json counts without creating the target", async () => {
  await withStores(async ({ path, sqlite }) => {
    const expected = await counts(sqlite);
    await sqlite.close();
    await using target = postgresLocation();
    const { code, out, err } = await runJobs(
      ["migrate-store", "--from", path, "--to", target.url, "--dry-run", "--json"],
      { now: T0 },
    );
    assert.equal(code, 0, err);
    const result = JSON.parse(out);
    assert.equal(result.dryRun, true);
    assert.deepEqual(result.target, { state: "create" });
    assert.deepEqual(
      Object.fromEntries(
        result.tables.map((t: { table: string; rows: number }) => [t.table, t.rows]),
      ),
      expected,
    );
    const probe = await openPostgresStore(target.url, { migrate: false, readOnly: true, max: 1 });
    try {
      assert.equal(await probe.schemaVersion(), 0, "the dry run created nothing");
    } finally {
      await probe.close();
    }
  });
});

Deno.test("jobs migrate-store names the live node and the same store, and exits 1 or 2", async () => {
  await withStores(async ({ sqlite, path, pg }) => {
    await sqlite.nodeBeat({ node: "host:42", queues: {}, now: T0 - 5_000 });
    await sqlite.close();
    const live = await runJobs(["migrate-store", "--from", path, "--to", pg.location], {
      now: T0,
    });
    assert.equal(live.code, 1);
    assert.match(live.err, /^jobs migrate-store: .*host:42 \(beat 5s ago\); stop their daemons/);
    const same = await runJobs(["migrate-store", "--from", path, "--to", path], { now: T0 });
    assert.equal(same.code, 2);
    assert.match(same.err, /--from and --to name the same store/);
  });
});

Deno.test("jobs migrate-store refuses a SQLite source at an older schema with the migrate hint", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/old.db`;
    const old = await openSqliteStore(path);
    old.db.exec(
      "DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)",
    );
    await old.close();
    const clock = new FakeClock(T0);
    await using target = postgresLocation();
    const { code, err } = await runJobs(["migrate-store", "--from", path, "--to", target.url], {
      now: clock.now(),
    });
    assert.equal(code, 1);
    assert.match(err, /older|schema version/);
    assert.match(err, /run: jobsctl migrate --db /);
  } finally {
    await dir.cleanup();
  }
});

// ------------------------------------------------------- the retired source

/** The test database's URL with a password in it (trust auth ignores it), never to be shown. */
function withPassword(location: string): string {
  return location.replace("postgres://postgres@", "postgres://postgres:s3cret-pw@");
}

Deno.test("jobs migrate-store retires its source: enqueue and openJobs refused naming the new store, status says it moved, --force-moved and --reopen audited", async () => {
  await withStores(async ({ sqlite, path }) => {
    const jobsBefore = (await sqlite.jobsList({})).length;
    await sqlite.close();
    await using target = postgresLocation();
    const to = withPassword(target.url);
    const shown = target.url; // the location without its password
    const moved = await runJobs(["migrate-store", "--from", path, "--to", to, "--actor", "ops"], {
      now: T0,
    });
    assert.equal(moved.code, 0, moved.err);
    assert.doesNotMatch(moved.out, /s3cret-pw/);
    const lines = moved.out.split("\n");
    assert.match(lines.at(-2)!, /^next: point every daemon and command at "postgres:\/\/.*"/);
    assert.ok(lines.at(-2)!.includes(shown), lines.at(-2));
    assert.match(
      lines.at(-1)!,
      /is retired: daemons and writes on it are refused.*jobsctl migrate-store --reopen --db /,
    );

    // The mark and its audit row, in the source, without the password.
    const source = await openSqliteStore(path);
    try {
      assert.deepEqual(await source.settingGet({ key: "store.moved" }), {
        to: shown,
        at: T0,
        actor: "ops",
      });
      const audit = await source.auditList({ target: "store" });
      assert.deepEqual(audit.map((a) => [a.action, a.actor, a.details.movedTo]), [
        ["store.moved", "ops", shown],
      ]);
    } finally {
      await source.close();
    }

    // A write is refused at once, naming the new store and the way back.
    const enqueue = await runJobs(["enqueue", "noop", "--db", path], {
      now: T0,
    });
    assert.equal(enqueue.code, 1, enqueue.out);
    assert.match(enqueue.err, /^jobs enqueue: the store ".*" moved to "postgres:\/\/[^"]*"/);
    assert.ok(enqueue.err.includes(`"${shown}"`), enqueue.err);
    assert.match(enqueue.err, /jobsctl migrate-store --reopen --db /);
    assert.match(enqueue.err, /--force-moved/);
    assert.doesNotMatch(enqueue.err, /s3cret-pw/);
    assert.equal(enqueue.err.split("\n").length, 1, "one line");
    // The library's front door too, with a typed error.
    const error = await assertRejectsWith(openJobs(path, { clock: new FakeClock(T0) }));
    // By name, so that this file compiles where the class does not exist yet.
    assert.equal((error as Error).name, "StoreMovedError", String(error));
    assert.equal((error as { move: { to: string } }).move.to, shown);

    // Reads work and say it moved.
    const status = await runJobs(["status", "--db", path, "--json"], { now: T0 });
    assert.equal(status.code, 0, status.err);
    assert.deepEqual(JSON.parse(status.out).moved, {
      to: shown,
      at: new Date(T0).toISOString(),
      actor: "ops",
    });
    const text = await runJobs(["status", "--db", path], { now: T0 });
    assert.match(text.out.split("\n")[0]!, /^MOVED: the store ".*" moved to "postgres:/);
    const ls = await runJobs(["ls", "--db", path], { now: T0 });
    assert.equal(ls.code, 0, ls.err);
    assert.match(ls.err, /^jobs ls: the store ".*" moved to "postgres:/);

    // --force-moved writes anyway, audited.
    const forced = await runJobs(
      ["enqueue", "noop", "--db", path, "--force-moved", "--actor", "ada"],
      { now: T0 + 1000 },
    );
    assert.equal(forced.code, 0, forced.err);
    // Where a command gives --force no meaning of its own, --force is --force-moved.
    const refusedPause = await runJobs(
      ["pause", "default", "--db", path, "--actor", "cy", "--reason", "maintenance window"],
      { now: T0 + 1500 },
    );
    assert.equal(refusedPause.code, 1, refusedPause.err);
    assert.match(refusedPause.err, /moved to "postgres:/);
    const pausedAnyway = await runJobs(
      [
        "pause",
        "default",
        "--db",
        path,
        "--force",
        "--actor",
        "cy",
        "--reason",
        "maintenance window",
      ],
      { now: T0 + 1500 },
    );
    assert.equal(pausedAnyway.code, 0, pausedAnyway.err);
    // --reopen takes it back, audited; then writes need no leave.
    const reopened = await runJobs(
      ["migrate-store", "--reopen", "--db", path, "--actor", "bob", "--reason", "rolled back"],
      { now: T0 + 2000 },
    );
    assert.equal(reopened.code, 0, reopened.err);
    assert.match(reopened.out, /^reopened ".*": daemons and writes on it are allowed again/);
    const again = await runJobs(["enqueue", "noop", "--db", path], {
      now: T0 + 3000,
    });
    assert.equal(again.code, 0, again.err);
    const back = await openSqliteStore(path);
    try {
      assert.equal(await back.settingGet({ key: "store.moved" }), null);
      const audit = await back.auditList({ target: "store" });
      assert.deepEqual(audit.map((a) => [a.action, a.actor, a.reason]), [
        ["store.moved", "ops", null],
        ["store.write_moved", "ada", null],
        ["store.write_moved", "cy", "maintenance window"],
        ["store.reopened", "bob", "rolled back"],
      ]);
      assert.equal((await back.jobsList({})).length, jobsBefore + 2);
    } finally {
      await back.close();
    }
    const notMoved = await runJobs(["migrate-store", "--reopen", "--db", path], { now: T0 });
    assert.equal(notMoved.code, 1);
    assert.match(notMoved.err, /is not retired/);
  });
});

/** The error `promise` rejects with (the test fails when it resolves). */
async function assertRejectsWith(promise: Promise<{ close(): Promise<void> }>): Promise<unknown> {
  try {
    const opened = await promise;
    await opened.close();
  } catch (error) {
    return error;
  }
  assert.fail("expected a rejection");
}

Deno.test("a copy whose source cannot be marked as moved says so and exits 1; the target keeps the verified copy", async () => {
  await withStores(async ({ sqlite, path, pg }) => {
    // The source refuses the mark (as a full disk or a lost lock would).
    sqlite.db.exec(`CREATE TRIGGER refuse_mark BEFORE INSERT ON settings
      WHEN NEW.key = 'store.moved' BEGIN SELECT RAISE(ABORT, 'disk says no'); END`);
    const expected = await counts(sqlite);
    await sqlite.close();
    const { code, out, err } = await runJobs(
      ["migrate-store", "--from", path, "--to", pg.location],
      { now: T0 },
    );
    assert.equal(code, 1, out);
    assert.match(
      err,
      /^jobs migrate-store: the copy in "postgres:.*" is complete and verified, but marking ".*jobs\.db" as moved failed \(.*disk says no.*\): it is still live; stop every daemon on it; point every daemon at "postgres:/,
    );
    assert.deepEqual(await counts(pg.store), expected, "the copy committed");
    const source = await openSqliteStore(path);
    try {
      assert.equal(await source.settingGet({ key: "store.moved" }), null);
      assert.deepEqual(await source.auditList({ target: "store" }), [], "no half-written mark");
    } finally {
      await source.close();
    }
  });
});

Deno.test("openJobs with writeMoved opens a retired store and audits who wrote to it", async () => {
  await withStores(async ({ sqlite, path, pg }) => {
    await sqlite.close();
    const moved = await runJobs(["migrate-store", "--from", path, "--to", pg.location], {
      now: T0,
    });
    assert.equal(moved.code, 0, moved.err);
    const jobs = await openJobs(path, {
      clock: new FakeClock(T0 + 1000),
      writeMoved: { actor: "lib", reason: "drain the rest" },
    });
    try {
      const audit = await jobs.store.auditList({ target: "store" });
      assert.deepEqual(audit.map((a) => [a.action, a.actor, a.reason, a.details.movedTo]), [
        ["store.moved", "tester", null, describeLocation(pg.location)],
        ["store.write_moved", "lib", "drain the rest", describeLocation(pg.location)],
      ]);
    } finally {
      await jobs.close();
    }
  });
});

Deno.test("a copy from PostgreSQL retires the PostgreSQL source: writes refused, reads told where it went", async () => {
  await withStores(async ({ sqlite, pg }) => {
    await storeTransfer(sqlite, pg.store, { now: T0 });
    const dir = await tempDir();
    try {
      const back = await openSqliteStore(`${dir.path}/back.db`, { now: T0 });
      try {
        await storeTransfer(pg.store, back, {
          now: T0 + HOUR,
          retire: { to: `${dir.path}/back.db`, actor: "ops", reason: "leaving PostgreSQL" },
        });
      } finally {
        await back.close();
      }
      const move = { to: `${dir.path}/back.db`, at: T0 + HOUR, actor: "ops" };
      assert.deepEqual(await pg.store.settingGet({ key: "store.moved" }), move);
      const audit = await pg.store.auditList({ target: "store" });
      assert.deepEqual(audit.map((a) => [a.action, a.actor, a.reason]), [
        ["store.moved", "ops", "leaving PostgreSQL"],
      ]);
      await assert.rejects(
        openStore(pg.location, { mode: "write", now: T0 }),
        (error: Error) => error.name === "StoreMovedError" && error.message.includes(move.to),
      );
      const read = await openStore(pg.location, { mode: "read", now: T0 });
      try {
        assert.deepEqual(read.moved, move);
      } finally {
        await read.store.close();
      }
    } finally {
      await dir.cleanup();
    }
  });
});
