/**
 * Copying one store into another (`jobs migrate-store`), SQLite to
 * PostgreSQL and back: every row of the tables that hold the store's
 * history and its plans ({@linkcode TRANSFER_TABLES}), with ids, fences,
 * occurrence identities, unique keys and schedules' recovery points exactly
 * as they were, so that a daemon on the target carries on where the source's
 * stopped. `nodes`, `leaders` and `schema_migrations` are not copied: they
 * belong to the processes and the schema of one store, not to its history;
 * nor are `flow_buckets`, the token buckets of rate limits: a missing bucket
 * is a full one, and each refills within its period.
 *
 * Both sides are read through their adapters' own connections, inside one
 * transaction each: the source's holds still (SQLite: its write lock, so no
 * daemon writes while it is read; PostgreSQL: one REPEATABLE READ snapshot),
 * and the target's takes every row or none (a failure, or a count or
 * checksum that differs after the copy, rolls it back). Rows go in pages of
 * {@linkcode TransferOptions.batchSize}: one statement per page
 * (`jsonb_populate_recordset` on PostgreSQL, `json_each` on SQLite).
 *
 * A table's checksum is the SHA-256 of its rows in key order, each row the
 * canonical JSON of its values: integers as numbers (a PostgreSQL `bigint`
 * arrives as a string), booleans as booleans (SQLite's 0 and 1), JSON columns
 * parsed with their keys sorted (SQLite's text and PostgreSQL's `jsonb`
 * write the same value differently). Both sides compute it the same way, so
 * equal checksums mean equal rows.
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { DatabaseSync, SQLInputValue } from "node:sqlite";
import type postgres from "./postgres/driver.ts";
import type { PostgresStore, PostgresTx } from "./postgres/postgres_store.ts";
import { json, num, type Row } from "./rows.ts";
import { canonicalJson } from "../kernel/unique.ts";
import type { SqliteTx } from "./sqlite/sqlite_store.ts";
import type { Store } from "./store.ts";
import { MOVED_SETTING, type StoreMove } from "./errors.ts";

/** How a column's values are compared and carried between the stores. */
type ColumnKind = "int" | "real" | "text" | "bool" | "json";

/** One table that is copied: its columns, its key, and whether its `id` comes from a sequence. */
interface TableSpec {
  name: TransferTable;
  columns: readonly (readonly [string, ColumnKind])[];
  /** The primary key, in order; integer keys are read in pages, text keys (small tables) whole. */
  key: readonly string[];
  /** Integer key: read in pages by keyset; text key: the table is small and read at once. */
  paged: boolean;
  /** `id` is handed out by the store (AUTOINCREMENT, IDENTITY): the next one must stay above. */
  sequence: boolean;
}

/**
 * The tables copied, in the order they are written. `replays` follows
 * `attempts`: inserting an attempt of kind `replay` fires the trigger that
 * consumes a job's waiting replay, which must not meet the copied one.
 */
export const TRANSFER_TABLES = [
  "jobs",
  "attempts",
  "replays",
  "schedules",
  "queues",
  "queue_limits",
  "settings",
  "audit",
  "workflow_runs",
  "workflow_steps",
  "principals",
  "sessions",
  "bulk_runs",
  "work_items",
  "work_item_events",
  "totp_enrolments",
  "bulk_requests",
] as const;

/** A table {@linkcode storeTransfer} copies. */
export type TransferTable = typeof TRANSFER_TABLES[number];

const int = "int", real = "real", text = "text", bool = "bool", jsonb = "json";

