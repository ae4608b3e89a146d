/**
 * Every command line `jobs runbook` prints reaches this program when a person
 * pastes it into bash, interactive or not. `jobs` itself is bash's
 * job-control builtin (`jobs ls` there prints "no such job"), so the
 * program prints the name the launchers export (`jobsctl`), and, run without
 * a launcher, `jobsctl` only when this checkout's launcher is on PATH, else
 * the whole `deno run -A .../main.ts` line.
 *
 * Everything runs in a clean HOME with the launchers `deno task install`
 * wrote, from a folder whose path has a space (so the printed `--db` and
 * `--config` are quoted), with PATH holding no Deno.
 */

import assert from "node:assert/strict";
import { shellQuote } from "../../src/text/shell.ts";
import {
  BARE_PATH,
  CHECKOUT,
  type CleanHome,
  cleanHome,
  type Ran,
  runIn,
  runInstall,
} from "../support/install.ts";

const SCHEDULES = `version: 1
queues:
  mail: { concurrency: 1 }
schedules:
  - id: nightly
    cron: "0 3 * * *"
    queue: mail
    run: { command: ["true"] }
`;

/** What each runbook command prints when it reached this program. */
const REACHED: Record<string, RegExp> = {
  ls: /^ID +STATE +QUEUE/m,
  show: /^job \d+\n {2}state/m,
  replay: /^replayed job \d+ \(nightly@/m,
  disable: /^schedule nightly (disabled|was already disabled)/m,
  enable: /^schedule nightly (enabled|was already enabled)/m,
  run: /^ran nightly now: job \d+/m,
  pause: /^queue mail (paused|was already paused)/m,
  resume: /^queue mail (resumed|was already running)/m,
};

/** The shells a person pastes into: bash as a script runs it, and bash at a prompt. */
const SHELLS = [["-c"], ["-i", "-c"]];

interface Setup {
  home: CleanHome;
  /** The folder the commands run in: the schedules file and the store live here. */
  work: string;
  db: string;
  config: string;
  /** The environment with the launchers' folder first on PATH. */
  env: Record<string, string>;
}

async function setUp(home: CleanHome): Promise<Setup> {
  const installed = await runInstall(CHECKOUT, home.env());
  assert.equal(installed.code, 0, `${installed.stdout}\n${installed.stderr}`);
  const work = `${home.root}/work dir`;
  await Deno.mkdir(work);
  const db = `${work}/jobs.db`;
  const config = `${work}/schedules.yaml`;
  await Deno.writeTextFile(config, SCHEDULES);
  const env = home.env(`${home.bin}:${BARE_PATH}`);
  const q = shellQuote;
  // A store with one occurrence, so the runbook prints show and replay too.
  await pasted(work, env, ["-c"], `jobsctl migrate --db ${q(db)}`, /is now at version \d+/);
  await pasted(
    work,
    env,
    ["-c"],
    `jobsctl run nightly --reason "seed the store" --db ${q(db)} --config ${q(config)}`,
    REACHED.run!,
  );
  return { home, work, db, config, env };
}

/** Runs `line` in bash with `flags` and checks it printed `expected`: it reached the program. */
async function pasted(
  cwd: string,
  env: Record<string, string>,
  flags: string[],
  line: string,
  expected: RegExp,
): Promise<Ran> {
  const ran = await runIn(cwd, env, "bash", [...flags, line]);
  const what = `bash ${flags.join(" ")} '${line}'`;
  assert.equal(ran.code, 0, `${what} exited ${ran.code}:\n${ran.stdout}${ran.stderr}`);
  assert.match(ran.stdout, expected, `${what} did not reach the program:\n${ran.stdout}`);
  return ran;
}

/** The command lines of the runbook's text: the lines indented by four spaces. */
function commandLines(runbook: string): string[] {
  return runbook.split("\n").filter((l) => l.startsWith("    ")).map((l) => l.trim());
}

/** The verb of a pasted line: the first word after `prefix`. */
function verbOf(line: string, prefix: string): string {
  assert.ok(line.startsWith(`${prefix} `), `"${line}" does not start with "${prefix} "`);
  return line.slice(prefix.length + 1).split(" ", 1)[0]!;
}

/** `--reason '<why ...>'` as printed is a placeholder: a person types a reason there. */
function withReason(line: string): string {
  return line.replaceAll(/--reason '<[^']*>'/g, `--reason "pasted from the runbook"`);
}

Deno.test({
  name: "jobsctl typed into bash -c and bash -i -c reaches the program, where jobs is the " +
    "shell's builtin",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using home = await cleanHome();
    const { work, db, env } = await setUp(home);
    const q = shellQuote;
    for (const flags of SHELLS) {
      await pasted(work, env, flags, `jobsctl ls --db ${q(db)}`, REACHED.ls!);
      await pasted(work, env, flags, `jobsctl status --db ${q(db)}`, /^status at /m);
      await pasted(work, env, flags, `jobsctl pause mail --reason "paste" --db ${q(db)}`, /paused/);
      await pasted(
        work,
        env,
        flags,
        `jobsctl resume mail --reason "paste" --db ${q(db)}`,
        /resumed/,
      );
      // The same line with `jobs` never reaches the program: the builtin answers.
      const builtin = await runIn(work, env, "bash", [...flags, `jobs ls --db ${q(db)}`]);
      assert.doesNotMatch(builtin.stdout, REACHED.ls!);
      assert.match(builtin.stderr, /jobs: ls: no such job/);
    }
  },
});

