/**
 * `jobs demo`: a runnable tour of the library on a real SQLite file, written
 * as a library user would, through `src/mod.ts` only. It
 * defines a few workers, enqueues jobs that end in every way a job can end
 * (completed, retried, snoozed, delayed, duplicate, cancelled, discarded, and
 * one enqueued in the caller's own transaction), runs them with a real
 * runtime, and prints what happened.
 *
 * Each run tags its jobs and rows with a fresh run id, so running it again on
 * the same file works and reports only its own jobs.
 *
 * @module
 */

import {
  type Clock,
  defineWorker,
  type Jobs,
  type JobState,
  type Logger,
  openJobs,
  type SqliteTx,
  type Worker,
} from "../src/mod.ts";
import { FINAL_STATES, type Job, JOB_STATES } from "../src/store.ts";

/** What {@linkcode runDemo} needs; `main.ts` picks the clock, logger and output. */
export interface DemoOptions {
  /** The SQLite file; created and migrated when missing. */
  db: string;
  clock: Clock;
  logger: Logger;
  /** Writes one line of human-readable output. */
  write: (line: string) => void;
  /** Colour the states with ANSI codes (only when writing to a terminal). @default false */
  color?: boolean;
  /** Give up when the demo's jobs are not all final after this many ms. @default 20_000 */
  deadlineMs?: number;
}

/** What the demo did, for tests and the exit code. */
export interface DemoReport {
  run: string;
  jobs: Job[];
  duplicates: number;
  /** Jobs already in the file before this run. */
  earlier: number;
}

/** Raised when the demo's jobs did not all reach a final state before the deadline. */
export class DemoTimeoutError extends Error {
  constructor(ms: number, pending: Job[]) {
    const list = pending.map((j) => `#${j.id} ${j.worker} (${j.state})`).join(", ");
    super(`demo jobs not final after ${ms} ms: ${list}`);
    this.name = "DemoTimeoutError";
  }
}

/** Runs the demo: open, enqueue, work, report, stop, close. */
export async function runDemo(options: DemoOptions): Promise<DemoReport> {
  const { clock, write } = options;
  const paint = painter(options.color ?? false);
  const run = crypto.randomUUID().slice(0, 8);
  const started = clock.now();
  const workers = demoWorkers((line) => write(`  ${line}`));
  // The demo's own table is SQLite SQL (`tx.db`): it runs on a file only.
  if (/^postgres(ql)?:\/\//i.test(options.db)) {
    throw new RangeError(
      "jobs demo runs on a SQLite file; give --db a path, not a postgres:// URL",
    );
  }
  const jobs = await openJobs(options.db, {
    workers,
    clock,
    logger: options.logger,
  }) as Jobs<SqliteTx>;
  try {
    const earlier = (await jobs.store.jobsCount({})).reduce((n, c) => n + c.count, 0);
    write(`jobs demo on ${options.db} (run ${run})`);
    if (earlier > 0) {
      write(`the file already holds ${earlier} jobs from earlier runs; this run adds its own`);
    }
    write("");
    write(paint.bold("enqueue"));
    const { ids, duplicates } = await enqueueAll(jobs, workers, run, write);
    write("");
    write(paint.bold("work") + " (billing: 2, email: 2, default: 5 at once)");
    const runtime = await jobs.start({ queues: { default: 5, billing: 2, email: 2 } });
    let final: Job[];
    try {
      final = await waitForFinal(jobs, ids, options.deadlineMs ?? 20_000);
    } finally {
      await runtime.stop({ grace: 5_000 });
    }
    write("");
    write(paint.bold("result"));
    for (const line of table(final, paint)) write(`  ${line}`);
    write("");
    write(summary(final, duplicates, clock.now() - started));
    return { run, jobs: final, duplicates, earlier };
  } finally {
    await jobs.close({ grace: 0 });
  }
}