const SPECS: readonly TableSpec[] = [
  {
    name: "jobs",
    columns: [
      ["id", int],
      ["tenant", text],
      ["state", text],
      ["queue", text],
      ["worker", text],
      ["args", text],
      ["meta", text],
      ["tags", text],
      ["errors", jsonb],
      ["schedule_id", text],
      ["scheduled_for", int],
      ["occurrence", text],
      ["unique_key", text],
      ["unique_states", text],
      ["attempt", int],
      ["max_attempts", int],
      ["priority", int],
      ["attempted_by", text],
      ["fence", int],
      ["lease_expires_at", int],
      ["inserted_at", int],
      ["scheduled_at", int],
      ["attempted_at", int],
      ["completed_at", int],
      ["cancelled_at", int],
      ["discarded_at", int],
    ],
    key: ["id"],
    paged: true,
    sequence: true,
  },
  {
    name: "attempts",
    columns: [
      ["job_id", int],
      ["attempt", int],
      ["fence", int],
      ["node", text],
      ["kind", text],
      ["actor", text],
      ["reason", text],
      ["started_at", int],
      ["finished_at", int],
      ["outcome", text],
      ["error", text],
      ["output", text],
      ["definition", text],
    ],
    key: ["job_id", "fence"],
    paged: true,
    sequence: false,
  },
  {
    name: "replays",
    columns: [["job_id", int], ["after", int], ["actor", text], ["reason", text], ["at", int]],
    key: ["job_id"],
    paged: true,
    sequence: false,
  },
  {
    name: "schedules",
    columns: [
      ["id", text],
      ["tenant", text],
      ["enabled", bool],
      ["disabled_reason", text],
      ["disabled_by", text],
      ["disabled_at", int],
      ["definition_hash", text],
      ["last_planned_for", int],
      ["last_started_at", int],
      ["last_completed_at", int],
      ["misfires", int],
      ["last_misfire_for", int],
      ["created_at", int],
      ["updated_at", int],
    ],
    key: ["id"],
    paged: false,
    sequence: false,
  },
  {
    name: "queues",
    columns: [["name", text], ["paused", bool], ["concurrency", int], ["updated_at", int]],
    key: ["name"],
    paged: false,
    sequence: false,
  },
  {
    name: "queue_limits",
    columns: [
      ["name", text],
      ["global_limit", int],
      ["partition_limit", int],
      ["rate_limit", int],
      ["rate_per", int],
      ["rate_burst", int],
      ["updated_at", int],
    ],
    key: ["name"],
    paged: false,
    sequence: false,
  },
  {
    name: "settings",
    columns: [["key", text], ["value", text], ["updated_at", int]],
    key: ["key"],
    paged: false,
    sequence: false,
  },
  {
    name: "audit",
    columns: [
      ["id", int],
      ["at", int],
      ["actor", text],
      ["action", text],
      ["target", text],
      ["reason", text],
      ["details", text],
    ],
    key: ["id"],
    paged: true,
    sequence: true,
  },
  {
    name: "workflow_runs",
    columns: [
      ["id", int],
      ["workflow", text],
      ["hash", text],
      ["definition", text],
      ["state", text],
      ["input", text],
      ["tenant", text],
      ["key", text],
      ["error", text],
      ["cancel_reason", text],
      ["started_at", int],
      ["finished_at", int],
      ["updated_at", int],
    ],
    key: ["id"],
    paged: true,
    sequence: true,
  },
  {
    name: "workflow_steps",
    columns: [
      ["run_id", int],
      ["kind", text],
      ["step", text],
      ["item", int],
      ["job_id", int],
      ["state", text],
      ["result", text],
      ["cursor", text],
      ["seq", int],
      ["error", text],
      ["items", int],
      ["remaining", int],
      ["created_at", int],
      ["finished_at", int],
    ],
    // A key of numbers and texts: read whole, in key order.
    key: ["run_id", "kind", "step", "item"],
    paged: false,
    sequence: false,
  },
  {
    // People and tokens with their secrets' hashes: the copy signs in as the source did.
    name: "principals",
    columns: [
      ["kind", text],
      ["name", text],
      ["display_name", text],
      ["roles", jsonb],
      ["tenant", text],
      ["secret_hash", text],
      ["disabled", bool],
      ["expires_at", int],
      ["created_by", text],
      ["created_at", int],
      ["updated_at", int],
      ["last_used_at", int],
    ],
    key: ["kind", "name"],
    paged: false,
    sequence: false,
  },
  {
    // The console's sessions (by the hash of their ids): a person stays signed in on the copy.
    name: "sessions",
    columns: [
      ["id_hash", text],
      ["person", text],
      ["created_at", int],
      ["last_seen_at", int],
      ["expires_at", int],
      ["address", text],
      ["user_agent", text],
    ],
    key: ["id_hash"],
    paged: false,
    sequence: false,
  },
  {
    // Bulk runs with their snapshots: a running one goes on from `done` on the copy.
    name: "bulk_runs",
    columns: [
      ["id", int],
      ["action", text],
      ["filter", text],
      ["ids", text],
      ["total", int],
      ["done", int],
      ["changed", int],
      ["skipped", int],
      ["state", text],
      ["actor", text],
      ["reason", text],
      ["tenant", text],
      ["created_at", int],
      ["finished_at", int],
      ["abort_requested", bool],
    ],
    key: ["id"],
    paged: true,
    sequence: true,
  },
  {
    // Work items with their claims and fences: a claim held on the source holds on the copy.
    name: "work_items",
    columns: [
      ["id", int],
      ["queue", text],
      ["key", text],
      ["tenant", text],
      ["data", jsonb],
      ["score", real],
      ["score_rate", real],
      ["score_rank", real],
      ["inputs", jsonb],
      ["rule_version", text],
      ["requested_at", int],
      ["updated_at", int],
      ["state", text],
      ["claim_owner", text],
      ["claim_expires_at", int],
      ["claim_fence", int],
      ["skipped_by", text],
      ["skipped_until", int],
      ["outcome", text],
      ["action_job_id", int],
      ["done_by", text],
      ["done_at", int],
      ["done_reason", text],
    ],
    key: ["id"],
    paged: true,
    sequence: true,
  },
  {
    // Each item's history.
    name: "work_item_events",
    columns: [
      ["id", int],
      ["item_id", int],
      ["at", int],
      ["actor", text],
      ["kind", text],
      ["reason", text],
      ["fence", int],
      ["detail", jsonb],
    ],
    key: ["id"],
    paged: true,
    sequence: true,
  },
  {
    // People's TOTP seeds: an enrolled approver's authenticator keeps working on the copy.
    name: "totp_enrolments",
    columns: [
      ["person", text],
      ["secret", text],
      ["last_step", int],
      ["enrolled_by", text],
      ["enrolled_at", int],
    ],
    key: ["person"],
    paged: false,
    sequence: false,
  },
  {
    // Confirmation requests with their codes' hashes: a pending code still confirms on the copy.
    name: "bulk_requests",
    columns: [
      ["id", int],
      ["manifest", text],
      ["queue", text],
      ["bulk", text],
      ["tenant", text],
      ["items", text],
      ["totals", text],
      ["requester", text],
      ["channel", text],
      ["approver_role", text],
      ["second_person", bool],
      ["code_hash", text],
      ["created_at", int],
      ["expires_at", int],
      ["tries", int],
      ["state", text],
      ["ended_reason", text],
      ["ended_at", int],
      ["confirmer", text],
      ["confirmed_at", int],
      ["totp_step", int],
    ],
    key: ["id"],
    paged: true,
    sequence: true,
  },
];

