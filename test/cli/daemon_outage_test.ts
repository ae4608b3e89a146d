/**
 * Invariant 6 across processes: `jobs daemon` runs a schedule while another
 * process holds the SQLite file's write lock (`BEGIN EXCLUSIVE`) for longer
 * than the daemon's busy timeout. The daemon reports degraded on /readyz
 * (while /healthz stays 200), keeps the result of the job that finished
 * during the lock, fails and re-runs nothing, and recovers on its own once
 * the lock is released.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { waitUntil } from "../../src/testing.ts";
import { daemonDir, spawnDaemon } from "../support/daemon_process.ts";
import { denoScript, lines } from "../support/processes.ts";

const LOCKER = new URL("../runtime/child_lock.ts", import.meta.url).pathname;
/** Far below the lock's hold: the daemon's writes give up and it must ride the outage out. */
const BUSY_TIMEOUT_MS = 200;

const SCHEDULES = `version: 1
queues:
  default: { concurrency: 2 }
schedules:
  - id: tick
    every: 1s
    run:
      command: ["sh", "-c", "echo \\"start $JOBS_OCCURRENCE $JOBS_ATTEMPT\\" >> ledger; while [ ! -e gate ]; do sleep 0.02; done; echo \\"end $JOBS_OCCURRENCE\\" >> ledger"]
      cwd: .
`;

interface Ledger {
  starts: { occurrence: string; attempt: string }[];
  ends: Set<string>;
}

async function readLedger(path: string): Promise<Ledger> {
  const text = await Deno.readTextFile(path).catch(() => "");
  const starts: Ledger["starts"] = [];
  const ends = new Set<string>();
  for (const row of text.split("\n").filter(Boolean)) {
    const [kind, occurrence, attempt] = row.split(" ");
    if (kind === "start") starts.push({ occurrence: occurrence!, attempt: attempt! });
    else ends.add(occurrence!);
  }
  return { starts, ends };
}

async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, body: await response.text() };
}

/** Reads the file on a connection of this process: WAL readers never wait for the write lock. */
function jobRows(db: string): { occurrence: string; state: string; attempt: number }[] {
  const conn = new DatabaseSync(db);
  try {
    return conn.prepare(
      `SELECT occurrence, state, attempt FROM jobs WHERE schedule_id = ? ORDER BY id`,
    ).all("tick") as { occurrence: string; state: string; attempt: number }[];
  } finally {
    conn.close();
  }
}

function attemptRows(db: string): { occurrence: string; attempt: number; outcome: string }[] {
  const conn = new DatabaseSync(db);
  try {
    return conn.prepare(
      `SELECT j.occurrence AS occurrence, a.attempt AS attempt, a.outcome AS outcome
       FROM attempts a JOIN jobs j ON j.id = a.job_id ORDER BY a.job_id, a.attempt`,
    ).all() as { occurrence: string; attempt: number; outcome: string }[];
  } finally {
    conn.close();
  }
}

