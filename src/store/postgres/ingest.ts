/**
 * The PostgreSQL side of ingest runs ({@linkcode StoreIngest}): the
 * statements behind the store's `ingest*` methods, each run on the pool, or
 * on the open transaction of a transaction's view. A run's writes are
 * fenced by its job: a chunk's transaction first locks the job row while it
 * is `executing` with the attempt's fence (`FOR UPDATE`, so a rescue or a
 * cancel cannot slip in between) and writes nothing when it is not.
 *
 * @module
 */

import type { IngestDrop, IngestRun, PipelineSummary } from "../ingest_types.ts";
import {
  failureCounts,
  storedChunk,
  storedText,
  toIngestDrop,
  toIngestRun,
  toSummaries,
} from "../ingest_rows.ts";
import type {
  IngestChunkCommitParams,
  IngestDropFilter,
  IngestDropsPruneParams,
  IngestDropWithRecord,
  IngestRunFilter,
  IngestRunFinishParams,
  IngestRunOpenParams,
  StoreIngest,
} from "../store.ts";
import type { PostgresCore } from "./core.ts";
import type { Fragment, Sql } from "./fragments.ts";

type Row = Record<string, unknown>;

function runColumns(q: Sql) {
  return q`r.*, j.state AS job_state, j.errors -> -1 ->> 'error' AS job_error`;
}

/** A drop (`d`) of `tenant`'s runs, or any drop without a tenant (installation-wide). */
function tenantRuns(q: Sql, tenant: string | undefined): Fragment {
  return tenant === undefined
    ? q`true`
    : q`d.run_id IN (SELECT id FROM ingest_runs WHERE tenant = ${tenant})`;
}

async function held(q: Sql, jobId: number, fence: number): Promise<boolean> {
  const rows = await q`SELECT 1 FROM jobs WHERE id = ${jobId}::bigint AND state = 'executing'
    AND fence = ${fence}::bigint FOR UPDATE`;
  return rows.length > 0;
}

async function byJob(q: Sql, jobId: number): Promise<Row | undefined> {
  const [row] = await q`SELECT ${runColumns(q)} FROM ingest_runs AS r
    LEFT JOIN jobs AS j ON j.id = r.job_id WHERE r.job_id = ${jobId}::bigint`;
  return row;
}

/**
 * The {@linkcode StoreIngest} methods of the PostgreSQL store, over `core`
 * (ingest runs, their drops and failures), each with its transaction policy:
 * its own transaction where it needs one (`core.begin` joins a transaction's
 * view).
 */
