/**
 * One report run: the work of a `jobs.report` job. It marks the run
 * `running` (fenced by the attempt), exports the query's rows to a local
 * file (SQLite on a thread of its own, PostgreSQL on the event loop),
 * reporting rows and bytes as it goes, stores the file under
 * `<prefix>/<tenant>/<report>/<run>.<ext>`, and ends the run `completed`
 * with its location and expiry.
 *
 * It stops, keeping nothing (the local file removed, the stored object
 * deleted if it got that far), when:
 * - a limit is hit (`max_rows`, `max_bytes`, `max_runtime`): the run ends
 *   `failed` naming the limit and its value, and the job is discarded (the
 *   same request would hit it again);
 * - the job is cancelled or its lease is lost: the run reads as its job's
 *   end (`cancelled`), and a running statement is interrupted (PostgreSQL)
 *   or stopped before its next page (SQLite);
 * - the output's key cannot be made (a tenant that is no path segment, in
 *   a job enqueued around the request's check): the run ends `failed`
 *   saying why and the job is discarded, at once, since no retry could
 *   store it;
 * - anything else fails (the source is down): the error is thrown, so the
 *   job retries and the retry starts the export again from nothing; the
 *   last attempt also ends the run `failed` with the error's first line
 *   (the job's stored error keeps its frames).
 *
 * @module
 */

import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Clock } from "../clock.ts";
import { describeError } from "../kernel/redact.ts";
import type { JobContext, Outcome } from "../kernel/worker.ts";
import { expandVariables } from "../process/env.ts";
import type { Store } from "../store/store.ts";
import type { Logger } from "../kernel/logger.ts";
import { LeaseLostError, ShutdownError } from "../kernel/abort_reasons.ts";
import { ExportStopped, LimitReached, writerOf } from "./export.ts";
import { type EffectiveLimits, ReportLimitExceeded } from "./limits.ts";
import { exportPostgres } from "./postgres_export.ts";
import { boundValues, maskedColumns } from "./query.ts";
import { exportSqlite } from "./sqlite_export.ts";
import { StopSwitch } from "./stop.ts";
import type { OutputStorage } from "./storage.ts";
import { outputKey } from "./storage.ts";
import type { ReportJobArgs } from "./types.ts";

/** What a run needs from its process. */
export interface ReportRunDeps {
  store: Store;
  clock: Clock;
  logger: Logger;
  env: (name: string) => string | undefined;
  /** The limits in force for `report` now (settings over the file over the defaults). */
  limits(report: ReportJobArgs["report"]): Promise<EffectiveLimits>;
  /** The storage of `report`'s output. */
  storage(report: ReportJobArgs["report"]): OutputStorage;
  /** Where the output is written before it is stored. @default the system's temp folder */
  tmpDir?: string;
  /** Rows and bytes are recorded at most this often. @default 500 ms */
  progressEveryMs?: number;
}

