/**
 * Reports as the command line and the daemon's HTTP endpoint use them:
 * start a run (the request checked, the date range and the concurrency
 * limit enforced before anything runs, the job, the run and its audit row
 * written in one transaction), list runs, mint a download link (an S3
 * pre-signed URL, or a token the daemon serves), and serve a download.
 * Every run, link and download writes an audit row with the report's
 * `audit.reason` and `audit.target`.
 *
 * @module
 */

import { redact } from "../kernel/redact.ts";
import type { CompiledReport } from "../report/definition.ts";
import { writerOf } from "../report/export.ts";
import { effectiveLimits, ReportLimitExceeded } from "../report/limits.ts";
import { checkRange, checkRequest, type RawRequest, ReportRequestError } from "../report/query.ts";
import type { OutputStorage } from "../report/storage.ts";
import { checkToken, type DownloadClaims, mintToken, newSecret } from "../report/tokens.ts";
import type { ReportRun } from "../report/types.ts";
import { reportJob } from "../runners/report.ts";
import type { Store, StoreTx } from "../store/store.ts";
import type { AdminAction } from "./actions.ts";
import { audit } from "./audit.ts";

export { ReportRequestError };

/** The setting that holds the secret download tokens are signed with (never shown). */
export const DOWNLOAD_SECRET_KEY = "reports.download_secret";

/** The tenant segment and token tenant of a report whose tenancy is shared. */
export const SHARED_TENANT = "_shared";

/** A run that was started: its id and its job's. */
export interface StartedRun {
  run: ReportRun;
  job: number;
}

/**
 * Starts a run of `report` for `raw`: checked (parameters by type, tenant,
 * roles, sort), refused when its date range passes `max_range` or
 * `max_concurrent` runs of the report are queued or running; else the
 * `jobs.report` job, the `queued` run and the audit row `report.run`
 * commit together.
 *
 * @throws {ReportRequestError} for a request the report does not take
 * @throws {ReportLimitExceeded} for a request beyond a limit
 */
export async function startReport(
  store: Store,
  report: CompiledReport,
  raw: RawRequest,
  now: number,
): Promise<StartedRun> {
  const request = checkRequest(report, raw);
  return await store.transaction(async (tx) => {
    const limits = await effectiveLimits((key) => tx.settingGet({ key }), report);
    const range = checkRange(report, request.params, limits);
    if (range !== null) throw new ReportRequestError(report.id, "params", range);
    const [inserted] = await tx.jobsInsert({ jobs: [reportJob(report, request, { now })], now });
    const made = await tx.reportRunCreate({
      report: report.id,
      jobId: inserted!.id,
      tenant: request.tenant,
      actor: request.actor,
      roles: request.roles,
      params: request.params,
      sort: request.sort,
      format: report.format!.type,
      now,
      maxConcurrent: limits.max_concurrent,
    });
    if ("active" in made) {
      throw new ReportLimitExceeded({
        report: report.id,
        limit: "max_concurrent",
        value: limits.max_concurrent,
        source: limits.sources.max_concurrent,
        what: `runs ${made.active.join(", ")} are queued or running: the report is at`,
      });
    }
    await auditReport(tx, report, request.actor, now, "report.run", {
      run: made.run.id,
      job: inserted!.id,
      tenant: request.tenant,
      params: request.params,
      roles: request.roles,
    });
    return { run: made.run, job: inserted!.id };
  });
}

/** Writes the report's audit row for `action`. */
function auditReport(
  tx: Pick<StoreTx, "auditRecord">,
  report: CompiledReport,
  actor: string,
  now: number,
  action: AdminAction,
  details: Record<string, unknown>,
): Promise<void> {
  return audit(
    tx,
    { actor, reason: report.audit?.reason ?? null, now },
    action,
    report.audit?.target ?? `report:${report.id}`,
    { report: report.id, ...details },
  );
}

/** The secret tokens are signed with: the stored one, or a new one stored now. */
export async function downloadSecret(store: Store): Promise<Uint8Array> {
  const stored = await store.settingGet({ key: DOWNLOAD_SECRET_KEY });
  if (typeof stored === "string") return Uint8Array.fromBase64(stored);
  return await store.transaction(async (tx) => {
    // Another process may have made it meanwhile: keep the first.
    const again = await tx.settingGet({ key: DOWNLOAD_SECRET_KEY });
    if (typeof again === "string") return Uint8Array.fromBase64(again);
    const secret = newSecret();
    await tx.settingSet({ key: DOWNLOAD_SECRET_KEY, value: secret.toBase64(), now: 0 });
    return secret;
  });
}

