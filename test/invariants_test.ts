/**
 * Invariants of ARCHITECTURE.md that are about the code itself: where time
 * is read, where SQL lives, and which way the imports of src/ point.
 */

import assert from "node:assert/strict";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

async function* sources(dir: string): AsyncGenerator<string> {
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) yield* sources(path);
    else if (/\.tsx?$/.test(entry.name)) yield path;
  }
}

Deno.test("nothing outside src/clock.ts reads the machine's time", async () => {
  const offenders: string[] = [];
  for await (const path of sources(join(ROOT, "src"))) {
    if (path.endsWith("src/clock.ts")) continue;
    const text = await Deno.readTextFile(path);
    for (const [i, line] of text.split("\n").entries()) {
      if (/Date\.now\(|new Date\(\s*\)/.test(line)) {
        offenders.push(`${relative(ROOT, path)}:${i + 1}`);
      }
    }
  }
  assert.deepEqual(offenders, []);
});

Deno.test("SQL lives only under src/store/", async () => {
  const sql =
    /\b(SELECT\s+[\w*]|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX))\b/;
  const offenders: string[] = [];
  for await (const path of sources(join(ROOT, "src"))) {
    if (path.includes("/src/store/")) continue;
    const text = await Deno.readTextFile(path);
    for (const [i, line] of text.split("\n").entries()) {
      if (sql.test(line)) offenders.push(`${relative(ROOT, path)}:${i + 1}: ${line.trim()}`);
    }
  }
  assert.deepEqual(offenders, []);
});

Deno.test("nothing outside src/store/ imports a store adapter", async () => {
  const adapter =
    /from\s+["'][^"']*store\/(sqlite|postgres)\/|import\(\s*["'][^"']*store\/(sqlite|postgres)\//;
  const offenders: string[] = [];
  for await (const path of sources(join(ROOT, "src"))) {
    if (path.includes("/src/store/")) continue;
    const text = await Deno.readTextFile(path);
    for (const [i, line] of text.split("\n").entries()) {
      if (adapter.test(line)) offenders.push(`${relative(ROOT, path)}:${i + 1}: ${line.trim()}`);
    }
  }
  for (const dir of ["main.ts", "bench", "examples"]) {
    const root = join(ROOT, dir);
    const paths = dir.endsWith(".ts") ? [root] : await Array.fromAsync(sources(root));
    for (const path of paths) {
      const text = await Deno.readTextFile(path);
      if (adapter.test(text)) offenders.push(relative(ROOT, path));
    }
  }
  assert.deepEqual(offenders, []);
});

/**
 * The layers of `src/`, lowest first: a folder (or a file directly under
 * `src/`) may import from its own layer and the layers before it, never from
 * one after it. The surface files (`mod.ts` and the sub-path exports) are the
 * top; nothing in `src/` imports them.
 */
const LAYERS: readonly (readonly string[])[] = [
  ["text"],
  ["clock.ts"],
  ["kernel"],
  ["process"],
  ["schedule"],
  ["workflow"],
  ["store"],
  ["ingest"],
  ["report"],
  ["workqueue"],
  ["config"],
  ["workqueue"],
  ["runners"],
  ["runtime"],
  ["admin"],
  ["jobs.ts"],
  ["http", "console"],
  ["tui"],
  ["cli"],
  ["mod.ts", "workflow.ts", "ingest.ts", "report.ts", "store.ts", "schedules.ts", "testing.ts"],
];

/**
 * The upward imports allowed, as `importer -> imported` (paths under
 * `src/`), each with why. None is left: a new upward import is a word
 * defined in the wrong room; move the word down instead.
 */
const UPWARD_ALLOWED: ReadonlyMap<string, string> = new Map();

/** The layer index of a path under `src/`: its first folder, or the file itself. */
function layerOf(path: string): number {
  const unit = path.split("/")[0]!;
  const index = LAYERS.findIndex((layer) => layer.includes(unit));
  if (index < 0) throw new Error(`src/${path}: ${unit} is in no layer of LAYERS`);
  return index;
}

/** The paths under `src/` one source file imports (static, type-only and dynamic). */
function importsOf(text: string, file: string): string[] {
  const found: string[] = [];
  const specifier = /\bfrom\s+["'](\.[^"']+)["']|\bimport\s*\(?\s*["'](\.[^"']+)["']/g;
  for (const match of text.matchAll(specifier)) {
    const target = relative(join(ROOT, "src"), join(dirname(file), match[1] ?? match[2]!));
    if (!target.startsWith("..")) found.push(target);
  }
  return found;
}

Deno.test("no import in src/ points up the layers", async () => {
  const upward: string[] = [];
  for await (const path of sources(join(ROOT, "src"))) {
    const from = relative(join(ROOT, "src"), path);
    const text = await Deno.readTextFile(path);
    for (const to of importsOf(text, path)) {
      if (layerOf(to) > layerOf(from)) upward.push(`${from} -> ${to}`);
    }
  }
  const unexpected = [...new Set(upward)].filter((edge) => !UPWARD_ALLOWED.has(edge)).sort();
  assert.deepEqual(unexpected, [], "imports pointing up the layers");
  const gone = [...UPWARD_ALLOWED.keys()].filter((edge) => !upward.includes(edge));
  assert.deepEqual(gone, [], "UPWARD_ALLOWED names imports that are gone: remove them");
});
