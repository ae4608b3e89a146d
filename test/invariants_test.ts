/**
 * Invariants of ARCHITECTURE.md that are about the code itself: where time
 * is read and where SQL lives.
 */

import assert from "node:assert/strict";
import { join, relative } from "node:path";
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
