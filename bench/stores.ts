/**
 * Where the benchmark's stores live: a fresh SQLite file in a temporary
 * folder, or, with `BENCH_DB=postgres://...`, a fresh schema of that
 * database (`jobs_bench_<random>`), dropped once the phase is done. Every
 * phase, the child processes and the peers' adapter open the location this
 * hands out through the library, like any other store.
 *
 * @module
 */

// Its own bookkeeping connection (drop a schema, read the version), not a store.
import postgres from "npm:postgres@3.4.9";
import { describeLocation, isPostgresLocation } from "../src/store/location.ts";

/** Which store the benchmark runs on. */
export type BenchStoreKind = "sqlite" | "postgres";

/** One fresh store: its location, and a way to remove it. */
export interface FreshStore {
  /** What `openJobs`, `openStore` and the child processes open. */
  location: string;
  /** Removes the file or drops the schema; safe to call after a failure. */
  remove(): Promise<void>;
}

/** `BENCH_DB`: a PostgreSQL URL, or unset for SQLite files. */
export function benchDb(): string | null {
  const raw = Deno.env.get("BENCH_DB")?.trim();
  if (!raw) return null;
  if (!isPostgresLocation(raw)) {
    throw new RangeError(
      `BENCH_DB must be a postgres:// or postgresql:// URL (unset for SQLite files), got "${
        describeLocation(raw)
      }"`,
    );
  }
  return raw;
}

/** The store kind `db` (from {@linkcode benchDb}) selects. */
export function storeKind(db: string | null): BenchStoreKind {
  return db === null ? "sqlite" : "postgres";
}

/** A store no other run uses: a new file, or a new schema of `db`. */
export async function freshStore(db: string | null): Promise<FreshStore> {
  if (db === null) {
    const dir = await Deno.makeTempDir({ prefix: "jobs-bench-" });
    return {
      location: `${dir}/jobs.db`,
      remove: () => Deno.remove(dir, { recursive: true }).catch(() => {}),
    };
  }
  const schema = `jobs_bench_${crypto.randomUUID().replaceAll("-", "").slice(0, 16)}`;
  const url = new URL(db);
  url.searchParams.set("schema", schema);
  return { location: url.toString(), remove: () => dropSchema(db, schema) };
}

/** One connection to the database at `db`, for the benchmark's own bookkeeping. */
function connect(db: string): postgres.Sql {
  const url = new URL(db);
  // postgres.js would send every query parameter as a session setting.
  url.searchParams.delete("schema");
  return postgres(url.toString(), { max: 1, onnotice: () => {} });
}

/** Drops `schema` of the database at `db`, on a connection of its own. */
async function dropSchema(db: string, schema: string): Promise<void> {
  const sql = connect(db);
  try {
    await sql`DROP SCHEMA IF EXISTS ${sql(schema)} CASCADE`;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** The server's version (`15.4`), for the peers' table. */
export async function postgresVersion(db: string): Promise<string> {
  const sql = connect(db);
  try {
    const [row] = await sql`SHOW server_version`;
    return String(row?.server_version ?? "?").split(" ")[0]!;
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** Runs `fn` on a fresh store of `db`, then removes it. */
export async function withFreshStore<T>(
  db: string | null,
  fn: (location: string) => Promise<T>,
): Promise<T> {
  const fresh = await freshStore(db);
  try {
    return await fn(fresh.location);
  } finally {
    await fresh.remove();
  }
}

/**
 * Vacuums and analyzes every table of the PostgreSQL schema `location`
 * names (nothing for a SQLite file), as autovacuum does soon after a bulk
 * load lands: a store copied in a minute is otherwise planned on default
 * estimates, and autovacuum's own pass over the new rows (since
 * PostgreSQL 13 a bulk insert starts one) would otherwise run during the
 * timed part, on the same two cores.
 */
export async function analyzeStore(location: string): Promise<void> {
  if (!isPostgresLocation(location)) return;
  const schema = new URL(location).searchParams.get("schema");
  if (!schema) return;
  const sql = connect(location);
  try {
    const tables = await sql`SELECT tablename FROM pg_tables WHERE schemaname = ${schema}`;
    for (const t of tables) await sql`VACUUM ANALYZE ${sql(`${schema}.${t.tablename}`)}`;
  } finally {
    await sql.end({ timeout: 5 });
  }
}