/** Runs one `jobs.report` job's run; see the module doc. */
export async function runReport(
  args: ReportJobArgs,
  ctx: JobContext,
  deps: ReportRunDeps,
): Promise<Outcome> {
  const { report, request } = args;
  const { store, clock, logger } = deps;
  const run = await store.reportRunStart({ jobId: ctx.job.id, fence: ctx.fence, now: clock.now() });
  if (run === null) throw new LeaseLostError(ctx.job.id);
  const lease = { runId: run.id, jobId: ctx.job.id, fence: ctx.fence };
  /** Ends the run `failed` with `message` (one line: answers show it). */
  const finishFailed = async (message: string, limit: string | null): Promise<void> => {
    const finished = await store.reportRunFinish({
      lease,
      state: "failed",
      rows: 0,
      bytes: 0,
      output: null,
      storageKey: null,
      error: message,
      limit,
      expiresAt: null,
      now: clock.now(),
    });
    if (!finished) throw new LeaseLostError(ctx.job.id);
    logger("report.failed", { level: "warn", report: report.id, run: run.id, limit });
  };
  const { extension, mediaType } = writerOf(report);
  let key: string;
  try {
    key = outputKey({
      tenant: request.tenant ?? "_shared",
      report: report.id,
      run: run.id,
      ext: extension as "csv" | "ndjson",
    });
  } catch (error) {
    // No attempt can store under this key: fail now, holding no
    // max_concurrent slot through retries (a request is refused before
    // this; a job enqueued around it is not).
    const message = `report ${report.id}: ${(error as Error).message}; run ${run.id} wrote nothing`;
    await finishFailed(message, null);
    return { discard: message };
  }
  const limits = await deps.limits(report);
  const stop = new StopSwitch();
  const onAbort = () => {
    const reason = ctx.signal.reason;
    stop.stop(reason instanceof ShutdownError ? "shutdown" : "lease-lost");
  };
  if (ctx.signal.aborted) onAbort();
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  const timer = new AbortController();
  void clock.sleep(limits.max_runtime, timer.signal).then(
    () => stop.stop("max_runtime"),
    () => {},
  );

  const local = join(deps.tmpDir ?? tmpdir(), `jobs-report-${run.id}-${ctx.fence}.${extension}`);
  const storage = deps.storage(report);
  const started = clock.now();
  let stored = false;
  let lastProgress = 0;
  let pending: Promise<unknown> = Promise.resolve();
  const progress = (rows: number, bytes: number) => {
    const now = clock.now();
    if (now - lastProgress < (deps.progressEveryMs ?? 500)) return;
    lastProgress = now;
    pending = pending.then(async () => {
      const held = await store.reportRunProgress({ lease, rows, bytes, now });
      if (!held) stop.stop("lease-lost");
    }).catch(() => {});
  };
  const common = {
    report,
    values: boundValues(request),
    masked: maskedColumns(report, request.roles),
    limits: { maxRows: limits.max_rows, maxBytes: limits.max_bytes },
    output: local,
    stop,
    progress,
  };
  logger("report.started", { report: report.id, run: run.id, tenant: request.tenant });
  try {
    // An earlier attempt's file, left by a process that crashed mid-run.
    await removeEarlier(deps.tmpDir ?? tmpdir(), run.id, ctx.fence);
    const source = report.source!;
    const totals = "sqlite" in source
      ? await exportSqlite({ ...common, path: source.sqlite })
      : await exportPostgres({
        ...common,
        url: expandVariables(source.postgres, deps.env, `report "${report.id}" source postgres`),
      });
    if (stop.reason) throw new ExportStopped(stop.reason);
    await pending;
    const put = await storage.put(key, local, mediaType);
    stored = true;
    // Gone before the run says it completed: a completed run leaves no local file.
    await rm(local, { force: true });
    const now = clock.now();
    const finished = await store.reportRunFinish({
      lease,
      state: "completed",
      rows: totals.rows,
      bytes: totals.bytes,
      output: put.location,
      storageKey: key,
      error: null,
      limit: null,
      expiresAt: now + limits.lifetime,
      now,
    });
    if (!finished) throw new LeaseLostError(ctx.job.id);
    logger("report.completed", {
      report: report.id,
      run: run.id,
      rows: totals.rows,
      bytes: totals.bytes,
      ms: now - started,
    });
    stored = false; // kept: the run owns it now
    return undefined;
  } catch (error) {
    const name = error instanceof LimitReached
      ? error.limit
      : error instanceof ExportStopped && error.why === "max_runtime"
      ? "max_runtime"
      : null;
    if (name === null) {
      if (error instanceof ExportStopped && ctx.signal.aborted) throw ctx.signal.reason;
      if (ctx.attempt >= ctx.job.maxAttempts) {
        // The last attempt: the run keeps one line of why; the job's error
        // keeps the frames for whoever debugs it (`jobs job <id>`).
        await pending;
        const why = describeError(error).split("\n", 1)[0]!;
        await finishFailed(`report ${report.id}: run ${run.id} failed: ${why}`, null).catch(
          () => {},
        );
      }
      throw error;
    }
    const limit = new ReportLimitExceeded({
      report: report.id,
      limit: name,
      value: limits[name],
      source: limits.sources[name],
      ...(name === "max_runtime" ? { what: "the run was interrupted: it took longer than" } : {}),
    });
    const message = `${limit.message}; run ${run.id} wrote nothing`;
    await pending;
    await finishFailed(message, name);
    return { discard: message };
  } finally {
    timer.abort();
    ctx.signal.removeEventListener("abort", onAbort);
    await rm(local, { force: true }).catch(() => {});
    if (stored) {
      await storage.delete(key).catch((error) =>
        logger("report.cleanup_failed", {
          level: "error",
          report: report.id,
          run: run.id,
          key,
          error: describeError(error),
        })
      );
    }
  }
}

/** Removes the local files of run `runId`'s attempts before `fence` (a crashed process's). */
async function removeEarlier(dir: string, runId: number, fence: number): Promise<void> {
  const mine = new RegExp(`^jobs-report-${runId}-(\\d+)\\.(csv|ndjson)$`);
  for await (const entry of Deno.readDir(dir)) {
    const match = mine.exec(entry.name);
    if (match && Number(match[1]) <= fence) await rm(join(dir, entry.name), { force: true });
  }
}