/** A download link: where to fetch the output, until when. */
export interface DownloadLink {
  run: number;
  /** An S3 pre-signed URL, or the daemon's `<base>/downloads/<token>`. */
  url: string;
  expires: number;
  kind: "s3" | "daemon";
}

/**
 * A link to the output of completed run `runId`, valid `ttlMs` from `now`
 * (and never past the output's expiry), for `actor`; audited as
 * `report.link`. With `tenant` (a tenant's principal) only a run of that
 * tenant is found, read so in the store's statement. A daemon's link is
 * signed with the run's tenant and `actor`, and is whole: `base` is asked
 * for the URL the daemon is reached at (only for such a link, before it is
 * minted).
 *
 * @throws Error when the run does not exist (in `tenant`), has no output, or expired
 * @throws what `base` throws (`NoPublicUrl`): no link is minted nor audited
 */
export async function mintLink(params: {
  store: Store;
  report: CompiledReport;
  storage: OutputStorage;
  runId: number;
  actor: string;
  /** Only a run of this tenant (a tenant's principal); any run when not given. */
  tenant?: string;
  ttlMs: number;
  now: number;
  /** `https://host[:port][/path]` the daemon is reached at, asked for a daemon's link. */
  base: () => Promise<string>;
}): Promise<DownloadLink> {
  const { store, report, runId, now } = params;
  const run = await store.reportRunGet({
    id: runId,
    ...(params.tenant === undefined ? {} : { tenant: params.tenant }),
  });
  if (!run || run.report !== report.id) throw new Error(`report ${report.id} has no run ${runId}`);
  if (run.state !== "completed" || run.storageKey === null) {
    throw new Error(`run ${runId} of report ${report.id} is ${run.state}: it has no output`);
  }
  if (run.expiresAt !== null && run.expiresAt <= now) {
    throw new Error(`run ${runId} of report ${report.id}: its output expired`);
  }
  let expires = Math.min(now + params.ttlMs, run.expiresAt ?? Infinity);
  // A pre-signed URL lives whole seconds, at least one.
  const seconds = Math.max(1, Math.floor((expires - now) / 1000));
  const presigned = await params.storage.presign(run.storageKey, seconds * 1000, now);
  let link: DownloadLink;
  if (presigned !== null) {
    expires = now + seconds * 1000;
    link = { run: run.id, url: presigned, expires, kind: "s3" };
  } else {
    const claims: DownloadClaims = {
      run: run.id,
      tenant: run.tenant ?? SHARED_TENANT,
      actor: params.actor,
      expires,
    };
    const base = await params.base();
    const token = await mintToken(await downloadSecret(store), claims);
    link = { run: run.id, url: `${base}/downloads/${token}`, expires, kind: "daemon" };
  }
  await store.transaction((tx) =>
    auditReport(tx, report, params.actor, now, "report.link", {
      run: run.id,
      tenant: run.tenant,
      expires,
      kind: link.kind,
    })
  );
  return link;
}

/** What a download request gets: the output, or the status and why not. */
export type Download =
  | {
    ok: true;
    run: ReportRun;
    body: ReadableStream<Uint8Array>;
    bytes: number;
    mediaType: string;
    fileName: string;
  }
  | { ok: false; status: 403 | 404 | 410; reason: string };

/**
 * The output a download token grants at `now`: 403 for a forged or
 * malformed token, 410 for an expired token or output, 404 when the run or
 * its file is gone. The token is the whole credential: it names one run and
 * the tenant it was minted for, both signed, so nothing the caller says
 * (a header, a query) is asked. A run whose tenant is not the token's
 * (which only a bug could make) is refused 403 `tenant`. A served download
 * is audited as `report.download`, with the token's actor.
 */