/** Options of {@linkcode storeTransfer}. */
export interface TransferOptions {
  /** The instant the source's nodes' heartbeats are compared with (the caller's clock). */
  now: number;
  /** Count what would be copied and check the refusals; write nothing. @default false */
  dryRun?: boolean;
  /** Rows per statement. @default 500 */
  batchSize?: number;
  /** A source node that beat within this many ms is a running daemon: refused. @default 60000 */
  liveWithinMs?: number;
  /**
   * Retire the source once the copy is verified: its `store.moved` setting
   * names the target (`to`, credentials removed) and an audit row
   * (`store.moved`, by `actor`) says who moved it, both written in the
   * source's transaction, which commits right after the target's. Ignored
   * on a dry run.
   */
  retire?: { to: string; actor: string; reason?: string | null };
}

/** One table of a {@linkcode TransferReport}. */
export interface TableTransfer {
  table: TransferTable;
  /** Rows in the source. */
  rows: number;
  /** The source's checksum (hex SHA-256); null on a dry run, which only counts. */
  checksum: string | null;
  /** Rows in the target after the copy; null on a dry run. */
  targetRows: number | null;
  /** The target's checksum after the copy; null on a dry run. */
  targetChecksum: string | null;
}

/** What {@linkcode storeTransfer} copied (or, on a dry run, would copy). */
export interface TransferReport {
  dryRun: boolean;
  tables: TableTransfer[];
  /**
   * The ids the target hands out next, above every id the source ever
   * handed out (pruned rows included); null on a dry run.
   */
  nextIds: { jobs: number; audit: number } | null;
}

