/** Command lines to paste: plain words as they are, others quoted so they paste as the same word. */

import assert from "node:assert/strict";
import { commandLine, shellQuote } from "../../src/text/shell.ts";

Deno.test("shellQuote() leaves plain words alone and quotes the rest so they paste as one word", () => {
  assert.equal(shellQuote("./jobs.db"), "./jobs.db");
  assert.equal(shellQuote("nightly@2026-03-08T07:00:00.000Z"), "nightly@2026-03-08T07:00:00.000Z");
  assert.equal(shellQuote("my jobs.db"), "'my jobs.db'");
  assert.equal(shellQuote("it's"), `'it'\\''s'`);
  assert.equal(shellQuote("a\x1b]0;owned\x07b"), `$'a\\x1b]0;owned\\x07b'`);
  assert.equal(shellQuote(""), "''");
});

Deno.test("commandLine() prints the program as given and quotes each word", () => {
  assert.equal(
    commandLine("deno run -A /opt/jobs/main.ts", ["migrate", "--db", "/tmp/my jobs.db"]),
    "deno run -A /opt/jobs/main.ts migrate --db '/tmp/my jobs.db'",
  );
});
