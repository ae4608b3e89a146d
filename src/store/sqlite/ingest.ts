/**
 * The SQLite side of ingest runs ({@linkcode StoreIngest}): the statements
 * behind the store's `ingest*` methods and those methods, each run
 * synchronously inside the store's transactions; no op of the shared
 * lifecycle is answered here. The statements are prepared at their first
 * use (see `SqliteCore.onDemand`).
 *
 * Every write of a run is fenced by its job: it happens only while the job
 * is `executing` with the attempt's fence, checked by the same statement
 * that writes (or, for a chunk, by the first statement of its transaction,
 * which then writes nothing else when the lease is gone).
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
import type { SqliteCore } from "./core.ts";

type Row = Record<string, unknown>;

const LEASE =
  `EXISTS (SELECT 1 FROM jobs WHERE id = :job AND state = 'executing' AND fence = :fence)`;

/** A drop of `:tenant`'s runs, or any drop when `:tenant` is null (installation-wide). */
const TENANT_RUNS =
  `(:tenant IS NULL OR run_id IN (SELECT id FROM ingest_runs WHERE tenant = :tenant))`;

const RUN_COLUMNS = `r.*, j.state AS job_state,
  json_extract(j.errors, '$[#-1].error') AS job_error`;

const SQL = {
  leaseHeld:
    `SELECT 1 AS held FROM jobs WHERE id = :job AND state = 'executing' AND fence = :fence`,
  runByJob: `SELECT ${RUN_COLUMNS} FROM ingest_runs AS r LEFT JOIN jobs AS j ON j.id = r.job_id
    WHERE r.job_id = :job`,
  runGet: `SELECT ${RUN_COLUMNS} FROM ingest_runs AS r LEFT JOIN jobs AS j ON j.id = r.job_id
    WHERE r.id = :id`,
  runTouch: `UPDATE ingest_runs SET updated_at = :now WHERE job_id = :job`,
  // The run's tenant is its job's: the principal's that started it.
  runInsert: `INSERT INTO ingest_runs (pipeline, hash, state, job_id, trigger, started_at,
      updated_at, tenant)
    VALUES (:pipeline, :hash, 'running', :job, :trigger, :now, :now,
      (SELECT tenant FROM jobs WHERE id = :job))`,
  runAdd: `UPDATE ingest_runs SET received = received + :received, kept = kept + :kept,
      sunk = sunk + :sunk, failed = failed + :failed, pending = :pending, cursor = :cursor,
      dropped = (SELECT json_group_object(reason, total) FROM (
        SELECT reason, sum(n) AS total FROM (
          SELECT key AS reason, value AS n FROM json_each(ingest_runs.dropped)
          UNION ALL SELECT key, value FROM json_each(:dropped))
        GROUP BY reason)),
      updated_at = :now
    WHERE id = :run AND job_id = :job`,
  runFinish: `UPDATE ingest_runs SET state = :state, error = :error, pending = :pending,
      finished_at = :now, updated_at = :now
    WHERE id = :run AND job_id = :job AND ${LEASE}`,
  dropInsert:
    `INSERT INTO ingest_drops (pipeline, run_id, record_key, reason, step, at, excerpt, record)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)`,
  failureBump: `INSERT INTO ingest_failures (pipeline, record, failures, error, excerpt, updated_at)
    VALUES (?1, ?2, 1, ?3, ?4, ?5)
    ON CONFLICT (pipeline, record) DO UPDATE SET failures = failures + 1, error = excluded.error,
      excerpt = excluded.excerpt, updated_at = excluded.updated_at`,
  failureClear: `DELETE FROM ingest_failures WHERE pipeline = ?1 AND record = ?2`,
  failuresGet: `SELECT record, failures FROM ingest_failures
    WHERE pipeline = :pipeline AND record IN (SELECT value FROM json_each(:records))`,
  runsList: `SELECT ${RUN_COLUMNS} FROM ingest_runs AS r LEFT JOIN jobs AS j ON j.id = r.job_id
    WHERE (:pipeline IS NULL OR r.pipeline = :pipeline) AND (:before IS NULL OR r.id < :before)
      AND (:tenant IS NULL OR r.tenant = :tenant)
    ORDER BY r.id DESC LIMIT :limit`,
  heads: `SELECT pipeline, count(*) AS runs, max(id) AS last_id,
      max(CASE WHEN state = 'completed' THEN finished_at END) AS last_completed_at
    FROM ingest_runs WHERE (:tenant IS NULL OR tenant = :tenant) GROUP BY pipeline`,
  runsByIds: `SELECT ${RUN_COLUMNS} FROM ingest_runs AS r LEFT JOIN jobs AS j ON j.id = r.job_id
    WHERE r.id IN (SELECT value FROM json_each(:ids))`,
  dropsSince: `SELECT pipeline, reason, count(*) AS count FROM ingest_drops
    WHERE pipeline = :pipeline AND at >= :since AND ${TENANT_RUNS}
    GROUP BY pipeline, reason`,
  dropsList: `SELECT d.*, d.record IS NOT NULL AS replayable FROM ingest_drops AS d
    WHERE d.pipeline = :pipeline AND (:reason IS NULL OR d.reason = :reason)
      AND (:run IS NULL OR d.run_id = :run) AND (:before IS NULL OR d.id < :before)
      AND ${TENANT_RUNS}
    ORDER BY d.id DESC LIMIT :limit`,
  // Every pipeline's drops (the API's listing without a pipeline), newest first.
  dropsListAll: `SELECT d.*, d.record IS NOT NULL AS replayable FROM ingest_drops AS d
    WHERE (:reason IS NULL OR d.reason = :reason)
      AND (:run IS NULL OR d.run_id = :run) AND (:before IS NULL OR d.id < :before)
      AND ${TENANT_RUNS}
    ORDER BY d.id DESC LIMIT :limit`,
  dropGet: `SELECT d.*, d.record IS NOT NULL AS replayable FROM ingest_drops AS d
    WHERE d.id = :id AND ${TENANT_RUNS}`,
  dropReplayed: `UPDATE ingest_drops SET replayed_at = :now, replayed_job = :job WHERE id = :id`,
  dropsPrune: `DELETE FROM ingest_drops WHERE id IN (
      SELECT d.id FROM ingest_drops AS d
        LEFT JOIN json_each(:before) AS b ON b.value ->> 0 = d.pipeline
      WHERE d.at < coalesce(b.value ->> 1, :otherwise) LIMIT :limit)`,
} as const;

