/**
 * The conventions every command keeps: the version three ways, `help
 * <command>`, the nearest command or option for a typo, the same global
 * options everywhere (or a word on why not), errors about the store that
 * name it, and the audit actor when the environment names nobody.
 */

import assert from "node:assert/strict";
import { buildProgram } from "../../src/cli/program.ts";
import { versionLine } from "../../src/cli/version.ts";
import { runJobs, withFiles } from "../support/cli.ts";
import { withStore } from "../support/stores.ts";

const NOW = Date.UTC(2026, 5, 1, 9);

function jobs(args: string[], env: Record<string, string> = {}) {
  return runJobs(args, { now: NOW, env });
}

Deno.test("jobs --version and -V print the same line as jobs version", async () => {
  const lines = [];
  for (const args of [["version"], ["--version"], ["-V"]]) {
    const r = await jobs(args);
    assert.equal(r.code, 0, r.err);
    lines.push(r.out);
  }
  assert.deepEqual(lines, [versionLine(), versionLine(), versionLine()]);
  assert.match(versionLine(), /^jobs \d+\.\d+\.\d+ \(deno \d+\.\d+\.\d+\)$/);
});

Deno.test("jobs help <command> prints that command's help, jobs help the program's", async () => {
  const help = await jobs(["help", "ls"]);
  assert.equal(help.code, 0, help.err);
  const flag = await jobs(["ls", "--help"]);
  assert.equal(help.out, flag.out);
  assert.match(help.out, /^Usage: jobsctl ls \[options\]/);
  assert.match(help.out, /--state <states>/);

  const program = await jobs(["help"]);
  assert.equal(program.code, 0, program.err);
  assert.match(program.out, /^Usage: jobsctl \[options\] \[command\]/);
  assert.match(program.out, /^ {2}status /m);
  assert.match(program.out, /^ {2}help \[command\] /m);

  const typo = await jobs(["help", "stauts"]);
  assert.equal(typo.code, 2);
  assert.equal(
    typo.err,
    `jobs help: unknown command "stauts" (jobsctl help lists them); did you mean "status" or "start"?`,
  );
});

Deno.test("an unknown command or option names the nearest one and the help to read", async () => {
  const command = await jobs(["stauts"]);
  assert.equal(command.code, 2);
  assert.equal(
    command.err,
    `jobs: unknown command "stauts"; did you mean "status" or "start"? (run "jobsctl help" for the commands)`,
  );
  const option = await jobs(["ls", "--stat", "x"]);
  assert.equal(option.code, 2);
  assert.equal(
    option.err,
    `jobs ls: unknown option "--stat"; did you mean "--state"? (run "jobsctl help ls" for the options)`,
  );
  const far = await jobs(["ls", "--frobnicate"]);
  assert.equal(
    far.err,
    `jobs ls: unknown option "--frobnicate" (run "jobsctl help ls" for the options)`,
  );
});

Deno.test("errors and warnings start with the name the hints use: jobsctl when a launcher ran", async () => {
  const named = (args: string[]) => runJobs(args, { now: NOW, name: "jobsctl" });
  const option = await named(["ls", "--stat", "x"]);
  assert.equal(option.code, 2);
  assert.equal(
    option.err,
    `jobsctl ls: unknown option "--stat"; did you mean "--state"? (run "jobsctl help ls" for the options)`,
  );
  const command = await named(["stauts"]);
  assert.match(command.err, /^jobsctl: unknown command "stauts"; /);
  const failed = await named(["retry"]);
  assert.equal(failed.code, 2);
  assert.match(failed.err, /^jobsctl retry: give job ids, or at least one filter /);
  await withFiles("schedules: {}\n", async ({ dir }) => {
    const missing = await runJobs(["ls", "--db", `${dir}/none.db`], {
      now: NOW,
      name: "jobsctl",
    });
    assert.equal(missing.code, 1);
    assert.match(
      missing.err,
      /^jobsctl ls: no file ".*none\.db" for the store \(from --db\); .* run: jobsctl migrate /,
    );
  });
  // Without a launcher the program is `jobs`, as its version line says.
  assert.match((await jobs(["retry"])).err, /^jobs retry: /);
});