Deno.test({
  name:
    "the file locked by another process for longer than the busy timeout fails no job and the daemon recovers",
  sanitizeResources: false,
  fn: async () => {
    await using dir = await daemonDir();
    const { db, config, ledger } = dir;
    let locker: Deno.ChildProcess | null = null;
    try {
      await Deno.writeTextFile(config, SCHEDULES.replace("cwd: .", `cwd: ${dir.path}`));
      // While the gate file is missing, every run waits for it (after its start line).
      const gate = `${dir.path}/gate`;
      await Deno.writeTextFile(gate, "");
      await using daemon = spawnDaemon(["--db", db, "--config", config, "--node", "d1"], {
        name: "d1",
        env: { JOBS_BUSY_TIMEOUT: String(BUSY_TIMEOUT_MS), JOBS_LISTEN: "127.0.0.1:0" },
        signal: AbortSignal.timeout(90_000),
      });
      const events = daemon.events;
      const listening = await daemon.waitFor("http.listening", undefined, 30_000);
      const port = Number(listening.port);

      // Running normally: occurrences complete, the node is ready.
      await waitUntil("two occurrences ran", async () => {
        return (await readLedger(ledger)).ends.size >= 2;
      }, { timeoutMs: 30_000 });
      assert.equal((await get(port, "/readyz")).status, 200);

      // Close the gate: the next occurrence starts and waits, in flight.
      await Deno.remove(gate);
      const inFlight = await waitUntil("an occurrence waiting at the gate", async () => {
        const { starts, ends } = await readLedger(ledger);
        return starts.find((s) => !ends.has(s.occurrence))?.occurrence;
      }, { timeoutMs: 30_000 });
      // Take the lock, then let the occurrence finish: its result cannot be written.
      locker = denoScript(LOCKER, [db], { stdin: "piped", stdout: "piped" }).spawn();
      const lockerLines = lines(locker.stdout);
      assert.equal((await lockerLines.next()).value, "locked");
      await Deno.writeTextFile(gate, "");
      await waitUntil(
        "the in-flight occurrence finished during the lock",
        async () => (await readLedger(ledger)).ends.has(inFlight),
      );

      const degraded = await waitUntil("/readyz reports degraded", async () => {
        const ready = await get(port, "/readyz");
        return ready.status === 503 ? ready : null;
      }, { timeoutMs: 20_000 });
      assert.match(degraded.body, /^degraded: store calls failing since \S+ \(.+locked.*\)\n$/);
      assert.equal((await get(port, "/healthz")).status, 200, "/healthz stays 200");
      // Hold on while the producer's writes fail three times in a row: each
      // waited out the whole busy timeout, so the lock outlasted it thrice.
      const metrics = await waitUntil("three failed writes of the producer", async () => {
        const page = (await get(port, "/metrics")).body;
        const failed = /^jobs_store_errors_total\{source="producer:default"\} (\d+)$/m.exec(page);
        return Number(failed?.[1] ?? 0) >= 3 ? page : null;
      }, { timeoutMs: 20_000 });
      assert.match(metrics, /^jobs_store_degraded 1$/m);
      assert.match(metrics, /^jobs_results_unrecorded [1-9]\d*$/m);
      assert.equal((await get(port, "/readyz")).status, 503, "still degraded");
      // The result waits in the daemon: the row is still executing, on attempt 1.
      const waiting = jobRows(db).find((j) => j.occurrence === inFlight);
      assert.deepEqual(waiting && [waiting.state, waiting.attempt], ["executing", 1]);

      // Release: the daemon recovers on its own.
      await locker.stdin.close();
      assert.equal((await lockerLines.next()).value, "released");
      assert.equal((await locker.status).code, 0);
      locker = null;
      await waitUntil("the waiting result was written", () => {
        const row = jobRows(db).find((j) => j.occurrence === inFlight);
        return row?.state === "completed";
      }, { timeoutMs: 20_000 });
      await waitUntil("/readyz ready again", async () => {
        return (await get(port, "/readyz")).status === 200;
      }, { timeoutMs: 20_000 });
      const before = (await readLedger(ledger)).ends.size;
      await waitUntil("occurrences run again", async () => {
        return (await readLedger(ledger)).ends.size >= before + 2;
      }, { timeoutMs: 30_000 });

      const status = await daemon.stop("SIGTERM");
      assert.equal(status.code, 0, JSON.stringify(events));

      // Every occurrence ran exactly once, on its first attempt, and completed.
      const { starts, ends } = await readLedger(ledger);
      const ran = starts.map((s) => s.occurrence);
      assert.equal(new Set(ran).size, ran.length, `an occurrence ran twice: ${ran.join(" ")}`);
      assert.ok(starts.every((s) => s.attempt === "1"), JSON.stringify(starts));
      assert.deepEqual([...ends].sort(), ran.slice().sort());
      const rows = jobRows(db);
      const finished = rows.filter((j) => j.attempt > 0);
      assert.deepEqual(finished.map((j) => j.occurrence).sort(), ran.slice().sort());
      assert.ok(finished.every((j) => j.state === "completed"), JSON.stringify(rows));
      assert.ok(
        rows.every((j) => !["retryable", "discarded", "executing"].includes(j.state)),
        JSON.stringify(rows),
      );
      const attempts = attemptRows(db);
      assert.ok(attempts.every((a) => a.attempt === 1 && a.outcome === "completed"));
      assert.equal(attempts.length, ran.length);

      // Logged at a bounded rate: the outage began and ended once.
      const named = (name: string) => events.filter((e) => e.event === name);
      assert.equal(named("store.degraded").length, 1, JSON.stringify(events));
      assert.equal(named("store.recovered").length, 1, JSON.stringify(events));
      assert.ok(named("store.error").length <= 1, JSON.stringify(named("store.error")));
      assert.equal(named("job.exception").length, 0);
      assert.ok(events.every((e) => typeof e.time === "string"), "every line is stamped");
      const start = named("job.start")[0];
      assert.equal(typeof start?.waitMs, "number");
    } finally {
      if (locker) {
        await locker.stdin.close().catch(() => {});
        await locker.status;
      }
    }
  },
});