/** The demo's workers; `say` prints what each attempt did. */
// deno-lint-ignore no-explicit-any
export function demoWorkers(say: (line: string) => void): Worker<any>[] {
  const snoozed = new Set<number>();
  return [
    defineWorker<{ image: string; width: number; run: string }>({
      name: "resize",
      perform: (args, ctx) => {
        say(`resize #${ctx.job.id}: resized ${args.image} to ${args.width} px`);
      },
    }),
    defineWorker<{ order: number; cents: number; run: string }>({
      name: "charge",
      queue: "billing",
      maxAttempts: 3,
      // Retry quickly so the demo shows a retry within a second.
      backoff: () => 300,
      perform: (args, ctx) => {
        if (ctx.attempt === 1) {
          say(`charge #${ctx.job.id}: attempt 1 failed, retrying in 300 ms`);
          // The token is redacted before the error is stored or shown.
          throw new Error(`payment gateway timed out for card token=tok_${args.run}`);
        }
        say(
          `charge #${ctx.job.id}: attempt ${ctx.attempt} charged order ${args.order} ` +
            `(idempotency key ${ctx.idempotencyKey})`,
        );
      },
    }),
    defineWorker<{ month: string; run: string }>({
      name: "report",
      perform: (args, ctx) => {
        if (!snoozed.has(ctx.job.id)) {
          snoozed.add(ctx.job.id);
          say(`report #${ctx.job.id}: data not ready, snoozing 300 ms`);
          return { snooze: 300 };
        }
        say(`report #${ctx.job.id}: built the ${args.month} report`);
        return undefined;
      },
    }),
    defineWorker<{ issue: number; run: string }>({
      name: "newsletter",
      queue: "email",
      // Equal args (issue and run id) make equal jobs while the first is incomplete.
      unique: { by: "args" },
      perform: (args, ctx) => {
        say(`newsletter #${ctx.job.id}: sent issue ${args.issue}`);
      },
    }),
    defineWorker<{ file: string; run: string }>({
      name: "import",
      perform: (args, ctx) => {
        say(`import #${ctx.job.id}: ${args.file} is empty, discarding`);
        return { discard: `${args.file} is empty; retrying cannot help` };
      },
    }),
    defineWorker<{ account: number; run: string }>({
      name: "sync",
      perform: (args, ctx) => {
        say(`sync #${ctx.job.id}: account ${args.account} was closed, cancelling`);
        return { cancel: `account ${args.account} closed` };
      },
    }),
    defineWorker<{ text: string; run: string }>({
      name: "remind",
      perform: (args, ctx) => {
        const delay = ctx.job.scheduledAt - ctx.job.insertedAt;
        say(`remind #${ctx.job.id}: "${args.text}" (due ${delay} ms after it was enqueued)`);
      },
    }),
    defineWorker<{ email: string; signup: number; run: string }>({
      name: "welcome",
      queue: "email",
      perform: (args, ctx) => {
        say(`welcome #${ctx.job.id}: mailed ${args.email} (signup row ${args.signup})`);
      },
    }),
  ];
}

const SIGNUPS_TABLE = `CREATE TABLE IF NOT EXISTS demo_signups (
  id INTEGER PRIMARY KEY, email TEXT NOT NULL, run TEXT NOT NULL, created_at INTEGER NOT NULL)`;

class Rollback extends Error {}

