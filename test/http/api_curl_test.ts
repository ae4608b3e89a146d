/**
 * `/api/v1` from a program that is not TypeScript: `curl` against a real
 * `jobs daemon` on a real port, on SQLite and on PostgreSQL. The token is
 * minted as an operator would (`jobs tokens create --json`); curl enqueues
 * a job, waits for the daemon's worker to run it by polling the job, and
 * shows it: tenant from the token, the audit naming the token. The old
 * `--token` still reads as an installation-wide admin.
 */

import assert from "node:assert/strict";
import { waitUntil } from "../../src/testing.ts";
import { daemonDir, jobsCommand, spawnDaemon } from "../support/daemon_process.ts";
import { postgresLocation } from "../support/pg_schema.ts";

const MOD = new URL("../../src/mod.ts", import.meta.url).href;

const WORKERS = `import { defineWorker } from "${MOD}";
export const send_receipt = defineWorker<{ order: number }>({
  name: "send_receipt",
  perform: async ({ order }) => {
    await Deno.writeTextFile("LEDGER", "receipt " + order + "\\n", { append: true });
    return { sent: order };
  },
});
`;

const SCHEDULES = `version: 1
workers: ./workers.ts
queues:
  mail: { concurrency: 2 }
`;

async function curl(...args: string[]): Promise<{ status: number; body: string }> {
  const out = await new Deno.Command("curl", {
    args: ["-sS", "--max-time", "20", "-w", "\n%{http_code}", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const at = text.lastIndexOf("\n");
  return { status: Number(text.slice(at + 1)), body: text.slice(0, at) };
}

for (const backend of ["sqlite", "postgres"] as const) {
  Deno.test({
    name:
      `${backend}: curl enqueues a job through a running daemon's /api/v1, waits for it to run, and shows it`,
    sanitizeResources: false,
    fn: async () => {
      await using dir = await daemonDir();
      await using pg = postgresLocation();
      const db = backend === "sqlite" ? dir.db : pg.url;
      await Deno.writeTextFile(`${dir.path}/workers.ts`, WORKERS.replace("LEDGER", dir.ledger));
      await Deno.writeTextFile(dir.config, SCHEDULES);
      const migrated = await jobsCommand(["migrate", "--db", db]);
      assert.equal(migrated.code, 0, migrated.stderr);
      const minted = await jobsCommand([
        "tokens",
        "create",
        "--db",
        db,
        "--name",
        "shop",
        "--role",
        "operator",
        "--tenant",
        "acme",
        "--json",
      ]);
      assert.equal(minted.code, 0, minted.stderr);
      const secret = JSON.parse(minted.stdout).token as string;
      assert.match(secret, /^jobs_/);

      await using daemon = spawnDaemon(
        [
          "--db",
          db,
          "--config",
          dir.config,
          "--node",
          "d1",
          "--listen",
          "127.0.0.1:0",
          "--token",
          "old-single-token",
        ],
        { name: "d1", signal: AbortSignal.timeout(120_000) },
      );
      const listening = await daemon.waitFor("http.listening", undefined, 60_000);
      const base = `http://127.0.0.1:${listening.port}/api/v1`;
      const auth = ["-H", `Authorization: Bearer ${secret}`];

      const made = await curl(
        "-X",
        "POST",
        ...auth,
        "-H",
        "Content-Type: application/json",
        "--data",
        '{"worker":"send_receipt","args":{"order":42},"queue":"mail"}',
        `${base}/jobs`,
      );
      assert.equal(made.status, 201, made.body);
      const { id } = JSON.parse(made.body);

      const detail = await waitUntil(`job ${id} to complete`, async () => {
        const shown = await curl(...auth, `${base}/jobs/${id}`);
        assert.equal(shown.status, 200, shown.body);
        const answer = JSON.parse(shown.body);
        if (answer.job.state === "failed" || answer.job.state === "discarded") {
          throw new Error(`job ${id} ended ${answer.job.state}: ${shown.body}\n${daemon.log()}`);
        }
        return answer.job.state === "completed" ? answer : null;
      }, { timeoutMs: 60_000, intervalMs: 200 });
      assert.equal(detail.job.worker, "send_receipt");
      assert.equal(detail.job.tenant, "acme");
      assert.deepEqual(detail.job.args, { order: 42 });
      assert.equal(detail.attempts.length, 1);
      assert.equal(detail.audit[0].actor, "token:shop");
      assert.equal(await Deno.readTextFile(dir.ledger), "receipt 42\n");

      // The state filter finds it, with the tenant from the token.
      const listed = await curl(...auth, `${base}/jobs?state=completed&queue=mail`);
      assert.equal(listed.status, 200, listed.body);
      assert.deepEqual(JSON.parse(listed.body).jobs.map((j: { id: number }) => j.id), [id]);

      // The old single token is an installation-wide admin.
      const me = await curl("-H", "Authorization: Bearer old-single-token", `${base}/me`);
      assert.equal(me.status, 200, me.body);
      assert.deepEqual(JSON.parse(me.body).roles, ["admin"]);
      assert.equal(JSON.parse(me.body).tenant, null);

      const none = await curl(`${base}/jobs`);
      assert.equal(none.status, 401);
      assert.equal(JSON.parse(none.body).error.code, "unauthorized");
      // The daemon's own routes answer to the old token only.
      const readyz = await curl(...auth, `http://127.0.0.1:${listening.port}/readyz`);
      assert.equal(readyz.status, 401);
      assert.equal((await daemon.stop("SIGTERM")).code, 0, daemon.log());
    },
  });
}
