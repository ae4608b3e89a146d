/**
 * The `workers:` module: loading a temp module of workers, what it refuses,
 * and `jobs check` against it from the command line.
 */

import assert from "node:assert/strict";
import { relative } from "node:path";
import {
  loadWorkersModule,
  workerNames,
  WorkersModuleError,
} from "../../src/runners/workers_module.ts";
import { drainJobs } from "../../src/testing.ts";
import { runJobs } from "../support/cli.ts";
import { tempDir, tempJobs } from "../support/stores.ts";

const MOD = new URL("../../src/mod.ts", import.meta.url).href;
const FANOUT = new URL("../../src/runners/fanout.ts", import.meta.url).href;
const NOW = Date.UTC(2026, 0, 1);

/** Writes `name` in a fresh folder, importing the library as `jobs`; returns the folder. */
async function module(name: string, body: string) {
  const dir = await tempDir();
  const text = `import * as jobs from "${MOD}";\nimport * as fanout from "${FANOUT}";\n${body}\n`;
  await Deno.writeTextFile(`${dir.path}/${name}`, text);
  return { ...dir, file: `${dir.path}/${name}`, [Symbol.asyncDispose]: dir.cleanup };
}

const WORKERS = `
export const reindex = jobs.defineWorker({
  name: "reindex",
  perform: (args) => { globalThis.reindexed = [...(globalThis.reindexed ?? []), args.item]; },
});
export const listAccounts = fanout.defineSelection({ name: "list-accounts", list: () => ["a", "b"] });
const cleanup = jobs.defineWorker({ name: "cleanup", queue: "slow", perform: () => {} });
export default [cleanup, reindex];
export type Unused = { a: number };
`;

Deno.test("loadWorkersModule() returns the default and named workers once each", async () => {
  await using m = await module("workers.ts", WORKERS);
  const workers = await loadWorkersModule(m.file);
  assert.deepEqual(workers.map((w) => [w.name, w.queue]), [
    ["cleanup", "slow"],
    ["reindex", "default"],
    ["list-accounts", "default"],
  ]);
  assert.deepEqual(await workerNames(m.file), ["cleanup", "reindex", "list-accounts"]);

  // The workers run through the kernel like any other.
  await using t = await tempJobs(workers);
  await t.jobs.enqueue("reindex", { item: "acct-1" });
  assert.equal((await drainJobs(t.jobs)).completed, 1);
  assert.deepEqual((globalThis as { reindexed?: string[] }).reindexed, ["acct-1"]);
});

Deno.test("a relative path is read from the working directory", async () => {
  await using m = await module("relative.ts", WORKERS);
  const path = relative(Deno.cwd(), m.file);
  assert.ok(!path.startsWith("/"));
  assert.equal((await loadWorkersModule(path)).length, 3);
});

/** The reason a module is refused with. */
async function refusal(body: string): Promise<{ error: WorkersModuleError; file: string }> {
  await using m = await module("bad.ts", body);
  const error = await loadWorkersModule(m.file).then(
    () => assert.fail("the module was accepted"),
    (error) => error,
  );
  assert.ok(error instanceof WorkersModuleError, String(error));
  assert.equal(error.path, m.file);
  assert.ok(error.message.startsWith(`workers module ${JSON.stringify(m.file)}: `));
  return { error, file: m.file };
}

Deno.test("a module of anything but workers is refused, naming the export", async () => {
  assert.equal(
    (await refusal(`export const helper = () => 1;`)).error.reason,
    'export "helper" is a function, not a worker (make it with defineWorker)',
  );
  assert.equal(
    (await refusal(`export default [jobs.defineWorker({ name: "a", perform() {} }), 42];`)).error
      .reason,
    "export default[1] is number 42, not a worker (make it with defineWorker)",
  );
  assert.equal(
    (await refusal(`export const options = { name: "a", perform() {} };`)).error.reason,
    'export "options" is an object, not a worker (make it with defineWorker)',
  );
  assert.equal(
    (await refusal(`export const x = 1; export type T = 1;`)).error.reason,
    'export "x" is number 1, not a worker (make it with defineWorker)',
  );
  assert.equal(
    (await refusal(``)).error.reason,
    "exports no worker (export workers made with defineWorker)",
  );
});

