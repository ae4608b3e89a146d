/**
 * `jobs show <job>`: one job by id or occurrence, with its fields, attempts,
 * errors, output tail and audit trail.
 */

import assert from "node:assert/strict";
import { occurrenceId } from "../../../src/schedule/occurrences.ts";
import {
  insert,
  jobs,
  nightlyJob,
  NOW,
  runOnce,
  withFixture,
} from "../../support/operator_fixture.ts";

const MINUTE = 60_000;
const ESC = "\x1b";

Deno.test("jobs show finds an occurrence and prints its fields, attempts, replay, output tail and audit", async () => {
  await withFixture(async (f) => {
    const occurrence = occurrenceId("nightly", Date.UTC(2026, 5, 1, 3));
    const id = await insert(f.store, nightlyJob(f, Date.UTC(2026, 5, 1, 3)));
    await runOnce(f.store, "default", NOW - 20 * MINUTE, {
      error: `vendor said ${ESC}]0;pwned${ESC}\\ no\nat line 2`,
    });
    const replay = await f.store.jobReplay({
      id,
      now: NOW - 10 * MINUTE,
      actor: "ada",
      reason: "vendor key rotated",
      force: false,
    });
    assert.deepEqual(replay, { replayed: true, was: "retryable" });
    await f.store.auditRecord({
      at: NOW - 10 * MINUTE,
      actor: "ada",
      action: "job.replay",
      target: `job:${id}`,
      reason: "vendor key rotated",
    });
    const output = Array.from({ length: 25 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
    await runOnce(f.store, "default", NOW - 5 * MINUTE, { output });

    const shown = await jobs(["show", occurrence, "--db", f.db]);
    assert.equal(shown.code, 0, shown.err);
    const out = shown.out;
    assert.ok(!out.includes(ESC), "no raw escape");
    assert.match(out, new RegExp(`^job ${id}$`, "m"));
    assert.match(out, /^ {2}state +completed$/m);
    assert.match(out, new RegExp(`^ {2}occurrence +${occurrence.replaceAll(".", "\\.")}$`, "m"));
    assert.match(out, /^ {2}schedule +nightly$/m);
    assert.match(out, /^ {2}attempt +2 of 20$/m);
    assert.match(out, /^ {2}completed at +2026-06-01T08:55:01\.500Z \(4m58s ago\)$/m);
    assert.match(out, /^ {2}args +\{"kind":"command","argv":\["true"\]/m);
    // Each error once, under its attempt (the job's errors list holds the same text).
    assert.match(
      out,
      /^ {2}#1 run on n1, fence 1: retryable\n.*\n {4}error:\n {6}vendor said \\x1b\]0;pwned\\x1b\\ no\n {6}at line 2\n {2}#2 /m,
    );
    assert.equal(out.split("vendor said").length, 2, "the error is printed once");
    assert.match(out, /^ {2}#1 run on n1, fence 1: retryable$/m);
    assert.match(out, /^ {2}#2 replay on n1, fence 2: completed$/m);
    assert.match(out, /^ {4}by ada: vendor key rotated$/m);
    assert.match(out, /^ {4}output \(last 20 of 25 lines\):$/m);
    assert.match(out, /^ {6}\| line 6$/m);
    assert.match(out, /^ {6}\| line 25$/m);
    assert.doesNotMatch(out, /\| line 5$/m);
    assert.match(
      out,
      /^audit \(1\):\n {2}2026-06-01T08:50:00\.000Z \(10m ago\) {2}ada {2}job\.replay: vendor key rotated$/m,
    );

    const byId = await jobs(["show", String(id), "--db", f.db, "--json"]);
    assert.equal(byId.code, 0, byId.err);
    const detail = JSON.parse(byId.out);
    assert.deepEqual(Object.keys(detail), ["job", "attempts", "audit"]);
    assert.equal(detail.job.occurrence, occurrence);
    assert.equal(detail.job.scheduledFor, "2026-06-01T03:00:00.000Z");
    assert.deepEqual(
      detail.attempts.map((a: Record<string, unknown>) => [a.attempt, a.kind, a.outcome, a.actor]),
      [[1, "run", "retryable", null], [2, "replay", "completed", "ada"]],
    );
    assert.equal(detail.attempts[1].output, output);
    assert.equal(detail.attempts[0].startedAt, "2026-06-01T08:40:00.000Z");
    assert.deepEqual(
      detail.audit.map((a: Record<string, unknown>) => [a.at, a.action, a.target]),
      [["2026-06-01T08:50:00.000Z", "job.replay", `job:${id}`]],
    );
  });
});

Deno.test("jobs show puts an operator's cancel reason among the other errors, not under the failed attempt of the same number", async () => {
  await withFixture(async (f) => {
    const id = await insert(f.store, nightlyJob(f, Date.UTC(2026, 5, 1, 3)));
    await runOnce(f.store, "default", NOW - 20 * MINUTE, { error: "vendor timed out" });
    // Retryable, so not executing: the cancel's error carries attempt 1 and no attempt row.
    await f.store.jobsCancel({ ids: [id], now: NOW - 5 * MINUTE, reason: "vendor gone for good" });

    const shown = await jobs(["show", String(id), "--db", f.db]);
    assert.equal(shown.code, 0, shown.err);
    assert.match(
      shown.out,
      /^ {2}#1 run on n1, fence 1: retryable\n.*\n {4}error:\n {6}vendor timed out\n\n/m,
    );
    assert.match(
      shown.out,
      /^other errors \(1, oldest first\):\n {2}attempt 1 at .*:\n {4}vendor gone for good$/m,
    );
    assert.equal(shown.out.split("vendor gone for good").length, 2, "printed once");
  });
});

Deno.test("jobs show exits 1 for an unknown id or occurrence and never creates a database", async () => {
  await withFixture(async (f) => {
    await insert(f.store, nightlyJob(f, Date.UTC(2026, 5, 1, 3)));
    const unknownId = await jobs(["show", "999", "--db", f.db]);
    assert.equal(unknownId.code, 1);
    assert.equal(unknownId.err, `jobs show: no job "999" in the store "${f.db}"`);
    const unknownOccurrence = await jobs([
      "show",
      "nightly@2026-05-31T03:00:00.000Z",
      "--db",
      f.db,
    ]);
    assert.equal(unknownOccurrence.code, 1);
    assert.match(
      unknownOccurrence.err,
      /^jobs show: no job with occurrence "nightly@2026-05-31T03:00:00\.000Z"/,
    );
    const hostile = await jobs(["show", `x${ESC}[2J`, "--db", f.db]);
    assert.equal(hostile.code, 1);
    assert.ok(hostile.err.includes("x\\x1b[2J"), hostile.err);

    const missing = `${f.db}.missing`;
    const noDb = await jobs(["show", "1", "--db", missing]);
    assert.equal(noDb.code, 1);
    assert.equal(
      noDb.err,
      `jobs show: no file "${missing}" for the store (from --db); did you mean "${f.db}"? ` +
        `(for a new store there: a daemon creates it when it starts, ` +
        `or run: jobsctl migrate --db ${missing})`,
    );
    await assert.rejects(Deno.stat(missing), Deno.errors.NotFound);
  });
});
