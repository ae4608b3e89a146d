/**
 * The library on PostgreSQL, as a user writes it: `openJobs("postgres://...")`
 * creates the schema and migrates, and an enqueue inside the caller's
 * transaction (`jobs.transaction(async (tx) => { await tx.sql`...`; ... })`)
 * commits or rolls back with the caller's own rows; a runtime on the same
 * Jobs then runs what was committed. The transaction's type follows the
 * location: `tx.sql` for a `postgres://` literal, `tx.db` for a SQLite path,
 * either (told apart by `"sql" in tx`) for a string known at run time.
 */

import assert from "node:assert/strict";
import {
  defineWorker,
  FakeClock,
  type Jobs,
  openJobs,
  type PostgresTx,
  silentLogger,
  type SqliteTx,
} from "../../src/mod.ts";
import { waitUntil } from "../../src/testing.ts";
import { postgresLocation } from "../support/pg_schema.ts";

const T0 = Date.UTC(2026, 5, 1, 9);

/** Whether A and B are the same type (both ways assignable, distributing over nothing). */
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
/** Fails type-checking unless `T` is `true`. */
type Check<T extends true> = T;
type Opened<L extends string> = Awaited<ReturnType<typeof openJobs<L>>>;
// The transaction's type follows the location (deno check runs before the tests do).
export type TypedByLocation = [
  Check<Equals<Opened<"postgres://app@db:5432/app?schema=jobs">, Jobs<PostgresTx>>>,
  Check<Equals<Opened<"postgresql://app@db/app">, Jobs<PostgresTx>>>,
  Check<Equals<Opened<"./app.db">, Jobs<SqliteTx>>>,
  Check<Equals<Opened<string>, Jobs<SqliteTx | PostgresTx>>>,
];

interface Welcome {
  signupId: number;
}

/** A Jobs on a fresh schema with a `welcome` worker recording what it ran, and the caller's table. */
async function setup() {
  const pg = postgresLocation();
  const ran: number[] = [];
  const welcome = defineWorker<Welcome>({
    name: "welcome",
    perform(args) {
      ran.push(args.signupId);
    },
  });
  const clock = new FakeClock(T0);
  // The options-object form, as docs/postgresql.md shows it; `openJobs(pg.url, { ... })` is the same.
  const jobs = await openJobs({ db: pg.url, workers: [welcome], clock, logger: silentLogger })
    .catch(async (error) => {
      await pg[Symbol.asyncDispose]();
      throw error;
    });
  // A string known only at run time: either transaction, narrowed here once.
  const sqlOf = (tx: SqliteTx | PostgresTx) => {
    assert.ok("sql" in tx, "a postgres:// location gives a PostgreSQL transaction");
    return tx.sql;
  };
  // The transaction's search_path is the store's schema: the caller's table lives beside the jobs.
  await jobs.transaction(async (tx) => {
    await sqlOf(tx)`CREATE TABLE signups (id bigserial PRIMARY KEY, email text NOT NULL)`;
  });
  const counts = async () => {
    return await jobs.transaction(async (tx) => {
      const sql = sqlOf(tx);
      const [row] = await sql<{ signups: number; jobs: number }[]>`
        SELECT (SELECT count(*)::int FROM signups) AS signups,
               (SELECT count(*)::int FROM jobs) AS jobs`;
      return row!;
    });
  };
  return {
    jobs,
    welcome,
    ran,
    sqlOf,
    counts,
    async [Symbol.asyncDispose]() {
      await jobs.close({ grace: 0 });
      await pg[Symbol.asyncDispose]();
    },
  };
}

Deno.test("openJobs on PostgreSQL: an enqueue in the caller's transaction commits with its row, and a worker runs it", async () => {
  await using t = await setup();
  const { signupId, job } = await t.jobs.transaction(async (tx) => {
    const sql = t.sqlOf(tx);
    const [row] = await sql<{ id: string }[]>`
      INSERT INTO signups (email) VALUES (${"ada@example.com"}) RETURNING id`;
    const signupId = Number(row!.id);
    const job = await t.jobs.enqueue(t.welcome, { signupId }, { tx });
    // Inside the transaction both are there; no other session sees either yet.
    const [seen] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM jobs`;
    assert.equal(seen!.n, 1);
    return { signupId, job };
  });
  assert.deepEqual(await t.counts(), { signups: 1, jobs: 1 });
  const stored = await t.jobs.store.jobGet({ id: job.id });
  assert.deepEqual([stored?.state, stored?.worker, stored?.args], [
    "available",
    "welcome",
    { signupId },
  ]);

  const runtime = await t.jobs.start({ queues: { default: 1 } });
  await waitUntil("the welcome job completed", async () => {
    const done = await t.jobs.store.jobGet({ id: job.id });
    return done?.state === "completed" ? done : undefined;
  }, { timeoutMs: 20_000 });
  assert.deepEqual(t.ran, [signupId]);
  await runtime.stop({ grace: 1_000 });
});

Deno.test("openJobs on PostgreSQL: a transaction that throws leaves neither the caller's row nor the job", async () => {
  await using t = await setup();
  await assert.rejects(
    t.jobs.transaction(async (tx) => {
      const sql = t.sqlOf(tx);
      await sql`INSERT INTO signups (email) VALUES (${"grace@example.com"})`;
      const { id } = await t.jobs.enqueue(t.welcome, { signupId: 99 }, { tx });
      assert.ok(id > 0);
      // Without { tx }, an enqueue inside the callback joins the transaction too.
      await t.jobs.enqueueMany([{ worker: t.welcome, args: { signupId: 100 } }]);
      throw new Error("payment declined");
    }),
    /payment declined/,
  );
  assert.deepEqual(await t.counts(), { signups: 0, jobs: 0 });
  // A failing statement of the caller's aborts the whole transaction the same way.
  await assert.rejects(
    t.jobs.transaction(async (tx) => {
      await t.jobs.enqueue(t.welcome, { signupId: 101 }, { tx });
      await t.sqlOf(tx)`INSERT INTO signups (email) VALUES (${null})`;
    }),
    /null value in column "email"/,
  );
  assert.deepEqual(await t.counts(), { signups: 0, jobs: 0 });
  // The store works on after the rollbacks.
  await t.jobs.enqueue(t.welcome, { signupId: 1 });
  assert.deepEqual(await t.counts(), { signups: 0, jobs: 1 });
});