Deno.test({
  name: "every command jobsctl runbook prints reaches the program when pasted into bash -c and " +
    "bash -i -c",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using home = await cleanHome();
    const { work, db, config, env } = await setUp(home);
    const runbook = await pasted(
      work,
      env,
      ["-c"],
      `jobsctl runbook --db ${shellQuote(db)} --config ${shellQuote(config)}`,
      /^## nightly$/m,
    );
    const lines = commandLines(runbook.stdout);
    const verbs = lines.map((line) => verbOf(line, "jobsctl"));
    assert.deepEqual(new Set(verbs), new Set(Object.keys(REACHED)), runbook.stdout);
    for (const line of lines) {
      for (const flags of SHELLS) {
        await pasted(work, env, flags, withReason(line), REACHED[verbOf(line, "jobsctl")]!);
      }
    }
  },
});

Deno.test({
  name: "without a launcher the runbook prints jobsctl when this checkout's jobsctl is on PATH, " +
    "else the whole deno run line, and both paste",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using home = await cleanHome();
    const { work, db, config, env } = await setUp(home);
    const runbook = (path: string) =>
      runIn(work, home.env(path), Deno.execPath(), [
        "run",
        "-A",
        `${CHECKOUT}/main.ts`,
        "runbook",
        "--db",
        db,
        "--config",
        config,
      ]);

    const withLauncher = await runbook(env.PATH!);
    assert.equal(withLauncher.code, 0, withLauncher.stderr);
    for (const line of commandLines(withLauncher.stdout)) verbOf(line, "jobsctl");

    const bare = await runbook(BARE_PATH);
    assert.equal(bare.code, 0, bare.stderr);
    const full = `${shellQuote(Deno.execPath())} run -A ${shellQuote(`${CHECKOUT}/main.ts`)}`;
    const lines = commandLines(bare.stdout);
    assert.ok(lines.length > 0, bare.stdout);
    for (const line of lines) {
      const verb = verbOf(line, full);
      // The reads, and one write and its undo: enough to show the whole line runs.
      if (!["ls", "show", "pause", "resume"].includes(verb)) continue;
      await pasted(work, home.env(BARE_PATH), ["-c"], withReason(line), REACHED[verb]!);
    }
  },
});
