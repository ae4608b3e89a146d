/**
 * `--reason` on every audited command: a placeholder (`...`, a runbook line
 * pasted unedited, `TODO`) is refused before anything changes; a reason is
 * taken.
 */

import assert from "node:assert/strict";
import type { Command } from "commander";
import { placeholderReason } from "../../src/admin/audit.ts";
import { buildProgram } from "../../src/cli/program.ts";
import { runJobs, seedJobs, withFiles } from "../support/cli.ts";
import { withStore } from "../support/stores.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const ENV = { USER: "ada" };
const SCHEDULES = `version: 1
schedules:
  - id: clock
    cron: "0 3 * * *"
    run: { command: ["true"] }
  - id: reindex
    manual: true
    guard: on-call only
    runs_where: staging
    run: { command: ["echo", "reindex"] }
`;

/** Every command (and subcommand) that takes `--reason` for the audit trail, as its words. */
function reasonCommands(): string[][] {
  const program = buildProgram({
    clock: { now: () => NOW, sleep: () => Promise.resolve() },
    logger: () => {},
    out: () => {},
    err: () => {},
    env: () => undefined,
    color: false,
    program: "jobsctl",
    osUser: () => "tester",
    demo: () => Promise.resolve(),
    onSignal: () => () => {},
    exit: () => {
      throw new Error("exit");
    },
    confirm: () => Promise.resolve(false),
    readStdin: () => Promise.resolve(""),
  });
  const found: string[][] = [];
  const walk = (command: Command, path: string[]) => {
    for (const sub of command.commands) {
      const words = [...path, sub.name()];
      const reason = sub.options.find((o) => o.long === "--reason");
      // `drops --reason` filters by a drop's reason; the audit's is "why, ...".
      if (reason?.description.startsWith("why")) found.push(words);
      walk(sub, words);
    }
  };
  walk(program, []);
  return found;
}

/** The words of a pasted line: single-quoted words kept whole, as a shell would. */
function shellWords(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

Deno.test("every command that takes --reason refuses a placeholder reason before acting", async () => {
  const commands = reasonCommands();
  const names = commands.map((c) => c.join(" "));
  for (const expected of ["replay", "retry", "cancel", "disable", "enable", "pause", "run"]) {
    assert.ok(names.includes(expected), `${expected} not among ${names.join(", ")}`);
  }
  assert.ok(names.some((n) => n.startsWith("workflow ")), names.join(", "));
  await withFiles(SCHEDULES, async ({ db }) => {
    for (const words of commands) {
      const refused = await runJobs([...words, "--reason", "...", "--db", db], {
        now: NOW,
        env: ENV,
      });
      assert.equal(refused.code, 2, `${words.join(" ")}: ${refused.err}`);
      assert.match(
        refused.err,
        /option "--reason <text>": "\.\.\." is not a reason \(it is only punctuation\): write why/,
        words.join(" "),
      );
    }
  });
});

Deno.test("placeholderReason() refuses placeholders and takes short real reasons", () => {
  for (
    const placeholder of [
      "",
      "   ",
      "...",
      "…",
      "-",
      "<reason>",
      "<...>",
      "TODO",
      "todo.",
      "reason",
      "xxx",
      "XX",
      "TBD",
      "<why you are disabling it>",
    ]
  ) {
    assert.notEqual(placeholderReason(placeholder), null, JSON.stringify(placeholder));
  }
  for (
    const reason of ["typo", "outage", "x", "vendor API down", "reason: disk full", "<3 the vendor"]
  ) {
    assert.equal(placeholderReason(reason), null, reason);
  }
});

Deno.test("a runbook line pasted unedited is refused and changes nothing; with a reason it acts", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    const [id] = await seedJobs(db, NOW, [{
      occurrence: "clock@2026-06-01T03:00:00.000Z",
      scheduleId: "clock",
    }], { claim: 1, complete: 1 });
    const book = await runJobs(["runbook", "--db", db, "--config", config], { now: NOW });
    assert.equal(book.code, 0, book.err);
    const lines = book.out.split("\n").map((l) => l.trim()).filter((l) =>
      l.startsWith("jobsctl ") && l.includes("--reason")
    );
    assert.ok(lines.length >= 8, book.out);
    for (const line of lines) {
      assert.match(line, / --reason '<why you are [^'>]+>'/, line);
      const pasted = await runJobs(shellWords(line).slice(1), { now: NOW, env: ENV });
      assert.equal(pasted.code, 2, `${line}: ${pasted.err}`);
      assert.match(pasted.err, /is not a reason \(it is a placeholder in angle brackets/, line);
    }
    await withStore(db, async (store) => {
      for (const target of ["schedule:clock", "schedule:reindex", "queue:default", `job:${id}`]) {
        assert.deepEqual(await store.auditList({ target }), [], target);
      }
      assert.equal((await store.jobGet({ id: id! }))?.state, "completed");
    });

    const disable = lines.find((l) => l.includes(" disable clock "))!;
    const written = shellWords(disable).slice(1).map((w) =>
      w.startsWith("<why") ? "vendor API down until 14:00" : w
    );
    const done = await runJobs(written, { now: NOW, env: ENV });
    assert.equal(done.code, 0, done.err);
    await withStore(db, async (store) => {
      const [row] = await store.schedulesList({ ids: ["clock"] });
      assert.deepEqual([row?.enabled, row?.disabledReason], [false, "vendor API down until 14:00"]);
    });
  });
});
