/**
 * The two forms of the runtime's events: JSON lines for a collector and one
 * readable line per event for a person at a terminal; both stamped by the
 * injected clock, both redacted, neither able to smuggle a control sequence
 * or a second line.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { openJobs } from "../../src/jobs.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import { waitUntil } from "../../src/testing.ts";
import { humanLogger, jsonLinesLogger } from "../../src/kernel/logger.ts";
import { tempDir } from "../support/stores.ts";

const AT = Date.UTC(2026, 2, 8, 12, 3, 4, 120);

Deno.test("humanLogger() writes time, event, fields and the duration last on one line", () => {
  const lines: string[] = [];
  const log = humanLogger(new FakeClock(AT), (line) => lines.push(line));
  log("job.stop", {
    queue: "default",
    job: 42,
    worker: "jobs.command",
    outcome: "completed",
    durationMs: 120,
  });
  log("job.start", { queue: "default", job: 43, waitMs: 35.5, occurrence: "tick@2026" });
  assert.deepEqual(lines, [
    "12:03:04.120Z job.stop       queue=default job=42 worker=jobs.command outcome=completed 120ms",
    "12:03:04.120Z job.start      queue=default job=43 wait=35.5ms occurrence=tick@2026",
  ]);
});

Deno.test("humanLogger() quotes text with spaces, redacts secrets and escapes control characters", () => {
  const lines: string[] = [];
  const log = humanLogger(new FakeClock(AT), (line) => lines.push(line));
  log("job.exception", {
    error: "connect to postgres://app:hunter2@db/x failed\nnext line",
    output: "\x1b]0;owned\x07 \u202egnp.exe",
    token: "abc123",
    queues: { default: 2 },
  });
  const [line] = lines;
  assert.equal(lines.length, 1);
  assert.ok(!line!.includes("hunter2"), line);
  assert.ok(!line!.includes("abc123"), line);
  // deno-lint-ignore no-control-regex -- looking for control characters is the point
  assert.ok(!/[\x00-\x1f\x7f\u202e]/.test(line!), `no control character left in ${line}`);
  assert.match(line!, /error="connect to postgres:\/\/app:\[REDACTED\]@db\/x failed\\nnext line"/);
  assert.match(line!, /output="\\u001b\]0;owned\\u0007 \\u202egnp\.exe"/);
  assert.match(line!, /queues=\{"default":2\}/);
});

Deno.test("jsonLinesLogger() leads each line with the clock's time and redacts it", () => {
  const lines: string[] = [];
  const clock = new FakeClock(AT);
  const log = jsonLinesLogger(clock, (line) => lines.push(line));
  log("store.degraded", { source: "heartbeat", error: "auth failed for Bearer abcdefghijkl" });
  clock.advance(1000);
  log("store.recovered", { downMs: 1000 });
  const events = lines.map((l) => JSON.parse(l));
  assert.deepEqual(events, [
    {
      time: "2026-03-08T12:03:04.120Z",
      event: "store.degraded",
      source: "heartbeat",
      error: "auth failed for Bearer [REDACTED]",
    },
    { time: "2026-03-08T12:03:05.120Z", event: "store.recovered", downMs: 1000 },
  ]);
});

Deno.test("openJobs() without a logger writes each event as a JSON line led by time from its clock, as the daemon's log", async () => {
  const dir = await tempDir();
  const lines: string[] = [];
  const original = console.error;
  console.error = (...data: unknown[]) => lines.push(data.join(" "));
  try {
    const quick = defineWorker({ name: "quick", perform: () => {} });
    const jobs = await openJobs(`${dir.path}/jobs.db`, {
      clock: new FakeClock(AT),
      workers: [quick],
    });
    try {
      await jobs.enqueue(quick, {});
      const runtime = await jobs.start({ queues: { default: 1 }, node: "n1" });
      await waitUntil("the job's stop was logged", () => lines.some((l) => l.includes("job.stop")));
      await runtime.stop();
    } finally {
      await jobs.close({ grace: 0 });
    }
  } finally {
    console.error = original;
    await dir.cleanup();
  }
  const events = lines.map((line) => JSON.parse(line));
  assert.ok(events.length >= 2, lines.join("\n"));
  for (const event of events) {
    assert.deepEqual(Object.keys(event).slice(0, 2), ["time", "event"], JSON.stringify(event));
    assert.equal(event.time, "2026-03-08T12:03:04.120Z");
  }
  assert.ok(events.some((e) => e.event === "job.stop" && e.worker === "quick"), lines.join("\n"));
});
