/**
 * The library imported from another project, as a user would: a folder
 * outside the repository with its own deno.json and no import map, a
 * program importing `src/mod.ts` by absolute path, run with only the
 * permissions the README documents.
 */

import assert from "node:assert/strict";
import { tempDir } from "../support/stores.ts";

const MOD = new URL("../../src/mod.ts", import.meta.url).href;

// The README's transaction example, with the worker and table it needs.
const PROGRAM = `
import { defineWorker, openJobs } from ${JSON.stringify(MOD)};

const welcomed = Promise.withResolvers<number>();
const welcome = defineWorker<{ signupId: number }>({
  name: "welcome",
  perform(args) {
    welcomed.resolve(args.signupId);
  },
});

const jobs = await openJobs("./app.db", { workers: [welcome] });
await jobs.transaction(async (tx) => {
  tx.db.exec("CREATE TABLE IF NOT EXISTS signups (id INTEGER PRIMARY KEY, email TEXT)");
});
const { signupId } = await jobs.transaction(async (tx) => {
  const row = tx.db.prepare("INSERT INTO signups (email) VALUES (?) RETURNING id")
    .get("ada@example.com") as { id: number };
  await jobs.enqueue(welcome, { signupId: row.id }, { tx });
  return { signupId: row.id };
});
// Rolled back: neither the row nor its job exists afterwards.
await jobs.transaction(async (tx) => {
  tx.db.prepare("INSERT INTO signups (email) VALUES (?)").run("grace@example.com");
  await jobs.enqueue(welcome, { signupId: 99 }, { tx });
  throw new Error("rollback");
}).catch(() => {});

jobs.start({ queues: { default: 1 } });
const ran = await welcomed.promise;
await jobs.close({ grace: 1000 });
const { DatabaseSync } = await import("node:sqlite");
const db = new DatabaseSync("./app.db", { readOnly: true });
const signups = (db.prepare("SELECT count(*) AS n FROM signups").get() as { n: number }).n;
const queued = (db.prepare("SELECT count(*) AS n FROM jobs").get() as { n: number }).n;
db.close();
console.log(JSON.stringify({ signupId, ran, signups, queued }));
`;

Deno.test("the library imports by path from a project with no import map, and enqueues in the caller's transaction", async () => {
  const dir = await tempDir();
  try {
    await Deno.writeTextFile(`${dir.path}/deno.json`, "{}\n");
    await Deno.writeTextFile(`${dir.path}/main.ts`, PROGRAM);
    const run = (args: string[]) =>
      new Deno.Command(Deno.execPath(), {
        args,
        cwd: dir.path,
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(90_000),
      }).output();
    const checked = await run(["check", "main.ts"]);
    assert.equal(checked.code, 0, new TextDecoder().decode(checked.stderr));
    // The permissions the README documents: read and write the database's folder.
    const ran = await run([
      "run",
      `--allow-read=${dir.path}`,
      `--allow-write=${dir.path}`,
      "main.ts",
    ]);
    const stderr = new TextDecoder().decode(ran.stderr);
    assert.equal(ran.code, 0, stderr);
    assert.doesNotMatch(stderr, /not a dependency|NotCapable|Requires .* access/);
    const lines = new TextDecoder().decode(ran.stdout).trim().split("\n");
    assert.deepEqual(JSON.parse(lines.at(-1)!), { signupId: 1, ran: 1, signups: 1, queued: 1 });
  } finally {
    await dir.cleanup();
  }
});
