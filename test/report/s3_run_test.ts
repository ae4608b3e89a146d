/**
 * Report runs into a real S3-compatible bucket (`@20minutes/s3rver` on
 * 127.0.0.1, which checks SigV4 signatures), under a `Jobs` runtime, on
 * both job stores: the statement report's output lands at
 * `exports/<tenant>/statement/<run>.csv` and nowhere else, with the exact
 * CSV bytes; `mintLink` gives a pre-signed URL that plain `fetch`
 * downloads (and that no longer works for another key); the pruner's
 * `pruneReports` removes an expired object and its run, keeping both when
 * the delete fails; a run that hits `max_rows`, or whose job is cancelled
 * while its object is uploaded, leaves nothing in the bucket. The bucket
 * is read with a client of the test's own, not with the storage under test.
 */

import assert from "node:assert/strict";
import { AwsClient } from "aws4fetch";
import { mintLink, pruneReports } from "../../src/admin/reports.ts";
import { FakeClock } from "../../src/clock.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import { type CompiledReport, defineReport } from "../../src/report/definition.ts";
import { effectiveLimits } from "../../src/report/limits.ts";
import { runReport } from "../../src/report/run.ts";
import { openStorage, type OutputStorage } from "../../src/report/storage.ts";
import { REPORT_QUEUE, type ReportJobArgs, type ReportRun } from "../../src/report/types.ts";
import { REPORT_WORKER } from "../../src/kernel/runs.ts";
import { reportArgsSchema, reportWorker, storageOf } from "../../src/runners/report.ts";
import type { Store } from "../../src/store/store.ts";
import { waitUntil } from "../../src/testing.ts";
import { silentLogger } from "../../src/kernel/logger.ts";
import { backendJobs, BACKENDS } from "../support/backends.ts";
import {
  MARCH,
  statementCsv,
  statementOptions,
  writeStatementSources,
} from "../support/statement_report.ts";
import { startS3 } from "../support/s3.ts";
import { tempDir } from "../support/stores.ts";

const BUCKET = "reports";
/** s3rver's one account. */
const ACCESS_KEY = "S3RVER";
const SECRET_KEY = "S3RVER";
/** What `${S3_KEY}` and `${S3_SECRET}` of the report's storage read. */
const ENV: Record<string, string> = { S3_KEY: ACCESS_KEY, S3_SECRET: SECRET_KEY };
const env = (name: string) => ENV[name];

/** The test's own S3 client: the bucket as S3 itself lists and serves it. */
const aws = new AwsClient({
  accessKeyId: ACCESS_KEY,
  secretAccessKey: SECRET_KEY,
  service: "s3",
  region: "us-east-1",
});

/** Every key of the bucket under `prefix`, sorted, as S3's ListObjectsV2 answers. */
async function bucketKeys(endpoint: string, prefix = ""): Promise<string[]> {
  const response = await aws.fetch(
    `${endpoint}/${BUCKET}?list-type=2&prefix=${encodeURIComponent(prefix)}`,
  );
  const xml = await response.text();
  assert.equal(response.status, 200, xml);
  return [...xml.matchAll(/<Key>([^<]*)<\/Key>/g)].map((m) => m[1]!).sort();
}

/** One object of the bucket, fetched with the test's signed client. */
async function bucketObject(
  endpoint: string,
  key: string,
): Promise<{ status: number; type: string | null; bytes: Uint8Array }> {
  const response = await aws.fetch(`${endpoint}/${BUCKET}/${key}`);
  return {
    status: response.status,
    type: response.headers.get("content-type"),
    bytes: new Uint8Array(await response.arrayBuffer()),
  };
}

/** The statement report (test/support/statement_report.ts), stored in the bucket under `exports/`. */
function statementReport(dir: string, endpoint: string): CompiledReport {
  return defineReport(
    statementOptions({
      s3: {
        endpoint,
        bucket: BUCKET,
        access_key: "${S3_KEY}",
        secret_key: "${S3_SECRET}",
        prefix: "exports",
      },
    }),
    dir,
  );
}

/** The run `id` once it has ended (completed, failed or cancelled). */
async function ended(store: Store, id: number): Promise<ReportRun> {
  return await waitUntil(`run ${id} ended`, async () => {
    const run = await store.reportRunGet({ id });
    return run && ["completed", "failed", "cancelled"].includes(run.state) ? run : null;
  }, { timeoutMs: 20_000 });
}

