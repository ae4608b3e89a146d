/**
 * Test support for the children of the `kill -9` tests (`ingest_crash_child.ts`,
 * `workflow_crash_child.ts`): the table where a child's workers write their
 * side effects, a row per idempotency key with how many committed writes
 * wrote it, on either store, and the abortable pause a worker takes so
 * that kills land mid-step.
 */

import type { Jobs, PostgresTx, SqliteTx } from "../../src/mod.ts";

/** The runtime of a crash test's node, on either store. */
type AnyJobs = Jobs<SqliteTx | PostgresTx>;

/** One row of a {@linkcode CountedTable}: its key and its count, named as the table names it. */
export type Counted<C extends string> = { key: string } & Record<C, number>;

/** A table of keys, each with `column` counting the committed writes of it. */
export interface CountedTable<C extends string> {
  /** Creates the table unless it exists (both stores). */
  create(jobs: AnyJobs): Promise<void>;
  /** Every key written, in key order, with how many committed writes wrote it. */
  read(jobs: AnyJobs): Promise<Counted<C>[]>;
  /** One write of `keys`, in one transaction: each key's row once, and one more count. */
  write(jobs: AnyJobs, keys: readonly string[]): Promise<void>;
}

/**
 * The table `name` (`key TEXT PRIMARY KEY, <column> INTEGER NOT NULL`);
 * `name` and `column` are the test's own identifiers, put in the SQL as
 * they are.
 */
export function countedTable<C extends string>(name: string, column: C): CountedTable<C> {
  const ddl = `CREATE TABLE IF NOT EXISTS ${name} (
    key TEXT PRIMARY KEY, ${column} INTEGER NOT NULL)`;
  const select = `SELECT key, ${column} FROM ${name} ORDER BY key`;
  const upsert = (value: string) =>
    `INSERT INTO ${name} (key, ${column}) ${value}
      ON CONFLICT (key) DO UPDATE SET ${column} = ${name}.${column} + 1`;
  return {
    async create(jobs) {
      await jobs.transaction(async (tx) => {
        if ("sql" in tx) await tx.sql.unsafe(ddl);
        else tx.db.exec(ddl);
      });
    },
    read(jobs) {
      return jobs.transaction(async (tx) => {
        const rows = "sql" in tx ? await tx.sql.unsafe(select) : tx.db.prepare(select).all();
        return rows.map((row) =>
          ({ key: String(row.key), [column]: Number(row[column]) }) as Counted<C>
        );
      });
    },
    async write(jobs, keys) {
      await jobs.transaction(async (tx) => {
        if ("sql" in tx) {
          await tx.sql.unsafe(upsert("SELECT k, 1 FROM unnest($1::text[]) AS k"), [[...keys]]);
        } else {
          const statement = tx.db.prepare(upsert("VALUES (?, 1)"));
          for (const key of keys) statement.run(key);
        }
      });
    },
  };
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}
