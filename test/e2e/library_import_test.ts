/**
 * The library imported from another project, as a user would: a folder
 * outside the repository with its own deno.json and no import map, a
 * program importing `src/mod.ts` (and each sub-path's file) by absolute
 * path, run with only the permissions docs/library.md documents (and
 * docs/postgresql.md, for PostgreSQL).
 */

import assert from "node:assert/strict";
import { postgresLocation } from "../support/pg_schema.ts";
import { tempDir } from "../support/stores.ts";

const MOD = new URL("../../src/mod.ts", import.meta.url).href;

/** The file of each sub-path of `deno.json`'s `exports`, by its name. */
const SUBPATHS = Object.fromEntries(
  ["workflow", "ingest", "report", "schedules", "store", "testing"].map((name) => [
    name,
    new URL(`../../src/${name}.ts`, import.meta.url).href,
  ]),
);

// Every sub-path used once: a workflow drained, a pipeline and a report
// checked, a schedules file parsed, the store read again through the seam.
const SUBPATH_PROGRAM = `
import { defineWorker, openJobs, silentLogger } from ${JSON.stringify(MOD)};
import { defineWorkflow } from ${JSON.stringify(SUBPATHS.workflow)};
import { checkPipeline } from ${JSON.stringify(SUBPATHS.ingest)};
import { checkReport } from ${JSON.stringify(SUBPATHS.report)};
import { parseSchedules } from ${JSON.stringify(SUBPATHS.schedules)};
import { openStore } from ${JSON.stringify(SUBPATHS.store)};
import { drainJobs } from ${JSON.stringify(SUBPATHS.testing)};

const count = defineWorker({ name: "count", perform: () => ({ result: 3 }) });
const tally = defineWorkflow({ id: "tally", steps: [{ id: "count", worker: count }] });
const jobs = await openJobs("./app.db", { workers: [count], workflows: [tally], logger: silentLogger });
const { id } = await jobs.startWorkflow("tally", {});
const { completed } = await drainJobs(jobs);
const run = (await jobs.store.workflowGet({ id }))?.run.state;
await jobs.close();

const { store } = await openStore("./app.db", { mode: "read" });
const stored = (await store.jobsList({})).length;
await store.close();

const pipeline = checkPipeline({
  id: "feed",
  source: { file: "./feed.ndjson" },
  key: "sku",
  steps: [],
  dropReasons: ["poison"],
  sink: { worker: "save" },
}).length;
const report = checkReport({ id: "bare" }).map((p) => p.code).includes("report-need-missing");
const schedules = parseSchedules("version: 1\\nschedules: []\\n", "schedules.yaml").ok;
console.log(JSON.stringify({ completed, run, stored, pipeline, report, schedules }));
`;

// The transaction example of docs/library.md, with the worker and table it needs.
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

/** The transaction example of docs/postgresql.md at `url`: `tx.sql` where SQLite has `tx.db`. */
function postgresProgram(url: string): string {
  return `
import { defineWorker, openJobs } from ${JSON.stringify(MOD)};

const welcomed = Promise.withResolvers<number>();
const welcome = defineWorker<{ signupId: number }>({
  name: "welcome",
  perform(args) {
    welcomed.resolve(args.signupId);
  },
});

const jobs = await openJobs({ db: ${JSON.stringify(url)}, workers: [welcome] });
await jobs.transaction(async (tx) => {
  await tx.sql\`CREATE TABLE IF NOT EXISTS signups (id bigserial PRIMARY KEY, email text)\`;
});
const { signupId } = await jobs.transaction(async (tx) => {
  const [row] = await tx.sql<{ id: string }[]>\`
    INSERT INTO signups (email) VALUES (\${"ada@example.com"}) RETURNING id\`;
  await jobs.enqueue(welcome, { signupId: Number(row.id) }, { tx });
  return { signupId: Number(row.id) };
});
// Rolled back: neither the row nor its job exists afterwards.
await jobs.transaction(async (tx) => {
  await tx.sql\`INSERT INTO signups (email) VALUES (\${"grace@example.com"})\`;
  await jobs.enqueue(welcome, { signupId: 99 }, { tx });
  throw new Error("rollback");
}).catch(() => {});

jobs.start({ queues: { default: 1 } });
const ran = await welcomed.promise;
const counts = await jobs.transaction(async (tx) => {
  const [row] = await tx.sql<{ signups: number; queued: number }[]>\`
    SELECT (SELECT count(*)::int FROM signups) AS signups, (SELECT count(*)::int FROM jobs) AS queued\`;
  return row;
});
await jobs.close({ grace: 1000 });
console.log(JSON.stringify({ signupId, ran, ...counts }));
`;
}

/**
 * Writes `program` as main.ts of a folder with an empty deno.json,
 * type-checks it, runs it with `permissions` (the guides', given the
 * folder) and returns what its last line printed.
 */
async function runProgram(
  program: string,
  permissions: (dir: string) => string[],
): Promise<unknown> {
  const dir = await tempDir();
  try {
    await Deno.writeTextFile(`${dir.path}/deno.json`, "{}\n");
    await Deno.writeTextFile(`${dir.path}/main.ts`, program);
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
    const ran = await run(["run", ...permissions(dir.path), "main.ts"]);
    const stderr = new TextDecoder().decode(ran.stderr);
    assert.equal(ran.code, 0, stderr);
    assert.doesNotMatch(stderr, /not a dependency|NotCapable|Requires .* access/);
    const lines = new TextDecoder().decode(ran.stdout).trim().split("\n");
    return JSON.parse(lines.at(-1)!);
  } finally {
    await dir.cleanup();
  }
}

Deno.test("the library imports by path from a project with no import map, and enqueues in the caller's transaction", async () => {
  // The permissions docs/library.md documents: read and write the database's folder.
  const printed = await runProgram(
    PROGRAM,
    (dir) => [`--allow-read=${dir}`, `--allow-write=${dir}`],
  );
  assert.deepEqual(printed, { signupId: 1, ran: 1, signups: 1, queued: 1 });
});

Deno.test("each sub-path imports by path from a project with no import map", async () => {
  // The permissions docs/library.md documents, with the two variables npm:yaml
  // reads, which it lists for reading a schedules file.
  const printed = await runProgram(
    SUBPATH_PROGRAM,
    (dir) => [`--allow-read=${dir}`, `--allow-write=${dir}`, "--allow-env=LOG_TOKENS,LOG_STREAM"],
  );
  assert.deepEqual(printed, {
    completed: 1,
    run: "completed",
    stored: 1,
    pipeline: 0,
    report: true,
    schedules: true,
  });
});

Deno.test("the library on PostgreSQL imports from a project with no import map, and enqueues in the caller's transaction", async () => {
  await using pg = postgresLocation();
  const { hostname, port } = new URL(pg.url);
  // The permissions docs/postgresql.md documents: the server's address and the PG* variables
  // postgres.js reads for what the URL leaves out; nothing on disk.
  const printed = await runProgram(postgresProgram(pg.url), () => [
    `--allow-net=${hostname}:${port || 5432}`,
    "--allow-env=PG*",
  ]);
  assert.deepEqual(printed, { signupId: 1, ran: 1, signups: 1, queued: 1 });
});
