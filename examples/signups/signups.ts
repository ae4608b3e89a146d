/**
 * The worked example of docs/library.md: a signup writes its row and
 * enqueues its welcome mail in one transaction, a signup that fails leaves
 * neither, and a runtime runs the mail, then stops. The app's table and the
 * jobs share one SQLite file, ./app.db. From this folder:
 *
 *   npx --yes deno@2.9.6 run --allow-read=. --allow-write=. signups.ts
 *
 * (with Deno on PATH, `deno run --allow-read=. --allow-write=. signups.ts`).
 */

import { defineWorker, openJobs, silentLogger } from "../../src/mod.ts";

const mailed = Promise.withResolvers<void>();
const welcome = defineWorker<{ signupId: number; email: string }>({
  name: "welcome",
  queue: "email",
  perform(args, ctx) {
    console.log(`welcome mail to ${args.email} (signup ${args.signupId}, attempt ${ctx.attempt})`);
    mailed.resolve();
  },
});

// silentLogger: the default writes one JSON line per event to stderr.
const jobs = await openJobs("app.db", { workers: [welcome], logger: silentLogger });

/** Stores a signup and enqueues its welcome mail: both commit, or neither. */
async function signUp(email: string, fail?: string): Promise<void> {
  await jobs.transaction(async (tx) => {
    tx.db.exec("CREATE TABLE IF NOT EXISTS signups (id INTEGER PRIMARY KEY, email TEXT)");
    const row = tx.db.prepare("INSERT INTO signups (email) VALUES (?) RETURNING id")
      .get(email) as { id: number };
    const job = await jobs.enqueue(welcome, { signupId: row.id, email }, { tx });
    console.log(`signup ${row.id} (${email}): job ${job.id}, ${job.state}`);
    if (fail) throw new Error(fail); // rolls back the row and the job
  });
}

await signUp("ada@example.com");
await signUp("bob@example.com", "card declined").catch((error) => {
  console.log(`rolled back: ${error.message}`);
});

const runtime = await jobs.start({ queues: { email: 2 } });
await mailed.promise;
await runtime.stop({ grace: 5_000 }); // waits for running jobs; their results are written
const { n } = await jobs.transaction((tx) =>
  Promise.resolve(tx.db.prepare("SELECT count(*) AS n FROM signups").get() as { n: number })
);
console.log(`signups stored: ${n}`);
await jobs.close();