/** Why {@linkcode storeTransfer} refused, before anything was written. */
export class TransferRefusedError extends Error {
  constructor(
    message: string,
    /** `live-nodes`: daemons still run on the source; `target-not-empty`: the target holds rows. */
    readonly reason: "live-nodes" | "target-not-empty",
  ) {
    super(message);
    this.name = "TransferRefusedError";
  }
}

/**
 * The copy is complete and verified (the target committed) but the source
 * could not be marked as moved: it is still live, and a daemon started on it
 * would run what the target's daemons run.
 */
export class TransferRetireError extends Error {
  constructor(message: string, readonly report: TransferReport, options?: ErrorOptions) {
    super(message, options);
    this.name = "TransferRetireError";
  }
}

/** The copy's counts or checksums differ from the source's: the target's transaction was rolled back. */
export class TransferMismatchError extends Error {
  constructor(message: string, readonly tables: TableTransfer[]) {
    super(message);
    this.name = "TransferMismatchError";
  }
}

/**
 * Copies every row of {@linkcode TRANSFER_TABLES} from `from` into `to`
 * (opened and migrated to the current schema by the caller) and raises the
 * target's id sequences past every id the source handed out. Refused, with a
 * {@linkcode TransferRefusedError} and nothing written, when a source node
 * beat within `liveWithinMs` of `now` or when any copied table of the target
 * holds a row. The target's counts and checksums are compared with the
 * source's before its transaction commits: a difference is a
 * {@linkcode TransferMismatchError} and the target stays empty.
 *
 * On a dry run, `to` may be null (there is no target at the current schema
 * yet); nothing is written to either store.
 */