async function enqueueAll(
  jobs: Jobs<SqliteTx>,
  // deno-lint-ignore no-explicit-any
  workers: Worker<any>[],
  run: string,
  write: (line: string) => void,
): Promise<{ ids: number[]; duplicates: number }> {
  const w = Object.fromEntries(workers.map((worker) => [worker.name, worker]));
  const ids: number[] = [];
  let duplicates = 0;
  const say = (line: string) => write(`  ${line}`);

  const entries = [
    { worker: w.resize!, args: { image: "cat.png", width: 640, run } },
    { worker: w.charge!, args: { order: 1001, cents: 4200, run } },
    { worker: w.report!, args: { month: "2026-03", run } },
    { worker: w.import!, args: { file: "contacts.csv", run } },
    { worker: w.sync!, args: { account: 7, run }, options: { priority: 3, tags: ["crm"] } },
  ];
  const plain = await jobs.enqueueMany(entries);
  plain.forEach((r, i) => {
    say(`#${r.id} ${entries[i]!.worker.name} -> ${r.state} (queue ${r.queue})`);
    ids.push(r.id);
  });

  const remind = await jobs.enqueue(w.remind!, { text: "stand up", run }, { in: 500 });
  say(`#${remind.id} remind -> ${remind.state}, due in 500 ms`);
  ids.push(remind.id);

  const first = await jobs.enqueue(w.newsletter!, { issue: 42, run });
  say(`#${first.id} newsletter -> ${first.state}`);
  ids.push(first.id);
  const again = await jobs.enqueue(w.newsletter!, { issue: 42, run });
  if (again.duplicate) {
    duplicates++;
    say(`newsletter again with the same args -> duplicate of #${again.id}, nothing inserted`);
  } else {
    say(`newsletter again -> #${again.id} (unexpected: not a duplicate)`);
    ids.push(again.id);
  }

  const email = `ada+${run}@example.com`;
  const welcome = await jobs.transaction(async (tx) => {
    tx.db.exec(SIGNUPS_TABLE);
    const row = tx.db.prepare(
      `INSERT INTO demo_signups (email, run, created_at) VALUES (?, ?, ?) RETURNING id`,
    ).get(email, run, jobs.clock.now()) as { id: number };
    const job = await jobs.enqueue(w.welcome!, { email, signup: row.id, run }, { tx });
    return { job, signup: row.id };
  });
  say(
    `#${welcome.job.id} welcome -> ${welcome.job.state}, ` +
      `committed in one transaction with signup row ${welcome.signup}`,
  );
  ids.push(welcome.job.id);

  const lost = `grace+${run}@example.com`;
  try {
    await jobs.transaction(async (tx) => {
      tx.db.prepare(`INSERT INTO demo_signups (email, run, created_at) VALUES (?, ?, ?)`)
        .run(lost, run, jobs.clock.now());
      await jobs.enqueue(w.welcome!, { email: lost, signup: 0, run }, { tx });
      throw new Rollback("the caller changed its mind");
    });
  } catch (error) {
    if (!(error instanceof Rollback)) throw error;
  }
  const leftovers = await jobs.transaction((tx) => {
    const rows = tx.db.prepare(`SELECT count(*) AS n FROM demo_signups WHERE email = ?`)
      .get(lost) as { n: number };
    return Promise.resolve(Number(rows.n));
  });
  const orphanJobs = (await jobs.store.jobsList({ worker: "welcome" }))
    .filter((j) => (j.args as { email?: string }).email === lost).length;
  say(
    `a second signup rolled back: ${leftovers} signup rows and ${orphanJobs} welcome jobs remain`,
  );
  return { ids, duplicates };
}

/** Polls the store until every job of `ids` is final, or throws after `deadlineMs`. */
async function waitForFinal(jobs: Jobs<SqliteTx>, ids: number[], deadlineMs: number) {
  const deadline = jobs.clock.now() + deadlineMs;
  for (;;) {
    const rows = await jobs.store.jobsList({ ids });
    const pending = rows.filter((j) => !FINAL_STATES.includes(j.state));
    if (pending.length === 0 && rows.length === ids.length) return rows;
    if (jobs.clock.now() >= deadline) throw new DemoTimeoutError(deadlineMs, pending);
    await jobs.clock.sleep(50);
  }
}

interface Paint {
  bold(text: string): string;
  state(state: JobState, text: string): string;
}

function painter(color: boolean): Paint {
  if (!color) return { bold: (t) => t, state: (_s, t) => t };
  const codes: Partial<Record<JobState, number>> = { completed: 32, cancelled: 33, discarded: 31 };
  return {
    bold: (t) => `\x1b[1m${t}\x1b[22m`,
    state: (s, t) => (codes[s] ? `\x1b[${codes[s]}m${t}\x1b[39m` : t),
  };
}

/** The result table: one row per job, padded to the widest cell. */
function table(rows: Job[], paint: Paint): string[] {
  const head = ["id", "worker", "state", "attempts", "last error"];
  const cells = rows.map((j) => [
    `#${j.id}`,
    j.worker,
    j.state,
    String(j.attempt),
    lastError(j),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[], state?: JobState) =>
    c.map((text, i) => {
      const padded = i === c.length - 1 ? text : text.padEnd(widths[i]!);
      return i === 2 && state ? paint.state(state, padded) : padded;
    }).join("  ").trimEnd();
  return [line(head), ...cells.map((c, i) => line(c, rows[i]!.state))];
}

/** The first line of the job's last stored error (stack frames follow it), shortened. */
function lastError(job: Job): string {
  const text = job.errors.at(-1)?.error.split("\n")[0] ?? "";
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

function summary(rows: Job[], duplicates: number, ms: number): string {
  const counts = new Map<JobState, number>();
  for (const j of rows) counts.set(j.state, (counts.get(j.state) ?? 0) + 1);
  const parts = JOB_STATES.filter((s) => counts.has(s)).map((s) => `${counts.get(s)} ${s}`)
    .join(", ");
  const retried = rows.filter((j) => j.attempt > 1).length;
  return `${rows.length} jobs in ${(ms / 1000).toFixed(1)} s: ${parts}; ` +
    `${retried} retried, ${duplicates} duplicate refused`;
}