const decode = (bytes: Uint8Array) => new TextDecoder("utf-8", { fatal: true }).decode(bytes);

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a run stores exports/<tenant>/statement/<run>.csv in a real bucket; a pre-signed link serves it; the pruner removes it`, async () => {
    const dir = await tempDir();
    const s3 = await startS3(dir.path, [BUCKET]);
    try {
      await writeStatementSources(dir.path);
      const report = statementReport(dir.path, s3.endpoint);
      // Real time: s3rver checks a pre-signed URL's date against its own clock.
      const clock = new FakeClock(Date.now());
      const worker = reportWorker({
        store: () => t.store,
        clock,
        logger: silentLogger,
        env,
        tmpDir: dir.path,
      });
      await using t = await backendJobs(backend, [worker], { clock });
      const runtime = await t.jobs.start({ queues: { reports: 1 }, node: "n1" });

      // acme, read by a finance-lead: every description, escaped, byte for byte.
      const acmeStart = await t.jobs.report(report, {
        params: { ...MARCH },
        tenant: "acme",
        actor: "ada",
        roles: ["finance", "finance-lead"],
      });
      const acme = await ended(t.store, acmeStart.run.id);
      assert.equal(acme.state, "completed", acme.error ?? "");
      const acmeKey = `exports/acme/statement/${acme.id}.csv`;
      assert.equal(acme.rows, 12);
      assert.equal(acme.output, acmeKey);
      assert.equal(acme.storageKey, `acme/statement/${acme.id}.csv`);
      assert.deepEqual(await bucketKeys(s3.endpoint), [acmeKey]);
      const expected = new TextEncoder().encode(statementCsv("acme", { lead: true }));
      const stored = await bucketObject(s3.endpoint, acmeKey);
      assert.equal(stored.status, 200);
      assert.equal(stored.type, "text/csv; charset=utf-8; header=present");
      assert.deepEqual(stored.bytes, expected);
      assert.equal(acme.bytes, expected.length);
      // The job carries the storage's ${NAME}s, never the credentials they stand for.
      const args = JSON.stringify((await t.store.jobGet({ id: acmeStart.job }))!.args);
      assert.match(args, /\$\{S3_SECRET\}/);
      assert.ok(!args.includes(SECRET_KEY), "the job's args hold the secret key");
      // Nothing of the run is left in its temp folder.
      const temp = await Array.fromAsync(Deno.readDir(dir.path), (e) => e.name);
      assert.ok(!temp.some((name) => name.startsWith("jobs-report-")), temp.join(", "));

      // A pre-signed link: plain fetch, no credentials, the same bytes; audited.
      const link = await mintLink({
        store: t.store,
        report,
        storage: storageOf(env)(report),
        runId: acme.id,
        actor: "ada",
        ttlMs: 60_000,
        now: clock.now(),
        // A pre-signed URL is whole: it needs no public URL of a daemon.
        base: () => Promise.reject(new Error("an S3 link asked for the daemon's URL")),
      });
      assert.equal(link.kind, "s3");
      assert.equal(link.expires, clock.now() + 60_000);
      assert.ok(link.url.startsWith(`${s3.endpoint}/${BUCKET}/${acmeKey}?`), link.url);
      assert.match(link.url, /X-Amz-Expires=60&/);
      const fetched = await fetch(link.url);
      assert.equal(fetched.status, 200);
      assert.equal(fetched.headers.get("content-type"), "text/csv; charset=utf-8; header=present");
      assert.deepEqual(new Uint8Array(await fetched.arrayBuffer()), expected);
      assert.equal(decode(expected).split("\r\n")[8], "9,2026-03-08,café ünïcode,4.5");
      // The signature covers the key: the same link pointed at another tenant is refused.
      const swapped = await fetch(link.url.replace("/exports/acme/", "/exports/globex/"));
      assert.equal(swapped.status, 403);
      assert.match(await swapped.text(), /SignatureDoesNotMatch/);

      // globex, a minute later, masked: under exports/globex/ only, none of acme's rows.
      clock.advance(60_000);
      const globex = await ended(
        t.store,
        (await t.jobs.report(report, {
          params: { ...MARCH },
          tenant: "globex",
          actor: "ada",
          roles: ["finance"],
        })).run.id,
      );
      assert.equal(globex.state, "completed", globex.error ?? "");
      assert.equal(globex.rows, 3);
      const globexKey = `exports/globex/statement/${globex.id}.csv`;
      assert.deepEqual(await bucketKeys(s3.endpoint, "exports/globex/"), [globexKey]);
      assert.deepEqual(await bucketKeys(s3.endpoint, "exports/acme/"), [acmeKey]);
      assert.deepEqual(await bucketKeys(s3.endpoint), [acmeKey, globexKey]);
      const globexText = decode((await bucketObject(s3.endpoint, globexKey)).bytes);
      assert.equal(globexText, statementCsv("globex", { lead: false }));
      await runtime.stop({ grace: 0 });

      // The pruner at acme's expiry (+1 ms): a delete that fails keeps the object and the run.
      assert.equal(acme.expiresAt, acme.finishedAt! + 7 * 86_400_000);
      const reports = (id: string) => (id === report.id ? report : undefined);
      const failures: number[] = [];
      const wrongSecret = openStorage({
        s3: { endpoint: s3.endpoint, bucket: BUCKET, access_key: ACCESS_KEY, secret_key: "nope" },
      });
      const kept = await pruneReports({
        store: t.store,
        now: acme.expiresAt! + 1,
        endedBefore: 0,
        reports,
        storage: () => wrongSecret,
        onError: (run, error) => {
          failures.push(run.id);
          assert.match(String(error), /DELETE .* answered 403 SignatureDoesNotMatch/);
        },
      });
      assert.equal(kept, 0);
      assert.deepEqual(failures, [acme.id]);
      assert.deepEqual(await bucketKeys(s3.endpoint), [acmeKey, globexKey]);
      assert.notEqual(await t.store.reportRunGet({ id: acme.id }), null);

      // With the report's own storage: acme's object and run go, globex's (not yet expired) stay.
      const removed = await pruneReports({
        store: t.store,
        now: acme.expiresAt! + 1,
        endedBefore: 0,
        reports,
        storage: storageOf(env),
      });
      assert.equal(removed, 1);
      assert.deepEqual(await bucketKeys(s3.endpoint), [globexKey]);
      assert.equal(await t.store.reportRunGet({ id: acme.id }), null);
      assert.equal((await t.store.reportRunGet({ id: globex.id }))?.state, "completed");
      // The link minted before is still signed and unexpired: the object is gone.
      const gone = await fetch(link.url);
      assert.equal(gone.status, 404);
      assert.match(await gone.text(), /NoSuchKey/);

      const audit = await t.store.auditList({ target: "finance-audit" });
      assert.deepEqual(audit.map((a) => a.action), ["report.run", "report.link", "report.run"]);
      assert.equal(audit[1]!.details.kind, "s3");
    } finally {
      await s3.close();
      await dir.cleanup();
    }
  });

  Deno.test(`${backend.name}: a run over max_rows, or cancelled while its object uploads, leaves nothing in the bucket`, async () => {
    const dir = await tempDir();
    const s3 = await startS3(dir.path, [BUCKET]);
    try {
      await writeStatementSources(dir.path);
      const report = statementReport(dir.path, s3.endpoint);
      const clock = new FakeClock(Date.now());
      // The report runner with its storage wrapped: once `cancelOnPut` is set, the
      // run's job is cancelled by an operator just after its object is stored.
      let cancelOnPut = false;
      const seenInBucket: string[][] = [];
      const real = storageOf(env)(report);
      const storage: OutputStorage = {
        kind: real.kind,
        where: real.where,
        put: async (key, localPath, contentType) => {
          const put = await real.put(key, localPath, contentType);
          if (cancelOnPut) {
            seenInBucket.push(await bucketKeys(s3.endpoint));
            const runId = Number(/(\d+)\.csv$/.exec(key)![1]);
            const run = await t.store.reportRunGet({ id: runId });
            await t.store.jobsCancel({
              ids: [run!.jobId],
              now: clock.now(),
              reason: "wrong month",
            });
          }
          return put;
        },
        delete: (key) => real.delete(key),
        exists: (key) => real.exists(key),
        read: (key) => real.read(key),
        presign: (key, ttlMs, now) => real.presign(key, ttlMs, now),
        list: (prefix) => real.list(prefix),
      };
      const worker = defineWorker<ReportJobArgs>({
        name: REPORT_WORKER,
        queue: REPORT_QUEUE,
        selfTimed: true,
        args: reportArgsSchema,
        perform: (args, ctx) =>
          runReport(args, ctx, {
            store: t.store,
            clock,
            logger: silentLogger,
            env,
            limits: (r) => effectiveLimits((key) => t.store.settingGet({ key }), r),
            storage: () => storage,
            tmpDir: dir.path,
          }),
      });
      await using t = await backendJobs(backend, [worker], { clock });
      const runtime = await t.jobs.start({ queues: { reports: 1 }, node: "n1" });
      const request = { params: { ...MARCH }, tenant: "acme", actor: "ada", roles: ["finance"] };

      // max_rows 5 of acme's 12: failed, named, and the export never reached the bucket.
      await t.store.settingSet({ key: "report.statement.max_rows", value: 5, now: 0 });
      const capped = await ended(t.store, (await t.jobs.report(report, request)).run.id);
      assert.equal(capped.state, "failed");
      assert.equal(capped.limit, "max_rows");
      assert.match(capped.error!, /max_rows 5 \(setting report\.statement\.max_rows\)/);
      assert.equal(capped.output, null);
      assert.deepEqual(await bucketKeys(s3.endpoint), []);

      // Cancelled once its object is in the bucket: the run cannot finish, and its object goes.
      await t.store.settingSet({ key: "report.statement.max_rows", value: 1000, now: 0 });
      cancelOnPut = true;
      const started = await t.jobs.report(report, request);
      const cancelled = await ended(t.store, started.run.id);
      assert.equal(cancelled.state, "cancelled");
      assert.equal(cancelled.output, null);
      assert.deepEqual(seenInBucket, [[`exports/acme/statement/${started.run.id}.csv`]]);
      await waitUntil("the job ended", () => runtime.running === 0);
      assert.equal((await t.store.jobGet({ id: started.job }))?.state, "cancelled");
      assert.deepEqual(await bucketKeys(s3.endpoint), []);
      const temp = await Array.fromAsync(Deno.readDir(dir.path), (e) => e.name);
      assert.ok(!temp.some((name) => name.startsWith("jobs-report-")), temp.join(", "));
      await runtime.stop({ grace: 0 });
    } finally {
      await s3.close();
      await dir.cleanup();
    }
  });
}