export async function storeTransfer(
  from: Store,
  to: Store | null,
  options: TransferOptions,
): Promise<TransferReport> {
  const batch = options.batchSize ?? 500;
  const liveWithin = options.liveWithinMs ?? 60_000;
  const retire = options.dryRun ? undefined : options.retire;
  let copied: TransferReport | null = null;
  try {
    return await withSide(from, retire ? "retiring" : "source", async (source) => {
      await refuseLiveNodes(source, from.location, options.now, liveWithin);
      if (options.dryRun) {
        if (to) await withSide(to, "reader", (target) => refuseNonEmpty(target, to.location));
        const tables = [];
        for (const spec of SPECS) {
          tables.push({
            table: spec.name,
            rows: await source.count(spec),
            checksum: null,
            targetRows: null,
            targetChecksum: null,
          });
        }
        return { dryRun: true, tables, nextIds: null };
      }
      if (!to) throw new TypeError("storeTransfer: a copy needs a target store");
      const report = await withSide(to, "target", async (target) => {
        await refuseNonEmpty(target, to.location);
        const tables: TableTransfer[] = [];
        for (const spec of SPECS) {
          const copied = await scan(source, spec, batch, (rows) => target.insert(spec, rows));
          const found = await scan(target, spec, batch);
          tables.push({
            table: spec.name,
            rows: copied.rows,
            checksum: copied.checksum,
            targetRows: found.rows,
            targetChecksum: found.checksum,
          });
        }
        const differ = tables.filter((t) =>
          t.rows !== t.targetRows || t.checksum !== t.targetChecksum
        );
        if (differ.length > 0) {
          throw new TransferMismatchError(
            `the copy in "${to.location}" differs from "${from.location}" in ${
              differ.map((t) =>
                `${t.table} (${t.rows} rows, ${t.targetRows} copied` +
                `${t.checksum === t.targetChecksum ? "" : ", checksums differ"})`
              ).join(", ")
            }; nothing was written`,
            tables,
          );
        }
        // The counts of jobs per queue and state are the target's own, kept by
        // its writes (src/store/job_counts.ts): the copy wrote rows by hand.
        await target.recount();
        // Last: PostgreSQL's setval is not undone by a rollback.
        const next = { jobs: 0, audit: 0 };
        for (const spec of SPECS.filter((s) => s.sequence)) {
          const highest = await source.highestId(spec);
          await target.raiseSequence(spec, highest);
          next[spec.name as "jobs" | "audit"] = (await target.highestId(spec)) + 1;
        }
        return { dryRun: false, tables, nextIds: next };
      });
      // The target committed: the source, still held still, is marked before
      // its transaction ends, so no daemon wrote to it between the two.
      copied = report;
      if (retire) {
        await source.retire({
          move: { to: retire.to, at: options.now, actor: retire.actor },
          reason: retire.reason ?? null,
        });
      }
      return report;
    });
  } catch (error) {
    if (copied === null) throw error;
    const why = error instanceof Error ? error.message.split("\n")[0] : String(error);
    throw new TransferRetireError(
      `the copy in "${to!.location}" is complete and verified, but marking "${from.location}" ` +
        `as moved failed (${why}): it is still live; stop every daemon on it`,
      copied,
      { cause: error },
    );
  }
}

/**
 * The row count and checksum of every table of {@linkcode TRANSFER_TABLES}
 * in `store`, computed as {@linkcode storeTransfer} computes them, read in
 * one transaction.
 */
export async function storeChecksums(
  store: Store,
  options: { batchSize?: number } = {},
): Promise<{ table: TransferTable; rows: number; checksum: string }[]> {
  return await withSide(store, "reader", async (side) => {
    const out = [];
    for (const spec of SPECS) {
      out.push({ table: spec.name, ...await scan(side, spec, options.batchSize ?? 500) });
    }
    return out;
  });
}

// ------------------------------------------------------------------- checks

async function refuseLiveNodes(
  source: Side,
  location: string,
  now: number,
  liveWithin: number,
): Promise<void> {
  const live = await source.liveNodes(now - liveWithin);
  if (live.length === 0) return;
  const ages = live.map((n) => `${n.node} (beat ${seconds(now - n.heartbeatAt)} ago)`);
  throw new TransferRefusedError(
    `the source store "${location}" has nodes that beat within the last ` +
      `${seconds(liveWithin)}: ${ages.join(", ")}; stop their daemons first ` +
      `(a daemon that stops removes its node; a killed one's stops counting ` +
      `${seconds(liveWithin)} after its last beat)`,
    "live-nodes",
  );
}

async function refuseNonEmpty(target: Side, location: string): Promise<void> {
  const held = [];
  for (const spec of SPECS) {
    const n = await target.count(spec);
    if (n > 0) held.push(`${spec.name}: ${n}`);
  }
  if (held.length === 0) return;
  throw new TransferRefusedError(
    `the target store "${location}" already holds rows (${held.join(", ")}); ` +
      `migrate-store copies into an empty store only: name a new database or ?schema=`,
    "target-not-empty",
  );
}

