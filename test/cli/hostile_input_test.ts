/**
 * Values quoted back in errors: whatever a person types (or pastes by
 * mistake), every line the program prints is escaped and at most a few
 * hundred characters long, across the error paths of many commands.
 */

import assert from "node:assert/strict";
import { echo } from "../../src/cli/text.ts";
import { runJobs, withFiles } from "../support/cli.ts";
import { withStore } from "../support/stores.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const ENV = { USER: "ada" };
const SCHEDULES = `version: 1
schedules:
  - id: nightly
    cron: "0 3 * * *"
    run: { command: ["true"] }
  - id: reindex
    manual: true
    guard: on-call only
    runs_where: staging
    run: { command: ["true"] }
`;

/** What a terminal would act on: C0 (but newline), DEL, C1, bidi overrides and isolates. */
// deno-lint-ignore no-control-regex -- matching control characters is the point
const RAW_CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;
/** The longest line an error may print. */
const LINE_MAX = 500;

const MIB = 1 << 20;
const HOSTILE: [string, string][] = [
  ["CSI clear screen and colour", "\x1b[2J\x1b[31mred"],
  ["OSC 52 clipboard write", "\x1b]52;c;cm0gLXJmIH4=\x07"],
  ["OSC title", "\x1b]0;x\x07"],
  ["BEL", "ding\x07dong"],
  ["C1 CSI", "\x9b31mred"],
  ["bidi override and isolate", "abc\u202edcba\u2066x"],
  ["newline, tab and carriage return", "a\nb\tc\rd"],
  ["1 MiB of text", "x".repeat(MIB)],
  ["1 MiB of escape sequences", "\x1b[2J".repeat(MIB / 4)],
];

/** The command lines that quote `v` back in an error; `db` exists, `config` is SCHEDULES. */
function commandLines(v: string, db: string, config: string): string[][] {
  const store = ["--db", db];
  const enqueue = ["enqueue", "send", "--force", ...store];
  return [
    [...enqueue, "--args", v],
    [...enqueue, "--args-file", v],
    [...enqueue, "--in", v],
    [...enqueue, "--at", v],
    [...enqueue, "--priority", v],
    [...enqueue, "--queue", v],
    [...enqueue, "--unique-by", v],
    [...enqueue, "--unique-states", v],
    ["enqueue", v, "--force", ...store],
    ["enqueue", v, ...store, "--config", config],
    ["show", v, ...store],
    ["cancel", v, ...store, "--reason", "r"],
    ["replay", v, ...store, "--reason", "r", "--as-planned"],
    ["ls", "--state", v, ...store],
    ["retry", "--state", `retryable,${v}`, ...store],
    ["ls", `--${v}`, ...store],
    ["ls", `--limit=${v}`, ...store],
    ["status", v, ...store],
    [v],
    ["help", v],
    ["pause", v, ...store, "--config", config, "--reason", "r"],
    ["disable", v, ...store, "--config", config, "--reason", "r"],
    ["run", v, ...store, "--config", config],
    ["run", "reindex", ...store, "--config", config, "--reason", "r", "--environment", v],
    ["next", v, "--config", config],
    ["next", "nightly", "--config", config, "--from", v],
    ["runbook", v, ...store, "--config", config],
    ["prune", "--completed", v, ...store],
  ];
}

Deno.test("every line printed for a hostile value is escaped and at most a few hundred characters", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    await withStore(db, () => Promise.resolve());
    for (const [what, v] of HOSTILE) {
      for (const args of commandLines(v, db, config)) {
        const label = `${what}: ${echo(args.join(" "), 120)}`;
        const r = await runJobs(args, { now: NOW, env: ENV });
        assert.notEqual(r.code, 0, `${label} succeeded: ${echo(r.out)}`);
        assert.notEqual(r.err, "", `${label} printed no error`);
        for (const line of [...r.out.split("\n"), ...r.err.split("\n")]) {
          assert.ok(!RAW_CONTROL.test(line), `${label}: raw control character in ${echo(line)}`);
          assert.ok(
            line.length <= LINE_MAX,
            `${label}: a line of ${line.length} characters: ${echo(line, 300)}`,
          );
        }
      }
    }
    // Nothing hostile reached the store either.
    await withStore(db, async (store) => assert.deepEqual(await store.jobsList({}), []));
  });
});

Deno.test("an error quotes a hostile value escaped and cut, saying how much it left off", async () => {
  await withFiles(SCHEDULES, async ({ db }) => {
    await withStore(db, () => Promise.resolve());
    const run = (args: string[]) => runJobs(args, { now: NOW, env: ENV });

    const osc = await run([
      "enqueue",
      "send",
      "--force",
      "--db",
      db,
      "--args",
      "\x1b]52;c;eA==\x07",
    ]);
    assert.equal(
      osc.err,
      `jobs enqueue: --args "\\x1b]52;c;eA==\\x07" is not JSON: Unexpected token '\\x1b', ` +
        `"\\x1b]52;c;eA==\\x07" is not valid JSON`,
    );

    const long = await run(["show", "x".repeat(MIB), "--db", db]);
    assert.equal(long.code, 1);
    assert.equal(
      long.err,
      `jobs show: no job with occurrence "${"x".repeat(200)}… (${MIB - 200} more characters)" ` +
        `in the store "${db}"`,
    );

    const option = await run(["ls", "--\x1b]0;x\x07", "--db", db]);
    assert.equal(option.code, 2);
    assert.equal(
      option.err,
      `jobs ls: unknown option "--\\x1b]0;x\\x07" (run "jobsctl help ls" for the options)`,
    );

    // Commander quotes with ' and so may the value: it is quoted whole, as typed.
    const quoted = await run(["ls", "--limit", "it's 5", "--db", db]);
    assert.equal(
      quoted.err,
      `jobs ls: option "--limit <n>": "it's 5" is not a whole number from 1 to 10000 ` +
        `(run "jobsctl help ls" for the options)`,
    );

    const worker = await run(["enqueue", "\u202egnp.exe", "--force", "--db", db]);
    assert.equal(worker.code, 2);
    assert.equal(
      worker.err,
      `jobs enqueue: worker "\\u202egnp.exe" is not a printable identifier: 1-128 letters, ` +
        `digits or ._:/- starting with a letter or digit`,
    );
  });
});

Deno.test("echo() escapes control characters and cuts at the width shown, escapes included", () => {
  assert.equal(echo("plain"), "plain");
  assert.equal(echo("a\x1b[2Jb\nc\td\u202e"), "a\\x1b[2Jb\\nc\\td\\u202e");
  assert.equal(echo("abcdef", 4), "abcd… (2 more characters)");
  assert.equal(echo("abcde", 4), "abcd… (1 more character)");
  assert.equal(echo("abcd", 4), "abcd");
  // An escape is never split: "\x1b" shows as 4 characters, more than the 3 left.
  assert.equal(echo("ab\x1bc", 5), "ab… (2 more characters)");
  // Characters, not UTF-16 units: an emoji counts once and is never split.
  assert.equal(echo("😀😀😀", 2), "😀😀… (1 more character)");
  assert.equal(echo("x".repeat(MIB)).length, 200 + "… (1048376 more characters)".length);
});
