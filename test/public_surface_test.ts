/**
 * The library's public surface, beside the invariants of the code: the
 * package root (`"."`, `src/mod.ts`) stays what an application needs, so it
 * cannot grow back into a list of internals without a test saying so, and
 * every export of `deno.json` resolves, under its path and under the
 * package's own name (which the doc examples import).
 */

import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const ROOT = new URL("../", import.meta.url);

/** How many names `"."` may export: what an application needs, not what the library has. */
const ROOT_LIMIT = 40;

/**
 * Names that once leaked into `"."` and belong to the runtime, the
 * adapters, the runners or a sub-path: none may come back.
 */
const INTERNALS = [
  "stageJobs",
  "rescueOrphans",
  "pruneJobs",
  "planSchedules",
  "syncSchedules",
  "ScheduleSource",
  "SqliteStore",
  "PostgresStore",
  "openSqliteStore",
  "openPostgresStore",
  "openStore",
  "Store",
  "StoreTx",
  "CsvWriter",
  "NdjsonWriter",
  "outputKey",
  "openStorage",
  "commandWorker",
  "httpWorker",
  "fanoutWorker",
  "ingestWorker",
  "ingestJob",
  "reportWorker",
  "loadWorkersModule",
  "describeError",
  "redact",
  "defaultNodeName",
  "DEFAULT_ARGS_LIMIT",
  "humanLogger",
  "jsonLogger",
  "jsonLinesLogger",
];

interface DenoJson {
  name: string;
  exports: Record<string, string>;
}

async function denoJson(): Promise<DenoJson> {
  return JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT)));
}

/** Every name `file` exports, values and types, as `deno doc` lists them. */
async function exportedNames(file: string): Promise<string[]> {
  const url = new URL(file, ROOT);
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", fileURLToPath(url)],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const doc = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    nodes: Record<string, { symbols: { name: string }[] }>;
  };
  const symbols = doc.nodes[url.href]?.symbols ?? [];
  return [...new Set(symbols.map((s) => s.name))].sort();
}

Deno.test(`the package root exports at most ${ROOT_LIMIT} names, none of them an internal`, async () => {
  const { exports } = await denoJson();
  assert.equal(exports["."], "./src/mod.ts");
  const names = await exportedNames(exports["."]!);
  assert.ok(
    names.length <= ROOT_LIMIT,
    `"." exports ${names.length} names (at most ${ROOT_LIMIT}): ${names.join(", ")}; ` +
      `put what an application does not need in a sub-path`,
  );
  assert.deepEqual(names.filter((name) => INTERNALS.includes(name)), []);
  const entries = ["openJobs", "Jobs", "defineWorker", "defineWorkflow", "definePipeline"];
  for (const entry of [...entries, "defineReport"]) {
    assert.ok(names.includes(entry), `"." lacks ${entry}`);
  }
});

Deno.test("every export of deno.json resolves, by path and by the package's name", async () => {
  const { name, exports } = await denoJson();
  assert.ok(Object.keys(exports).length > 1);
  for (const [subpath, file] of Object.entries(exports)) {
    const url = new URL(file, ROOT).href;
    const module = await import(url);
    assert.ok(Object.keys(module).length > 0, `${subpath} (${file}) exports no value`);
    const specifier = subpath === "." ? name : `${name}/${subpath.slice(2)}`;
    assert.equal(import.meta.resolve(specifier), url, specifier);
    // Its module doc says what it is for, with an example that `deno test --doc` runs.
    const text = await Deno.readTextFile(new URL(file, ROOT));
    assert.match(text, /^\/\*\*\n/, `${file} opens with its module doc`);
    const moduleDoc = text.slice(0, text.indexOf("*/"));
    assert.match(moduleDoc, /@module/, `${file}: the first comment is the module doc`);
    assert.match(moduleDoc, /```ts\n/, `${file}: the module doc has an example`);
  }
});
