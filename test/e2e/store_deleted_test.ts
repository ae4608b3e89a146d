/**
 * `jobs daemon` as a subprocess whose database file (with its -wal and
 * -shm) is deleted while a job runs: the daemon notices within seconds,
 * logs `store.degraded` naming the file, answers 503 on /readyz saying why,
 * lets the running job finish, logs that its result could not be recorded,
 * and exits 1 with a message that its last writes are lost. It creates no
 * new file at the path.
 */

import assert from "node:assert/strict";
import { waitUntil } from "../../src/testing.ts";
import { daemonDir, POLL, spawnDaemon } from "../support/daemon_process.ts";

async function readyz(port: number): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { status: response.status, body: await response.text() };
}

Deno.test({
  name:
    "a daemon whose database file is deleted answers 503, logs store.degraded naming the file and exits 1 saying its last writes are lost",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using dir = await daemonDir();
    const { db, config } = dir;
    const gate = `${dir.path}/gate`;
    // Each job waits for the gate, so the daemon has a job running when the file goes.
    await Deno.writeTextFile(
      config,
      `version: 1
queues:
  default: { concurrency: 1 }
schedules:
  - id: tick
    every: 1s
    run:
      command: ${
        JSON.stringify(["sh", "-c", 'while [ ! -e "$1" ]; do sleep 0.02; done', "sh", gate])
      }
`,
    );
    await using daemon = spawnDaemon([
      "--db",
      db,
      "--config",
      config,
      "--node",
      "d1",
      "--listen",
      "127.0.0.1:0",
      // Far longer than the test: the job ends when the test opens the gate.
      "--shutdown-grace",
      "120000",
    ], { signal: AbortSignal.timeout(180_000) });
    const listening = await daemon.waitFor("http.listening", undefined, 60_000);
    const port = Number(listening.port);
    const started = await daemon.waitFor("job.start", undefined, 60_000);
    assert.equal((await readyz(port)).status, 200, daemon.log());

    const inode = (await Deno.stat(db)).ino;
    for (const file of [db, `${db}-wal`, `${db}-shm`]) await Deno.remove(file);

    const degraded = await daemon.waitFor("store.degraded", undefined, 10_000);
    assert.equal(
      degraded.error,
      `the database file "${db}" was deleted or replaced while open (inode ${inode} -> missing)`,
      daemon.log(),
    );
    assert.equal(degraded.lost, true);
    const notReady = await waitUntil("/readyz to answer 503", async () => {
      const answer = await readyz(port);
      return answer.status === 503 ? answer : undefined;
    }, { timeoutMs: 10_000, ...POLL });
    assert.match(notReady.body, /^degraded: the database file ".*" was deleted or replaced/);
    assert.ok(notReady.body.includes(`"${db}"`), notReady.body);
    assert.equal(daemon.exited, null, "the 503 came before the exit");

    await Deno.writeTextFile(gate, "");
    // No signal: a signal now would be the operator insisting, and end it at once.
    const status = await waitUntil("the daemon to exit by itself", () => daemon.exited, {
      timeoutMs: 30_000,
      ...POLL,
    });
    await daemon.stop(); // only waits for the rest of its stderr: it has exited
    assert.equal(status.code, 1, daemon.log());
    const last = daemon.events.filter((e) => e.event === "text").map((e) => e.line);
    assert.deepEqual(last, [
      `jobs daemon: the database file "${db}" was deleted while the daemon ran; its last ` +
      `writes are lost; restart the daemon to create a new one`,
    ], daemon.log());
    const unrecorded = daemon.events.filter((e) => e.event === "job.unrecorded");
    assert.deepEqual(unrecorded.map((e) => e.job), [started.job], daemon.log());
    await assert.rejects(() => Deno.stat(db), Deno.errors.NotFound, "no new file at the path");
  },
});