export function postgresIngest(core: PostgresCore): StoreIngest {
  return core.guard({
    async ingestRunOpen(params: IngestRunOpenParams): Promise<IngestRun | null> {
      return await core.begin(async (q) => {
        if (!await held(q, params.jobId, params.fence)) return null;
        const existing = await byJob(q, params.jobId);
        if (existing) {
          await q`UPDATE ingest_runs SET updated_at = ${params.now}::bigint
            WHERE job_id = ${params.jobId}::bigint`;
          return toIngestRun({ ...existing, updated_at: params.now });
        }
        // The run's tenant is its job's: the principal's that started it.
        await q`INSERT INTO ingest_runs (pipeline, hash, state, job_id, trigger, started_at,
            updated_at, tenant)
          VALUES (${params.pipeline}, ${params.hash}, 'running', ${params.jobId}::bigint,
            ${params.trigger}, ${params.now}::bigint, ${params.now}::bigint,
            (SELECT tenant FROM jobs WHERE id = ${params.jobId}::bigint))`;
        return toIngestRun((await byJob(q, params.jobId))!);
      });
    },

    async ingestFailuresGet(
      params: { pipeline: string; records: string[] },
    ): Promise<Map<string, number>> {
      const q = core.tx ?? core.sql;
      if (params.records.length === 0) return new Map();
      const stored = params.records.map((r) => storedText(r));
      const rows = await q`SELECT record, failures FROM ingest_failures
        WHERE pipeline = ${params.pipeline} AND record = ANY(${stored}::text[])`;
      return failureCounts(params.records, rows);
    },

    async ingestChunkCommit(chunk: IngestChunkCommitParams): Promise<boolean> {
      return await core.begin(async (q) => {
        const params = storedChunk(chunk);
        const { lease, pipeline, delta, now } = params;
        if (!await held(q, lease.jobId, lease.fence)) return false;
        const dropped = JSON.stringify(delta.dropped);
        const updated =
          await q`UPDATE ingest_runs SET received = received + ${delta.received}::bigint,
            kept = kept + ${delta.kept}::bigint, sunk = sunk + ${delta.sunk}::bigint,
            failed = failed + ${delta.failed}::bigint, pending = ${params.pending}::bigint,
            cursor = ${params.cursor},
            dropped = (SELECT coalesce(jsonb_object_agg(reason, total), '{}'::jsonb) FROM (
              SELECT reason, sum(n) AS total FROM (
                SELECT key AS reason, value::bigint AS n FROM jsonb_each_text(ingest_runs.dropped)
                UNION ALL
                SELECT key, value::bigint FROM jsonb_each_text(${dropped}::text::jsonb)
              ) AS both_ GROUP BY reason) AS merged),
            updated_at = ${now}::bigint
          WHERE id = ${lease.runId}::bigint AND job_id = ${lease.jobId}::bigint`;
        if (updated.count === 0) return false;
        if (params.drops.length > 0) {
          const d = params.drops;
          await q`INSERT INTO ingest_drops (pipeline, run_id, record_key, reason, step, at, excerpt, record)
            SELECT ${pipeline}, ${lease.runId}::bigint, k, r, s, ${now}::bigint, e, t
            FROM unnest(${d.map((x) => x.recordKey)}::text[], ${d.map((x) => x.reason)}::text[],
              ${d.map((x) => x.step)}::text[], ${d.map((x) => x.excerpt)}::text[],
              ${d.map((x) => x.record)}::text[]) AS v(k, r, s, e, t)`;
        }
        if (params.failures.length > 0) {
          // One row per record: the same record twice in one chunk counts once.
          const f = [...new Map(params.failures.map((x) => [x.record, x])).values()];
          await q`INSERT INTO ingest_failures (pipeline, record, failures, error, excerpt, updated_at)
            SELECT ${pipeline}, r, 1, e, x, ${now}::bigint
            FROM unnest(${f.map((x) => x.record)}::text[], ${f.map((x) => x.error)}::text[],
              ${f.map((x) => x.excerpt)}::text[]) AS v(r, e, x)
            ON CONFLICT (pipeline, record) DO UPDATE SET failures = ingest_failures.failures + 1,
              error = excluded.error, excerpt = excluded.excerpt, updated_at = excluded.updated_at`;
        }
        if (params.cleared.length > 0) {
          await q`DELETE FROM ingest_failures WHERE pipeline = ${pipeline}
            AND record = ANY(${params.cleared}::text[])`;
        }
        return true;
      });
    },

    async ingestRunFinish(params: IngestRunFinishParams): Promise<boolean> {
      return await core.begin(async (q) => {
        const { lease } = params;
        if (!await held(q, lease.jobId, lease.fence)) return false;
        const result = await q`UPDATE ingest_runs SET state = ${params.state},
            error = ${storedText(params.error)},
            pending = ${params.pending}::bigint, finished_at = ${params.now}::bigint,
            updated_at = ${params.now}::bigint
          WHERE id = ${lease.runId}::bigint AND job_id = ${lease.jobId}::bigint`;
        return result.count !== 0;
      });
    },

    async ingestRunGet({ id }: { id: number }): Promise<IngestRun | null> {
      const q = core.tx ?? core.sql;
      const [row] = await q`SELECT ${runColumns(q)} FROM ingest_runs AS r
        LEFT JOIN jobs AS j ON j.id = r.job_id WHERE r.id = ${id}::bigint`;
      return row ? toIngestRun(row) : null;
    },

    async ingestRunByJob({ jobId }: { jobId: number }): Promise<IngestRun | null> {
      const q = core.tx ?? core.sql;
      const row = await byJob(q, jobId);
      return row ? toIngestRun(row) : null;
    },

    async ingestRunsList(filter: IngestRunFilter): Promise<IngestRun[]> {
      const q = core.tx ?? core.sql;
      const limit = filter.limit ?? 50;
      const out: IngestRun[] = [];
      let before: number | null = filter.before ?? null;
      // A state filter applies to the derived state: read pages until enough match.
      for (;;) {
        const rows = await q`SELECT ${runColumns(q)} FROM ingest_runs AS r
          LEFT JOIN jobs AS j ON j.id = r.job_id
          WHERE (${filter.pipeline ?? null}::text IS NULL OR r.pipeline = ${
          filter.pipeline ?? null
        })
            AND (${before}::bigint IS NULL OR r.id < ${before}::bigint)
            AND (${filter.tenant ?? null}::text IS NULL OR r.tenant = ${filter.tenant ?? null})
          ORDER BY r.id DESC LIMIT ${filter.state ? Math.max(limit, 200) : limit}`;
        for (const row of rows) {
          const run = toIngestRun(row);
          if (!filter.state || run.state === filter.state) out.push(run);
          if (out.length === limit) return out;
        }
        if (!filter.state || rows.length === 0) return out;
        before = Number(rows.at(-1)!.id);
      }
    },

    async ingestSummaries(
      { since, tenant }: { since: number; tenant?: string },
    ): Promise<PipelineSummary[]> {
      const q = core.tx ?? core.sql;
      const heads = await q`SELECT pipeline, count(*) AS runs, max(id) AS last_id,
          max(CASE WHEN state = 'completed' THEN finished_at END) AS last_completed_at
        FROM ingest_runs WHERE (${tenant ?? null}::text IS NULL OR tenant = ${tenant ?? null})
        GROUP BY pipeline`;
      const ids = heads.map((h) => Number(h.last_id));
      const rows = await q`SELECT ${runColumns(q)} FROM ingest_runs AS r
        LEFT JOIN jobs AS j ON j.id = r.job_id WHERE r.id = ANY(${ids}::bigint[])`;
      const runs = new Map(rows.map((r) => {
        const run = toIngestRun(r);
        return [run.id, run] as const;
      }));
      const pipelines = heads.map((h) => h.pipeline as string);
      const drops = await q`SELECT d.pipeline, d.reason, count(*) AS count
        FROM unnest(${pipelines}::text[]) AS p(name)
          JOIN ingest_drops AS d ON d.pipeline = p.name AND d.at >= ${since}::bigint
        WHERE ${tenantRuns(q, tenant)}
        GROUP BY d.pipeline, d.reason`;
      return toSummaries(heads, runs, drops);
    },

    async ingestDropsList(filter: IngestDropFilter): Promise<IngestDrop[]> {
      const q = core.tx ?? core.sql;
      const rows = await q`SELECT d.*, d.record IS NOT NULL AS replayable FROM ingest_drops AS d
        WHERE (${filter.pipeline ?? null}::text IS NULL OR d.pipeline = ${filter.pipeline ?? null})
          AND (${filter.reason ?? null}::text IS NULL OR d.reason = ${filter.reason ?? null})
          AND (${filter.runId ?? null}::bigint IS NULL OR d.run_id = ${
        filter.runId ?? null
      }::bigint)
          AND (${filter.before ?? null}::bigint IS NULL OR d.id < ${filter.before ?? null}::bigint)
          AND ${tenantRuns(q, filter.tenant)}
        ORDER BY d.id DESC LIMIT ${filter.limit ?? 50}`;
      return rows.map(toIngestDrop);
    },

    async ingestDropGet(
      { id, tenant }: { id: number; tenant?: string },
    ): Promise<IngestDropWithRecord | null> {
      const q = core.tx ?? core.sql;
      const [row] = await q`SELECT d.*, d.record IS NOT NULL AS replayable FROM ingest_drops AS d
        WHERE d.id = ${id}::bigint AND ${tenantRuns(q, tenant)}`;
      return row ? { ...toIngestDrop(row), record: (row.record as string | null) ?? null } : null;
    },

    async ingestDropReplayed(params: { id: number; jobId: number; now: number }): Promise<boolean> {
      const q = core.tx ?? core.sql;
      const result = await q`UPDATE ingest_drops SET replayed_at = ${params.now}::bigint,
        replayed_job = ${params.jobId}::bigint WHERE id = ${params.id}::bigint`;
      return result.count !== 0;
    },

    async ingestDropsPrune(params: IngestDropsPruneParams): Promise<number> {
      const q = core.tx ?? core.sql;
      const result = await q`DELETE FROM ingest_drops WHERE id IN (
        SELECT d.id FROM ingest_drops AS d
          LEFT JOIN unnest(${params.before.map((b) => b.pipeline)}::text[],
            ${params.before.map((b) => b.before)}::bigint[]) AS b(pipeline, before_)
            ON b.pipeline = d.pipeline
        WHERE d.at < coalesce(b.before_, ${params.otherwise}::bigint) LIMIT ${params.limit})`;
      return result.count;
    },
  });
}
