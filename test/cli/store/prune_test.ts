/**
 * `jobs prune`: old final jobs deleted now, as the pruner does; counted only
 * with `--dry-run`.
 */

import assert from "node:assert/strict";
import { runJobs, seedJobs, withFiles } from "../../support/cli.ts";
import { withStore } from "../../support/stores.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const ENV = { USER: "ada" };

Deno.test("jobs prune --dry-run counts and deletes nothing; prune deletes old final jobs", async () => {
  await withFiles("version: 1\nschedules: []\n", async ({ db, dir }) => {
    const ids = await seedJobs(db, NOW, [{}, {}, {}], { claim: 3, complete: 2 });
    const config = `${dir}/none.yaml`;
    const dry = await runJobs(["prune", "--db", db, "--completed", "1s", "--dry-run"], {
      now: NOW,
      env: { JOBS_CONFIG: config },
    });
    // JOBS_CONFIG names a missing file: an explicit file must load.
    assert.equal(dry.code, 1);
    assert.match(dry.err, /none\.yaml: 1 error/);

    const counted = await runJobs(["prune", "--db", db, "--completed", "1s", "--dry-run"], {
      now: NOW,
    });
    assert.equal(counted.code, 0, counted.err);
    assert.match(
      counted.out,
      /^would delete 2 jobs \(completed older than 1s, cancelled older than/,
    );
    await withStore(db, async (store) => assert.equal((await store.jobsList({ ids })).length, 3));

    const pruned = await runJobs(["prune", "--db", db, "--completed", "1s", "--reason", "disk"], {
      now: NOW,
      env: ENV,
    });
    assert.match(pruned.out, /^deleted 2 jobs/);
    await withStore(db, async (store) => {
      assert.deepEqual((await store.jobsList({ ids })).map((j) => j.state), ["executing"]);
      // Only the real prune is audited, not the dry runs.
      const audit = await store.auditList({ target: "store" });
      assert.deepEqual(audit.map((a) => [a.action, a.actor, a.reason, a.details.deleted]), [
        ["store.prune", "ada", "disk", 2],
      ]);
    });
  });
});
