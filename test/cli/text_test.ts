/**
 * How the command line prints: words quoted to paste as the same word.
 */

import assert from "node:assert/strict";
import { shellQuote } from "../../src/cli/text.ts";

const ESC = "\x1b";
const RLO = "\u202e";

Deno.test("shellQuote leaves safe words alone and quotes the rest for a POSIX shell", () => {
  assert.equal(shellQuote("nightly@2026-03-08T07:00:00.000Z"), "nightly@2026-03-08T07:00:00.000Z");
  assert.equal(shellQuote("/var/lib/jobs/jobs.db"), "/var/lib/jobs/jobs.db");
  assert.equal(shellQuote("my jobs.db"), "'my jobs.db'");
  assert.equal(shellQuote("it's"), `'it'\\''s'`);
  assert.equal(shellQuote("a;b"), "'a;b'");
  assert.equal(shellQuote(`a\nb\\c`), `$'a\\nb\\\\c'`);
  assert.equal(shellQuote(`r${RLO}l`), `$'r\\u202el'`);
});

Deno.test("shellQuote output pastes into bash as the original word", async () => {
  const words = [
    "plain",
    "two words",
    "it's",
    `tab\there`,
    `esc${ESC}[1m`,
    `back\\slash'q`,
    "$(x)",
  ];
  for (const word of words) {
    const bash = new Deno.Command("bash", {
      args: ["-c", `printf %s ${shellQuote(word)}`],
      stdout: "piped",
    });
    const { stdout, success } = await bash.output();
    assert.ok(success);
    assert.equal(new TextDecoder().decode(stdout), word);
  }
});