export async function download(params: {
  store: Store;
  token: string;
  now: number;
  reports: (id: string) => CompiledReport | undefined;
  storage: (report: CompiledReport) => OutputStorage;
}): Promise<Download> {
  const { store, now } = params;
  const check = await checkToken(await downloadSecret(store), params.token, now);
  if (!check.ok) return { ok: false, status: check.status, reason: check.reason };
  const run = await store.reportRunGet({ id: check.claims.run });
  if (!run || run.storageKey === null || run.state !== "completed") {
    return { ok: false, status: 404, reason: "no such output" };
  }
  if ((run.tenant ?? SHARED_TENANT) !== check.claims.tenant) {
    return { ok: false, status: 403, reason: "tenant" };
  }
  if (run.expiresAt !== null && run.expiresAt <= now) {
    return { ok: false, status: 410, reason: "the output expired" };
  }
  const report = params.reports(run.report);
  if (!report) return { ok: false, status: 404, reason: `report ${run.report} is not declared` };
  const object = await params.storage(report).read(run.storageKey);
  if (!object) return { ok: false, status: 404, reason: "the output is gone" };
  await store.transaction((tx) =>
    auditReport(tx, report, check.claims.actor, now, "report.download", {
      run: run.id,
      tenant: run.tenant,
      bytes: object.bytes,
    })
  );
  return {
    ok: true,
    run,
    body: object.body,
    bytes: object.bytes,
    mediaType: writerOf(report).mediaType,
    fileName: `${run.report}-${run.id}.${run.format}`,
  };
}

/**
 * Why a run failed as an answer shows it: the first line of the stored
 * error. A failure the run did not foresee (a source that is down) is
 * stored as its job's error, which keeps stack frames and source paths for
 * whoever debugs it (`jobs job <id>`); an API answer never carries them.
 */
export function runError(error: string | null): string | null {
  if (error === null) return null;
  return redact(error.split("\n", 1)[0]!.trim());
}

/** A run as `--json` and the daemon's endpoint show it: instants as ISO UTC, the error one line. */
export function runJson(run: ReportRun) {
  const at = (ms: number | null) => ms === null ? null : new Date(ms).toISOString();
  return {
    run: run.id,
    report: run.report,
    state: run.state,
    rows: run.rows,
    bytes: run.bytes,
    output: run.output,
    job: run.jobId,
    tenant: run.tenant,
    actor: run.actor,
    params: run.params,
    error: runError(run.error),
    limit: run.limit,
    requestedAt: at(run.requestedAt),
    startedAt: at(run.startedAt),
    finishedAt: at(run.finishedAt),
    expiresAt: at(run.expiresAt),
  };
}

/**
 * Runs of reports, newest first; with `tenant`, that tenant's only (in the
 * store's statement); with `before`, those older than that run (the next
 * page).
 */
export function reportRuns(
  store: Store,
  filter: { report?: string; tenant?: string; limit?: number; before?: number },
): Promise<ReportRun[]> {
  return store.reportRunsList(filter);
}

/** Run `id`, or null when there is none (in `tenant`, when not null: another's reads as none). */
export function reportRunInScope(
  store: Store,
  id: number,
  tenant: string | null,
): Promise<ReportRun | null> {
  return store.reportRunGet({ id, ...(tenant === null ? {} : { tenant }) });
}

/**
 * A declared report as the API lists it: its id, its parameters as
 * declared, the formats it writes, its tenancy, sort keys and the roles it
 * names (never its query, source or storage).
 */
export function reportJson(report: CompiledReport) {
  return {
    id: report.id,
    params: report.params ?? {},
    formats: report.format ? [report.format.type] : [],
    tenancy: report.tenancy.mode,
    sort: report.sort
      ? { keys: Object.keys(report.sort.keys), default: report.sort.default ?? null }
      : null,
    roles: report.authorize?.roles ?? [],
    description: report.need?.report ?? null,
  };
}

/**
 * Removes expired outputs and their runs (oldest expiry first, up to
 * `limit`), and the rows of runs that ended without output before
 * `endedBefore`; returns how many runs went. An output that cannot be
 * deleted keeps its run, to be tried again.
 */
export async function pruneReports(params: {
  store: Store;
  now: number;
  endedBefore: number;
  reports: (id: string) => CompiledReport | undefined;
  storage: (report: CompiledReport) => OutputStorage;
  limit?: number;
  onError?: (run: ReportRun, error: unknown) => void;
}): Promise<number> {
  const { store } = params;
  const limit = params.limit ?? 500;
  let removed = 0;
  for (const run of await store.reportRunsExpired({ now: params.now, limit })) {
    const report = params.reports(run.report);
    try {
      if (run.storageKey !== null) {
        if (!report) {
          throw new Error(`report ${run.report} is not declared: its storage is unknown`);
        }
        await params.storage(report).delete(run.storageKey);
      }
    } catch (error) {
      params.onError?.(run, error);
      continue;
    }
    if (await store.reportRunDelete({ id: run.id })) removed++;
  }
  for (const run of await store.reportRunsEndedBefore({ before: params.endedBefore, limit })) {
    if (await store.reportRunDelete({ id: run.id })) removed++;
  }
  return removed;
}