/** `4s`, `1m 05s`: an age for a message (a heartbeat ahead of the clock counts as now). */
function seconds(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, "0")}s`;
}

// ---------------------------------------------------------- rows and checksums

/** A row's values in column order, each in the one form both stores compare by. */
type Canonical = unknown[];

function canonical(spec: TableSpec, row: Row): Canonical {
  return spec.columns.map(([column, kind]) => {
    const value = row[column];
    if (value == null) return null;
    switch (kind) {
      case "int":
        return num(value);
      case "real":
        return Number(value);
      case "text":
        return String(value);
      case "bool":
        return value === true || value === 1 || value === 1n;
      case "json":
        return json(value);
    }
  });
}

/**
 * Reads every row of `spec` from `side` in key order, hashing each and
 * handing each page (as objects by column name) to `each`.
 */
async function scan(
  side: Side,
  spec: TableSpec,
  batch: number,
  each?: (rows: Record<string, unknown>[]) => Promise<void>,
): Promise<{ rows: number; checksum: string }> {
  const hash = createHash("sha256");
  const keyAt = spec.key.map((k) => spec.columns.findIndex(([c]) => c === k));
  let rows = 0;
  let after: unknown[] | null = null;
  for (;;) {
    const page: Canonical[] = (await side.page(spec, after, batch)).map((row) =>
      canonical(spec, row)
    );
    for (const row of page) hash.update(`${canonicalJson(row)}\n`);
    rows += page.length;
    if (each && page.length > 0) {
      await each(page.map((row) => Object.fromEntries(spec.columns.map(([c], i) => [c, row[i]]))));
    }
    if (!spec.paged || page.length < batch) break;
    const last: Canonical = page.at(-1)!;
    after = keyAt.map((i) => last[i]);
  }
  return { rows, checksum: hash.digest("hex") };
}

// -------------------------------------------------------------------- sides

/** What the copy does with one store, inside its transaction. */
interface Side {
  /** Up to `limit` rows after the key `after`, in key order (a table not `paged`: all of it). */
  page(spec: TableSpec, after: unknown[] | null, limit: number): Promise<Row[]>;
  count(spec: TableSpec): Promise<number>;
  /** Inserts rows given by column name, in canonical form, in one statement. */
  insert(spec: TableSpec, rows: Record<string, unknown>[]): Promise<void>;
  /** Nodes whose heartbeat is after `since`. */
  liveNodes(since: number): Promise<{ node: string; heartbeatAt: number }[]>;
  /** The highest id the table's sequence handed out (or holds), 0 when none. */
  highestId(spec: TableSpec): Promise<number>;
  /** Makes the next id handed out greater than `id`. */
  raiseSequence(spec: TableSpec, id: number): Promise<void>;
  /** Counts the jobs per queue and state anew (job_counts), from the jobs table. */
  recount(): Promise<void>;
  /** Marks the store as moved (`store.moved`) and audits it (`store.moved`). */
  retire(params: { move: StoreMove; reason: string | null }): Promise<void>;
}

/**
 * Runs `fn` on `store` inside one transaction of its own kind: a `source`
 * or a `reader` sees one unchanging state (a `retiring` source too, and may
 * write its mark), a `target` shuts out other
 * writers of the copied tables until it commits.
 */
async function withSide<T>(
  store: Store,
  role: "source" | "retiring" | "reader" | "target",
  fn: (side: Side) => Promise<T>,
): Promise<T> {
  if (store.kind === "sqlite") {
    // BEGIN IMMEDIATE: a source no daemon can write to while it is read.
    return await store.transaction((tx) => fn(sqliteSide((tx as SqliteTx).db)));
  }
  if (store.kind === "postgres") {
    const schema = (store as PostgresStore).schema;
    return await store.transaction(async (tx) => {
      const sql = (tx as PostgresTx).sql;
      if (role === "target") {
        await sql`LOCK TABLE ${sql([...TRANSFER_TABLES])} IN SHARE ROW EXCLUSIVE MODE`;
      } else if (role === "retiring") {
        // One snapshot still, and the two rows that retire it at the end.
        await sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`;
      } else await sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`;
      return await fn(postgresSide(sql, schema));
    });
  }
  throw new TypeError(`migrate-store knows no store of kind "${store.kind}"`);
}

/** A double-quoted SQLite identifier (the names are this module's own constants). */
function quoted(name: string): string {
  return `"${name}"`;
}

function sqliteSide(db: DatabaseSync): Side {
  const columns = (spec: TableSpec) => spec.columns.map(([c]) => quoted(c)).join(", ");
  const order = (spec: TableSpec) => spec.key.map(quoted).join(", ");
  return {
    page: (spec, after, limit) => {
      const from = `SELECT ${columns(spec)} FROM ${quoted(spec.name)}`;
      if (!spec.paged) {
        return Promise.resolve(db.prepare(`${from} ORDER BY ${order(spec)}`).all() as Row[]);
      }
      const where = after === null
        ? ""
        : ` WHERE (${order(spec)}) > (${spec.key.map(() => "?").join(", ")})`;
      const statement = db.prepare(`${from}${where} ORDER BY ${order(spec)} LIMIT ?`);
      const values = [...(after ?? []), limit] as SQLInputValue[];
      return Promise.resolve(statement.all(...values) as Row[]);
    },
    count: (spec) => {
      const row = db.prepare(`SELECT count(*) AS n FROM ${quoted(spec.name)}`).get() as Row;
      return Promise.resolve(Number(row.n));
    },
    insert: (spec, rows) => {
      // `->` keeps a JSON column's value as JSON text; `->>` gives the SQL
      // value of the others (a boolean as 1 or 0).
      const values = spec.columns
        .map(([c, kind]) => `value ${kind === "json" ? "->" : "->>"} '$.${c}'`)
        .join(", ");
      db.prepare(
        `INSERT INTO ${quoted(spec.name)} (${columns(spec)}) SELECT ${values} FROM json_each(?)`,
      ).run(JSON.stringify(rows));
      return Promise.resolve();
    },
    liveNodes: (since) => {
      const rows = db.prepare(
        `SELECT node, heartbeat_at FROM nodes WHERE heartbeat_at > ? ORDER BY node`,
      ).all(since) as Row[];
      return Promise.resolve(
        rows.map((r) => ({ node: String(r.node), heartbeatAt: Number(r.heartbeat_at) })),
      );
    },
    highestId: (spec) => {
      const row = db.prepare(
        `SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = ?), 0),
          coalesce((SELECT max(id) FROM ${quoted(spec.name)}), 0)) AS n`,
      ).get(spec.name) as Row;
      return Promise.resolve(Number(row.n));
    },
    raiseSequence: (spec, id) => {
      // Inserting ids already raised sqlite_sequence to the highest copied;
      // this keeps the ids of rows pruned on the source unused as well.
      const { changes } = db.prepare(
        `UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = ?`,
      ).run(id, spec.name);
      if (Number(changes) === 0 && id > 0) {
        db.prepare(`INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)`).run(spec.name, id);
      }
      return Promise.resolve();
    },
    recount: () => {
      // Every job counted in job_counts: the watermark at the newest (counts.ts).
      db.exec(`DELETE FROM job_counts;
        INSERT INTO job_counts (queue, state, count)
          SELECT queue, state, count(*) FROM jobs GROUP BY queue, state;
        UPDATE job_counts_through SET through = (SELECT coalesce(max(id), 0) FROM jobs)`);
      return Promise.resolve();
    },
    retire: ({ move, reason }) => {
      db.prepare(`INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
        ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`)
        .run(MOVED_SETTING, JSON.stringify(move), move.at);
      db.prepare(`INSERT INTO audit (at, actor, action, target, reason, details)
        VALUES (?, ?, 'store.moved', 'store', ?, ?)`)
        .run(move.at, move.actor, reason, JSON.stringify({ movedTo: move.to }));
      return Promise.resolve();
    },
  };
}

function postgresSide(sql: postgres.TransactionSql, schema: string): Side {
  const cols = (spec: TableSpec) => sql(spec.columns.map(([c]) => c));
  const table = (spec: TableSpec) => sql(spec.name);
  /** The name pg_get_serial_sequence resolves, in the store's schema (a checked lowercase name). */
  const qualified = (spec: TableSpec) => `${schema}.${spec.name}`;
  return {
    page: async (spec, after, limit) => {
      if (!spec.paged) {
        // Texts in byte order, as SQLite's BINARY, whatever the database's collation.
        const kinds = new Map(spec.columns);
        const order = spec.key
          .map((k) => kinds.get(k) === "text" ? sql`${sql(k)} COLLATE "C"` : sql`${sql(k)}`)
          .reduce((list, k) => sql`${list}, ${k}`);
        return await sql`SELECT ${cols(spec)} FROM ${table(spec)} ORDER BY ${order}`;
      }
      const key = sql([...spec.key]);
      if (after === null) {
        return await sql`SELECT ${cols(spec)} FROM ${table(spec)} ORDER BY ${key} LIMIT ${limit}`;
      }
      const bound = after.map((v) => sql`${v as number}::bigint`)
        .reduce((list, v) => sql`${list}, ${v}`);
      return await sql`SELECT ${cols(spec)} FROM ${table(spec)}
        WHERE (${key}) > (${bound}) ORDER BY ${key} LIMIT ${limit}`;
    },
    count: async (spec) => {
      const [row] = await sql`SELECT count(*) AS n FROM ${table(spec)}`;
      return Number(row!.n);
    },
    insert: async (spec, rows) => {
      // The table's own row type: each JSON value becomes its column's type.
      await sql`INSERT INTO ${table(spec)} (${cols(spec)})
        SELECT ${cols(spec)}
        FROM jsonb_populate_recordset(NULL::${table(spec)}, ${JSON.stringify(rows)}::text::jsonb)`;
    },
    liveNodes: async (since) => {
      const rows = await sql`SELECT node, heartbeat_at FROM nodes
        WHERE heartbeat_at > ${since}::bigint ORDER BY node`;
      return rows.map((r) => ({ node: String(r.node), heartbeatAt: Number(r.heartbeat_at) }));
    },
    highestId: async (spec) => {
      const [row] = await sql`SELECT greatest(
          coalesce(pg_sequence_last_value(pg_get_serial_sequence(${
        qualified(spec)
      }, 'id')::regclass), 0),
          coalesce((SELECT max(id) FROM ${table(spec)}), 0)) AS n`;
      return Number(row!.n);
    },
    raiseSequence: async (spec, id) => {
      if (id < 1) return;
      await sql`SELECT setval(pg_get_serial_sequence(${qualified(spec)}, 'id'),
        greatest(${id}::bigint,
          coalesce(pg_sequence_last_value(pg_get_serial_sequence(${
        qualified(spec)
      }, 'id')::regclass), 0)))`;
    },
    recount: async () => {
      await sql`DELETE FROM job_count_deltas`;
      await sql`DELETE FROM job_counts`;
      await sql`INSERT INTO job_counts (queue, state, count)
        SELECT queue, state, count(*) FROM jobs GROUP BY queue, state`;
    },
    retire: async ({ move, reason }) => {
      await sql`INSERT INTO settings (key, value, updated_at)
        VALUES (${MOVED_SETTING}, ${JSON.stringify(move)}, ${move.at}::bigint)
        ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`;
      await sql`INSERT INTO audit (at, actor, action, target, reason, details)
        VALUES (${move.at}::bigint, ${move.actor}, 'store.moved', 'store', ${reason}::text,
          ${JSON.stringify({ movedTo: move.to })})`;
    },
  };
}
