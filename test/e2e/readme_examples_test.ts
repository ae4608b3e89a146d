/**
 * The worked examples of the README and of the guides in `docs/`, run as
 * printed: the README's opening (the daemon on the example schedules,
 * `status`, `runbook`) and its install of `jobsctl`, then every guide's
 * `## The worked example...` section (the guides in name order), command by
 * command, in a copy of this checkout whose path has spaces, with a clean
 * HOME and no Deno on PATH (what a fresh machine with only Node.js has).
 * Each command must exit 0 and print what its page prints under it; a
 * daemon is started in the background, waited for, and stopped with Ctrl-C
 * (SIGINT to its process group) at the end of its section.
 *
 * What is changed from the pages, and nothing else:
 * - `npx --yes deno@2.9.6` is the Deno running this test (`Deno.execPath()`),
 *   which the test machine has: npx would fetch the same Deno from npm;
 * - PATH holds the install's bin folder beside /usr/bin and /bin (the
 *   install prints the line that puts it there);
 * - USER is `ada`, the person of the pages' output, and `JOBS_LISTEN`
 *   is `127.0.0.1:0`, since another test may hold the default port 9464;
 * - the PostgreSQL store the pages name,
 *   `postgres://postgres@127.0.0.1:5432/test?schema=rates`, is a schema of
 *   the test database of this test's own (dropped at the end), in the
 *   commands and in the output they print;
 * - the copy holds `bench/` too, which `deno task bench` runs;
 * - `bash .ci/run` (this test suite) and `task tui` (interactive; see
 *   test/e2e/tui_e2e_test.ts) are not run.
 *
 * While a daemon of its section runs, a command whose output does not yet
 * match is run again until it does (a person waits for the daemon too).
 */

import assert from "node:assert/strict";
import { waitUntil } from "../../src/testing.ts";
import { BARE_PATH, CHECKOUT, cleanHome, copyCheckout } from "../support/install.ts";
import { postgresLocation } from "../support/pg_schema.ts";
import { lines } from "../support/processes.ts";
import {
  examplePages,
  type PageExample,
  pageExamples,
  printsAsShown,
  type Step,
  wrappedCodeSpans,
} from "../support/readme.ts";

/**
 * Every worked example, by page and title, in the order they run: the
 * README's two, and one per guide. A page or heading that loses one fails
 * here.
 */
const WORKED_EXAMPLES: Array<[file: string, title: string]> = [
  ["README.md", "jobs"],
  ["README.md", "Installing the `jobs` command"],
  ["docs/benchmarks.md", "The worked example: a short run"],
  ["docs/ingest.md", "The worked example: `examples/catalog/`"],
  ["docs/library.md", "The worked example: `examples/signups/`"],
  ["docs/operating.md", "The worked example: `examples/rates/`"],
  ["docs/postgresql.md", "The worked example: `examples/rates/` moves to PostgreSQL"],
  ["docs/reports.md", "The worked example: a monthly statement (`examples/statement/`)"],
  ["docs/work-queues.md", "The worked example: `examples/disputes/`"],
  ["docs/workflows.md", "The worked example: `examples/lending/`"],
];

/** The launcher the pages' fresh-machine commands use, and what the test runs instead. */
const NPX_DENO = "npx --yes deno@2.9.6";

/** The PostgreSQL store the pages name; the test uses a schema of its own instead. */
const PAGE_POSTGRES = "postgres://postgres@127.0.0.1:5432/test?schema=rates";

/** Commands the test does not run, with why. */
const NOT_RUN: Array<[RegExp, string]> = [
  [/^bash \.ci\/run\b/, "the test suite itself"],
  [/\btask tui\b/, "the interactive dashboard, run in a terminal by tui_e2e_test.ts"],
];