Deno.test("two workers with one name, and names under jobs., are refused", async () => {
  assert.equal(
    (await refusal(`
      export const a = jobs.defineWorker({ name: "same", perform() {} });
      export const b = jobs.defineWorker({ name: "same", perform() {} });
    `)).error.reason,
    'export "b" and export "a" are both named "same"; worker names must be unique',
  );
  assert.equal(
    (await refusal(`export const c = jobs.defineWorker({ name: "jobs.command", perform() {} });`))
      .error.reason,
    'export "c" is named "jobs.command"; names under "jobs." belong to the daemon',
  );
});

Deno.test("a module that cannot be imported is refused, naming the file and the cause", async () => {
  const thrown = await refusal(`throw new Error("no database url");`);
  assert.equal(thrown.error.reason, "cannot be imported: no database url");
  const syntax = await refusal(`export const = ;`);
  assert.match(syntax.error.reason, /^cannot be imported: .+/);
  const missing = await loadWorkersModule("/nonexistent/workers.ts").catch((e) => e);
  assert.ok(missing instanceof WorkersModuleError);
  assert.match(
    missing.message,
    /^workers module "\/nonexistent\/workers\.ts": cannot be imported: .*nonexistent\/workers\.ts/,
  );
});

/** A schedules file beside the workers module. */
function schedules(worker: string, selection = "list-accounts"): string {
  return [
    "version: 1",
    "workers: ./workers.ts",
    "schedules:",
    "  - id: reindex-all",
    "    every: 1h",
    `    selection: { worker: ${selection} }`,
    `    run: { worker: ${worker} }`,
    "",
  ].join("\n");
}

Deno.test("jobs check accepts workers the module exports and names the line, field and value of one it does not", async () => {
  await using m = await module("workers.ts", WORKERS);
  const config = `${m.path}/schedules.yaml`;
  await Deno.writeTextFile(config, schedules("reindex"));
  const ok = await runJobs(["check", "--config", config], { now: NOW });
  assert.equal(ok.code, 0, ok.err);
  assert.match(ok.out, /valid, 1 schedule/);

  await Deno.writeTextFile(config, schedules("reindx", "list-acounts"));
  const bad = await runJobs(["check", "--config", config], { now: NOW });
  assert.equal(bad.code, 1);
  assert.equal(
    bad.err,
    [
      `${config}:6:26: schedule "reindex-all": selection.worker "list-acounts" is not a worker of ` +
      `"./workers.ts" (it exports "cleanup", "reindex", "list-accounts"); did you mean "list-accounts"?`,
      `${config}:7:20: schedule "reindex-all": run.worker "reindx" is not a worker of ` +
      `"./workers.ts" (it exports "cleanup", "reindex", "list-accounts"); did you mean "reindex"?`,
      `jobs check: ${config}: 2 errors`,
    ].join("\n"),
  );

  const json = await runJobs(["check", "--json", "--config", config], { now: NOW });
  const report = JSON.parse(json.out);
  assert.deepEqual(
    report.errors.map((e: Record<string, unknown>) => [e.code, e.line, e.field, e.value]),
    [["worker-unknown", 6, "selection.worker", "list-acounts"], [
      "worker-unknown",
      7,
      "run.worker",
      "reindx",
    ]],
  );
});

Deno.test("jobs check reports a workers module that cannot be loaded at the workers line", async () => {
  await using m = await module("workers.ts", `export const broken = 1;`);
  const config = `${m.path}/schedules.yaml`;
  await Deno.writeTextFile(config, schedules("reindex"));
  const result = await runJobs(["check", "--config", config], { now: NOW });
  assert.equal(result.code, 1);
  assert.equal(
    result.err.split("\n")[0],
    `${config}:2:10: workers module "./workers.ts" cannot be loaded: ` +
      `export "broken" is number 1, not a worker (make it with defineWorker)`,
  );
});