/** The {@linkcode StoreIngest} of the store over `core`. */
export function sqliteIngest(core: SqliteCore): StoreIngest {
  const q = () => core.onDemand(SQL);
  const held = (jobId: number, fence: number): boolean =>
    q().leaseHeld.get({ job: jobId, fence }) !== undefined;
  return {
    ingestRunOpen(params: IngestRunOpenParams): Promise<IngestRun | null> {
      return core.exclusive(() =>
        core.write(() => {
          if (!held(params.jobId, params.fence)) return null;
          const s = q();
          const existing = s.runByJob.get({ job: params.jobId }) as Row | undefined;
          if (existing) {
            s.runTouch.run({ job: params.jobId, now: params.now });
            return toIngestRun({ ...existing, updated_at: params.now });
          }
          s.runInsert.run({
            pipeline: params.pipeline,
            hash: params.hash,
            job: params.jobId,
            trigger: params.trigger,
            now: params.now,
          });
          return toIngestRun(s.runByJob.get({ job: params.jobId }) as Row);
        })
      );
    },

    ingestFailuresGet(params: { pipeline: string; records: string[] }): Promise<
      Map<string, number>
    > {
      return core.exclusive(() => {
        if (params.records.length === 0) return new Map();
        const rows = q().failuresGet.all({
          pipeline: params.pipeline,
          records: JSON.stringify(params.records.map((r) => storedText(r))),
        }) as Row[];
        return failureCounts(params.records, rows);
      });
    },

    ingestChunkCommit(chunk: IngestChunkCommitParams): Promise<boolean> {
      return core.exclusive(() =>
        core.write(() => {
          const params = storedChunk(chunk);
          const { lease, pipeline, delta, now } = params;
          if (!held(lease.jobId, lease.fence)) return false;
          const s = q();
          const changed = s.runAdd.run({
            run: lease.runId,
            job: lease.jobId,
            received: delta.received,
            kept: delta.kept,
            sunk: delta.sunk,
            failed: delta.failed,
            pending: params.pending,
            cursor: params.cursor,
            dropped: JSON.stringify(delta.dropped),
            now,
          }).changes;
          if (changed === 0) return false;
          for (const d of params.drops) {
            s.dropInsert.run(
              pipeline,
              lease.runId,
              d.recordKey,
              d.reason,
              d.step,
              now,
              d.excerpt,
              d.record,
            );
          }
          // One bump per record: the same record twice in one chunk counts once, as on PostgreSQL.
          const failures = new Map(params.failures.map((f) => [f.record, f]));
          for (const f of failures.values()) {
            s.failureBump.run(pipeline, f.record, f.error, f.excerpt, now);
          }
          for (const record of params.cleared) s.failureClear.run(pipeline, record);
          return true;
        })
      );
    },

    ingestRunFinish(params: IngestRunFinishParams): Promise<boolean> {
      return core.exclusive(() =>
        core.write(() =>
          q().runFinish.run({
            run: params.lease.runId,
            job: params.lease.jobId,
            fence: params.lease.fence,
            state: params.state,
            error: storedText(params.error),
            pending: params.pending,
            now: params.now,
          }).changes !== 0
        )
      );
    },

    ingestRunGet(params: { id: number }): Promise<IngestRun | null> {
      return core.exclusive(() => {
        const row = q().runGet.get({ id: params.id }) as Row | undefined;
        return row ? toIngestRun(row) : null;
      });
    },

    ingestRunByJob(params: { jobId: number }): Promise<IngestRun | null> {
      return core.exclusive(() => {
        const row = q().runByJob.get({ job: params.jobId }) as Row | undefined;
        return row ? toIngestRun(row) : null;
      });
    },

    ingestRunsList(filter: IngestRunFilter): Promise<IngestRun[]> {
      return core.exclusive(() => {
        const limit = filter.limit ?? 50;
        const out: IngestRun[] = [];
        let before = filter.before ?? null;
        // A state filter applies to the derived state: read pages until enough match.
        for (;;) {
          const rows = q().runsList.all({
            pipeline: filter.pipeline ?? null,
            tenant: filter.tenant ?? null,
            before,
            limit: filter.state ? Math.max(limit, 200) : limit,
          }) as Row[];
          for (const row of rows) {
            const run = toIngestRun(row);
            if (!filter.state || run.state === filter.state) out.push(run);
            if (out.length === limit) return out;
          }
          if (!filter.state || rows.length === 0) return out;
          before = Number(rows.at(-1)!.id);
        }
      });
    },

    ingestSummaries(params: { since: number; tenant?: string }): Promise<PipelineSummary[]> {
      return core.exclusive(() => {
        const s = q();
        const tenant = params.tenant ?? null;
        const heads = s.heads.all({ tenant }) as Row[];
        const ids = heads.map((h) => Number(h.last_id));
        const runs = new Map(
          (s.runsByIds.all({ ids: JSON.stringify(ids) }) as Row[]).map((r) => {
            const run = toIngestRun(r);
            return [run.id, run];
          }),
        );
        // One indexed range per pipeline: (pipeline, at, reason).
        const drops = heads.flatMap((h) =>
          s.dropsSince.all({ pipeline: h.pipeline as string, since: params.since, tenant }) as Row[]
        );
        return toSummaries(heads, runs, drops);
      });
    },

    ingestDropsList(filter: IngestDropFilter): Promise<IngestDrop[]> {
      const values = {
        reason: filter.reason ?? null,
        run: filter.runId ?? null,
        before: filter.before ?? null,
        limit: filter.limit ?? 50,
        tenant: filter.tenant ?? null,
      };
      return core.exclusive(() =>
        ((filter.pipeline === undefined
          ? q().dropsListAll.all(values)
          : q().dropsList.all({ ...values, pipeline: filter.pipeline })) as Row[]).map(toIngestDrop)
      );
    },

    ingestDropGet(params: { id: number; tenant?: string }): Promise<IngestDropWithRecord | null> {
      return core.exclusive(() => {
        const row = q().dropGet.get({ id: params.id, tenant: params.tenant ?? null }) as
          | Row
          | undefined;
        return row ? { ...toIngestDrop(row), record: (row.record as string | null) ?? null } : null;
      });
    },

    ingestDropReplayed(params: { id: number; jobId: number; now: number }): Promise<boolean> {
      return core.exclusive(() =>
        core.write(() =>
          q().dropReplayed.run({ id: params.id, job: params.jobId, now: params.now }).changes !== 0
        )
      );
    },

    ingestDropsPrune(params: IngestDropsPruneParams): Promise<number> {
      return core.exclusive(() =>
        core.write(() =>
          Number(
            q().dropsPrune.run({
              before: JSON.stringify(params.before.map((b) => [b.pipeline, b.before])),
              otherwise: params.otherwise,
              limit: params.limit,
            }).changes,
          )
        )
      );
    },
  };
}