Deno.test("jobs --help says the store is a SQLite file or a PostgreSQL database", async () => {
  const help = await jobs(["help"]);
  assert.equal(help.code, 0, help.err);
  assert.match(help.out, /SQLite file or a shared\s+PostgreSQL\s+database/);
});

Deno.test("every command takes --db, --config, --json, --actor and --reason, or says why not", async () => {
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
  const touches = program.commands.map((c) => c.name()).filter((n) =>
    n !== "version" && n !== "help"
  );
  assert.ok(touches.length >= 20, touches.join(" "));
  for (const name of touches) {
    const help = await jobs(["help", name]);
    assert.equal(help.code, 0, `${name}: ${help.err}`);
    const notTaken = help.out.split("Not taken here:\n")[1] ?? "";
    for (const flag of ["--db", "--config", "--json", "--actor", "--reason"]) {
      const taken = new RegExp(`^ {2}(-\\w, )?${flag}\\b`, "m").test(
        help.out.split("Not taken")[0]!,
      );
      const why = new RegExp(`^ {2}[-, \\w]*${flag}\\b.* {2}\\S+`, "m").test(notTaken);
      assert.ok(
        taken !== why,
        `jobs ${name}: ${flag} is ${
          taken ? "taken and explained" : "neither taken nor explained"
        }\n${help.out}`,
      );
    }
  }
  // A write asks who and why; a read has nothing to audit, and says so.
  assert.match(
    (await jobs(["help", "pause"])).out,
    /^ {2}--reason <text> +why, for the audit trail/m,
  );
  assert.match(
    (await jobs(["help", "ls"])).out,
    /^ {2}--actor, --reason +it only reads: nothing to audit$/m,
  );
});

Deno.test("every read names the store: a missing directory as a directory, a missing file as a file", async () => {
  await withFiles("version: 1\nschedules: []\n", async ({ dir, config }) => {
    const nowhere = `${dir}/nope/jobs.db`;
    const status = await jobs(["status", "--db", nowhere, "--config", config]);
    assert.equal(status.code, 1);
    assert.equal(
      status.err,
      `jobs status: the store is not readable: no directory "${dir}/nope" for the store ` +
        `"${nowhere}" (from --db)`,
    );
    for (const args of [["ls"], ["show", "1"]]) {
      const r = await jobs([...args, "--db", nowhere]);
      assert.equal(r.code, 1);
      assert.equal(
        r.err,
        `jobs ${args[0]}: no directory "${dir}/nope" for the store "${nowhere}" (from --db)`,
      );
    }
    const hostile = `${dir}/x\x1b[2J.db`;
    const escaped = await jobs(["ls", "--db", hostile]);
    assert.ok(!escaped.err.includes("\x1b"), escaped.err);
    assert.match(
      escaped.err,
      /^jobs ls: no file ".*x\\x1b\[2J\.db" for the store \(from --db\); .* run: jobsctl migrate --db \$'.*x\\x1b\[2J\.db'$/,
    );
    // A store is created only where its directory is: the daemon says so before it starts.
    const daemon = await jobs(["daemon", "--db", nowhere, "--config", config, "--listen", "off"]);
    assert.equal(daemon.code, 1);
    assert.equal(
      daemon.err,
      `jobs daemon: no directory "${dir}/nope" for the store "${nowhere}" (from --db)`,
    );
    const folder = await jobs(["ls", "--db", dir]);
    assert.equal(
      folder.err,
      `jobs ls: the store "${dir}" is a directory, not a SQLite file (from --db)`,
    );
  });
});

Deno.test("the audit actor is the OS user when $USER and $LOGNAME are unset", async () => {
  await withFiles("version: 1\nschedules: []\n", async ({ db, config }) => {
    const r = await runJobs(
      [
        "enqueue",
        "jobs.command",
        "--args",
        '{"kind":"command","argv":["true"]}',
        "--db",
        db,
        "--config",
        config,
        "--create",
      ],
      { now: NOW, env: {}, osUser: "svc-jobs" },
    );
    assert.equal(r.code, 0, r.err);
    await withStore(db, async (store) => {
      const [job] = await store.jobsList({});
      const audit = await store.auditList({ target: `job:${job!.id}` });
      assert.deepEqual(audit.map((a) => a.actor), ["svc-jobs"]);
    });
  });
});