/** A command that runs until Ctrl-C: `... task daemon`, `jobsctl daemon ...`. */
const DAEMON = /^\S+(?: [^#]*?)? (?:task )?daemon(?: |$)/;

/** How long a daemon gets to start, and a command to print what its page shows. */
const DEADLINE_MS = 90_000;

/** A daemon started by a section, with what it logged. */
interface Background {
  command: string;
  child: Deno.ChildProcess;
  events: Array<Record<string, unknown>>;
  log: string[];
  exited: Deno.CommandStatus | null;
  reading: Promise<void>;
}

/** Where a person is while following a page. */
interface Session {
  cwd: string;
  env: Record<string, string>;
  daemons: Background[];
  /** The PostgreSQL store that stands for {@linkcode PAGE_POSTGRES}. */
  postgres: string;
}

Deno.test("the code spans of the README and the guides are whole: none runs over a line break", async () => {
  const pages = (await examplePages(CHECKOUT)).map((file) => `${CHECKOUT}/${file}`);
  for (const file of [...pages, ...await exampleReadmes()]) {
    assert.deepEqual(wrappedCodeSpans(await Deno.readTextFile(file)), [], file);
  }
});

Deno.test("the README and the guides hold every worked example, each with commands to run", async () => {
  const examples = await pageExamples(CHECKOUT);
  assert.deepEqual(examples.map((e) => [e.file, e.title]), WORKED_EXAMPLES);
  for (const example of examples) {
    assert.ok(example.steps.length > 0, `${example.file}: "${example.title}" has no command`);
  }
});

Deno.test("each example's schedules file names only commands its worked example runs", async () => {
  const examples = await pageExamples(CHECKOUT);
  const commands = new Set(examples.flatMap((e) => e.steps.map((s) => oneLine(s.command))));
  for (const folder of ["catalog", "disputes", "lending", "rates", "statement"]) {
    const text = await Deno.readTextFile(`${CHECKOUT}/examples/${folder}/schedules.yaml`);
    // The header's commands: `#   jobsctl ...`, continued while a line ends with `\`.
    const header = text.slice(0, text.indexOf("\nversion:")).split("\n")
      .map((line) => line.replace(/^#\s?/, ""));
    const listed: string[] = [];
    let continued = false;
    for (const line of header) {
      if (continued) listed[listed.length - 1] += `\n${line}`;
      else if (/^ {2}(jobsctl|npx|head|ls|cat) /.test(line)) listed.push(line.trim());
      continued = listed.length > 0 && line.endsWith("\\");
    }
    assert.ok(listed.length > 0, `examples/${folder}/schedules.yaml lists no command`);
    for (const command of listed) {
      assert.ok(
        commands.has(oneLine(command)),
        `examples/${folder}/schedules.yaml names "${command}", which no worked example runs`,
      );
    }
  }
});

Deno.test({
  name: "every command of the worked examples of the README and the guides runs as printed in a " +
    "fresh copy with no Deno on PATH, and prints what its page shows",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const examples = await pageExamples(CHECKOUT);
    assert.deepEqual(examples.map((e) => [e.file, e.title]), WORKED_EXAMPLES);
    await using home = await cleanHome();
    await using postgres = postgresLocation();
    const checkout = `${home.root}/jobs checkout`;
    await copyCheckout(checkout);
    const bench = await new Deno.Command("cp", {
      args: ["-R", `${CHECKOUT}/bench`, `${checkout}/bench`],
    }).output();
    assert.ok(bench.success, "cp bench/");
    const env = {
      ...home.env(`${home.bin}:${BARE_PATH}`),
      USER: "ada",
      JOBS_LISTEN: "127.0.0.1:0",
    };
    for (const example of examples) {
      const session: Session = { cwd: checkout, env, daemons: [], postgres: postgres.url };
      try {
        for (const step of example.steps) await run(session, example, step);
        await FACTS[example.title]?.(session, checkout);
        for (const daemon of session.daemons) await stop(daemon);
      } finally {
        for (const daemon of session.daemons) await kill(daemon);
      }
    }
  },
});

/** What each example is said to produce beyond its printed output. */
const FACTS: Record<string, (session: Session, checkout: string) => Promise<void>> = {
  // README.md: "the example schedules print `hello from jobs` every 15 seconds ..."
  // "(look for `job.stop` lines)"
  jobs: async (session) => {
    const [daemon] = session.daemons;
    assert.ok(daemon, "the opening starts a daemon");
    await waitUntil("the daemon's job.stop with output hello from jobs", () => {
      if (daemon.exited) throw new Error(`the daemon exited:\n${daemon.log.join("\n")}`);
      return daemon.events.some((e) =>
        e.event === "job.stop" && String(e.output ?? "").includes("hello from jobs")
      );
    }, { timeoutMs: DEADLINE_MS, intervalMs: 200 });
  },
  "The worked example: `examples/catalog/`": async (_session, checkout) => {
    const products = JSON.parse(
      await Deno.readTextFile(`${checkout}/examples/catalog/out/products.json`),
    );
    assert.equal(Object.keys(products).length, 29, "out/products.json holds 29 products");
  },
};

/** Runs one step of `example` as a person would. */
async function run(session: Session, example: PageExample, step: Step): Promise<void> {
  const where = `${example.file}:${step.line} (${example.title}): ${step.command}`;
  if (NOT_RUN.some(([pattern]) => pattern.test(step.command))) return;
  const command = step.command.replaceAll(NPX_DENO, `'${Deno.execPath()}'`)
    .replaceAll(PAGE_POSTGRES, session.postgres);
  const expected = step.expected.map((line) => line.replaceAll(PAGE_POSTGRES, session.postgres));
  const cd = /^cd (\S+)$/.exec(command.trim());
  if (cd) {
    session.cwd = `${session.cwd}/${cd[1]}`;
    assert.ok((await Deno.stat(session.cwd)).isDirectory, `${where}: no folder ${session.cwd}`);
    return;
  }
  if (DAEMON.test(command)) {
    session.daemons.push(await startDaemon(session, command, where));
    return;
  }
  let last = await bash(session, command);
  const prints = () => last.code === 0 && printsAsShown(expected, last.stdout);
  const report = () =>
    `${where}\nexited ${last.code}, expected 0 and these lines:\n${expected.join("\n")}` +
    `\n--- stdout\n${last.stdout}\n--- stderr\n${last.stderr}`;
  if (prints()) return;
  if (session.daemons.length === 0) assert.fail(report());
  await waitUntil(where, async () => {
    last = await bash(session, command);
    return prints();
  }, { timeoutMs: DEADLINE_MS, intervalMs: 500 }).catch((error) => {
    throw new Error(`${(error as Error).message}\n${report()}`);
  });
}

/** `command` run by bash in the session's folder and environment, stdin closed. */
async function bash(
  session: Session,
  command: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command("bash", {
    args: ["-c", command],
    cwd: session.cwd,
    env: session.env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(DEADLINE_MS),
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

/** Starts `command` in the background, in a process group of its own, and waits until it has started. */
async function startDaemon(session: Session, command: string, where: string): Promise<Background> {
  const child = new Deno.Command("bash", {
    args: ["-c", command],
    cwd: session.cwd,
    env: session.env,
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    // Its own process group, as a terminal's foreground job: Ctrl-C signals the whole group.
    detached: true,
  }).spawn();
  const daemon: Background = {
    command,
    child,
    events: [],
    log: [],
    exited: null,
    reading: Promise.resolve(),
  };
  daemon.reading = (async () => {
    for await (const line of lines(child.stderr)) {
      daemon.log.push(line);
      try {
        const parsed = JSON.parse(line);
        if (typeof parsed?.event === "string") daemon.events.push(parsed);
      } catch {
        // A line that is no log event (deno task's "Task daemon ..."), kept in the log.
      }
    }
  })();
  child.status.then((status) => daemon.exited = status);
  await waitUntil(`${where}: daemon.started`, () => {
    if (daemon.exited) {
      throw new Error(`${where}: exited ${daemon.exited.code}:\n${daemon.log.join("\n")}`);
    }
    return daemon.events.some((e) => e.event === "daemon.started");
  }, { timeoutMs: DEADLINE_MS, intervalMs: 100 });
  return daemon;
}

/** Ctrl-C: SIGINT to the daemon's process group; it must stop cleanly. */
async function stop(daemon: Background): Promise<void> {
  if (!daemon.exited) Deno.kill(-daemon.child.pid, "SIGINT");
  await waitUntil(`${daemon.command} to stop after Ctrl-C`, () => daemon.exited, {
    timeoutMs: DEADLINE_MS,
    intervalMs: 100,
  });
  await daemon.reading;
  const log = daemon.log.join("\n");
  assert.ok(daemon.events.some((e) => e.event === "daemon.stopped"), `${daemon.command}:\n${log}`);
  assert.equal(daemon.exited?.code, 0, `${daemon.command} exited ${daemon.exited?.code}:\n${log}`);
}

/** For `finally`: SIGKILL to the process group of a daemon still running. */
async function kill(daemon: Background): Promise<void> {
  if (!daemon.exited) {
    try {
      Deno.kill(-daemon.child.pid, "SIGKILL");
    } catch {
      // Gone meanwhile.
    }
  }
  await daemon.child.status;
  await daemon.reading;
}

/** The README files of the example folders. */
async function exampleReadmes(): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(`${CHECKOUT}/examples`)) {
    const file = `${CHECKOUT}/examples/${entry.name}/README.md`;
    if (entry.isDirectory && await Deno.stat(file).then(() => true, () => false)) found.push(file);
  }
  return found;
}

/** A command with its continuations joined and its comment and spacing dropped, to compare. */
function oneLine(command: string): string {
  return command.replace(/\\\n\s*/g, " ").replace(/\s+#.*$/, "").replace(/\s+/g, " ").trim();
}
