/**
 * `jobs tui` in a real terminal (tmux): the operator walks to a discarded
 * job, retries it and the store changes, then edits a search with the keys
 * a shell has (Ctrl-W, Ctrl-U, Home, End, Backspace); the header's rule
 * and every row fit the pane; stored escape sequences (title,
 * clear screen, OSC 52 clipboard) are shown as text and do nothing; `q`
 * gives the terminal back as it was (main screen, cursor, canonical mode
 * with echo). On the way out it opens the Work tab: the work queue's item.
 *
 * The pane runs `jobs tui` under `sh`, which then prints the exit status
 * and the tty's `icanon`/`echo` flags and waits, so how the program left
 * the terminal can be read from the screen and the pane's modes. Every step
 * waits for the frame it needs before the next key: keys sent to a screen
 * still loading do nothing.
 */

import assert from "node:assert/strict";
import type { ClaimedJob, Job, JobResult, JobState } from "../../src/kernel/types.ts";
import { describeLocation, openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { newJob } from "../support/backends.ts";
import { MAIN } from "../support/daemon_process.ts";
import { postgresLocation } from "../support/pg_schema.ts";
import { tempDir } from "../support/stores.ts";
import { FIRST_FRAME_MS, frame, openTerminal, type Terminal } from "./tui_terminal.ts";

/** When the fixture's jobs were made; the dashboard shows them as long ago. */
const T0 = Date.UTC(2026, 0, 1);
const ACTOR = "e2e-operator";
const TITLE = "jobs-e2e-title";
/**
 * The password of the PostgreSQL test's location: PostgreSQL here trusts
 * local connections, so it is accepted, ignored and must never be shown.
 */
const PASSWORD = "hunter2-s3cret";
/** What sh prints before the dashboard, which must be back on screen after it. */
const BEFORE = "BEFORE-TUI";

/** A title change, a screen clear and an OSC 52 clipboard write, inside ordinary text. */
const HOSTILE = "smtp: \x1b]0;owned\x07 \x1b[2J \x1b]52;c;aGVsbG8=\x07 end";
/** The same once escaped for the screen. */
const HOSTILE_SHOWN = String.raw`smtp: \x1b]0;owned\x07 \x1b[2J \x1b]52;c;aGVsbG8=\x07 end`;

/** With `on`, an OSC 52 from a pane sets a paste buffer: a leak would show in `list-buffers`. */
const CLIPBOARD = ["set -s set-clipboard on"];

/** The pane's program: `jobs tui`, then its exit status and the tty's flags. */
const SCRIPT = [
  `echo ${BEFORE}`,
  `"$1" run --allow-all "$2" tui --db "$3" --config "$4" --actor ${ACTOR}`,
  `echo "EXIT=$?"`,
  `echo "TTY=$(stty -a | tr -s ' ;' '\\n\\n' | grep -xE -- '-?(icanon|echo)' | tr '\\n' ' ')"`,
  // Stay, so the pane keeps the cursor and screen modes as jobs tui left them.
  "read -r _",
].join("\n");

const SCHEDULES = `version: 1
queues:
  default: { concurrency: 2 }
  mail: { concurrency: 1 }
schedules:
  - id: nightly-report
    cron: "0 3 * * *"
    run:
      command: ["true"]
work_queues:
  - id: disputes
    claim: required
    lease: 1h
    actions:
      - id: refund
        run: { command: ["true"] }
`;

/** The fixture: what was made and the discarded job to act on. */
interface Fixture {
  db: string;
  config: string;
  /** The dead letter: queue `mail`, worker `send-mail`, discarded through claim and record. */
  discarded: Job;
  /** Every job's state as made. */
  states: Map<number, JobState>;
}

/** The lease of the fixture's executing job: it stays executing for the whole test. */
const TEN_YEARS_MS = 10 * 365 * 24 * 3_600_000;

/**
 * A store at `db` (a SQLite path or a PostgreSQL location) with a job in
 * every state on queue `default`, then the discarded one on queue `mail`,
 * each made the way a node makes it: inserted, claimed by node-a and
 * recorded; the schedules file in `dir`.
 */
async function buildStore(
  db: string,
  dir: string,
  dead: { args: unknown; error: string },
): Promise<Fixture> {
  const config = `${dir}/schedules.yaml`;
  await Deno.writeTextFile(config, SCHEDULES);
  const { store } = await openStore(db, { mode: "create", now: T0 });
  try {
    const at = (minutes: number) => T0 + minutes * 60_000;
    await made(store, "resize-image", at(1));
    await made(store, "resize-image", at(1), (job) => ({
      outcome: "retryable",
      error: "image too large",
      at: job.attemptedAt,
    }));
    await made(store, "sync-crm", at(2), () => ({ outcome: "completed" }));
    await made(store, "sync-crm", at(3), () => ({ outcome: "cancelled", error: "not needed" }));
    await store.jobsInsert({
      jobs: [
        newJob({ worker: "build-report", scheduledAt: at(600) }),
        newJob({ worker: "build-report", scheduledAt: T0 }),
      ],
      now: T0,
    });
    const discarded = await discard(store, dead, at(4));
    // One item waiting in the work queue, for the Work tab.
    await store.workItemAdd({
      queue: "disputes",
      key: "dsp-1",
      tenant: null,
      data: { amount: 1900 },
      score: null,
      actor: ACTOR,
      now: at(5),
    });
    const states = new Map((await store.jobsList({})).map((job) => [job.id, job.state]));
    assert.deepEqual(
      [...new Set(states.values())].sort(),
      ["available", "cancelled", "completed", "discarded", "executing", "retryable", "scheduled"],
    );
    return { db, config, discarded, states };
  } finally {
    await store.close();
  }
}

/**
 * One `worker` job on queue `default`, claimed at `now` by node-a (the only
 * available one: the others made before are claimed already), then ended
 * with `end`'s result, or left executing without it.
 */
async function made(
  store: Store,
  worker: string,
  now: number,
  end?: (job: ClaimedJob) => DistributiveOmit<JobResult, "id" | "fence" | "attempt" | "startedAt">,
): Promise<void> {
  await store.jobsInsert({ jobs: [newJob({ worker, scheduledAt: now })], now });
  const { jobs: [claimed] } = await store.jobsClaim({
    queue: "default",
    node: "node-a",
    limit: 1,
    now,
    leaseMs: TEN_YEARS_MS,
  });
  assert.ok(claimed, `the fixture's ${worker} job was not claimed`);
  if (end === undefined) return;
  const report = await store.jobsRecord({
    node: "node-a",
    now: now + 250,
    results: [{
      id: claimed.id,
      fence: claimed.fence,
      attempt: claimed.attempt,
      startedAt: claimed.attemptedAt,
      ...end(claimed),
    } as JobResult],
  });
  assert.deepEqual(report.recorded, [claimed.id]);
}

/** `Omit` of each member of a union (a plain `Omit` would merge the members). */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** One job on queue `mail`, claimed by a node and recorded as discarded with `error`. */
async function discard(
  store: Store,
  dead: { args: unknown; error: string },
  now: number,
): Promise<Job> {
  await store.jobsInsert({
    jobs: [newJob({
      queue: "mail",
      worker: "send-mail",
      args: JSON.stringify(dead.args),
      maxAttempts: 1,
      scheduledAt: now,
    })],
    now,
  });
  const { jobs: [claimed] } = await store.jobsClaim({
    queue: "mail",
    node: "node-a",
    limit: 1,
    now,
    leaseMs: 60_000,
  });
  assert.ok(claimed, "the fixture's mail job was not claimed");
  const report = await store.jobsRecord({
    node: "node-a",
    now: now + 250,
    results: [{
      id: claimed.id,
      fence: claimed.fence,
      attempt: claimed.attempt,
      startedAt: now,
      outcome: "discarded",
      error: dead.error,
    }],
  });
  assert.deepEqual(report.recorded, [claimed.id]);
  const job = await store.jobGet({ id: claimed.id });
  assert.equal(job?.state, "discarded");
  return job;
}

/** Opens the store at `db` for one read. */
async function readStore<T>(db: string, fn: (store: Store) => Promise<T>): Promise<T> {
  const { store } = await openStore(db, { mode: "read" });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** `jobs tui` on the fixture in a pane of its own; `dir` holds the tmux config. */
function openTui(
  dir: string,
  fixture: Fixture,
  size: { width: number; height: number },
): Promise<Terminal> {
  return openTerminal({
    argv: ["sh", "-c", SCRIPT, "tui-e2e", Deno.execPath(), MAIN, fixture.db, fixture.config],
    ...size,
    cwd: dir,
    title: TITLE,
    config: CLIPBOARD,
  });
}

/** Waits for a dashboard frame; fails at once when `jobs tui` has already exited. */
function dashboard(
  terminal: Terminal,
  what: string,
  test: (screen: string) => boolean,
  timeoutMs?: number,
): Promise<string> {
  return terminal.waitForScreen(what, (screen) => {
    // The screen comes with the error (see waitForScreen).
    if (/^EXIT=/m.test(screen)) throw new Error(`jobs tui exited before ${what}`);
    return test(screen);
  }, timeoutMs);
}

/** The rows of a captured screen (capture-pane ends each with a newline). */
function rows(screen: string): string[] {
  return screen.replace(/\n$/, "").split("\n");
}

/** The id on the selected row (`> 12  discarded ...`) of the jobs list, if any. */
function selectedId(screen: string): number | null {
  const match = /^> (\d+)\s/m.exec(screen);
  return match ? Number(match[1]) : null;
}

/** The first frame: the overview on the alternate screen, sized to the pane, title untouched. */
async function firstFrame(
  terminal: Terminal,
  size: { width: number; height: number },
): Promise<void> {
  const screen = await dashboard(
    terminal,
    "the overview with both queues",
    (s) => s.includes("[1 Overview]") && /^\W*default\b/m.test(s) && /^\W*mail\b/m.test(s),
    FIRST_FRAME_MS,
  );
  assert.equal(
    await terminal.format("#{pane_width}x#{pane_height}"),
    `${size.width}x${size.height}`,
  );
  assert.equal(await terminal.format("#{alternate_on}"), "1", "not on the alternate screen");
  assert.ok(
    !screen.includes(BEFORE),
    `the shell's output shows under the dashboard:\n${frame(screen)}`,
  );
  fitsThePane(screen, size);
  assert.equal(
    rows(screen)[1],
    "─".repeat(size.width),
    "the header's rule is not the pane's width",
  );
  assert.equal(await terminal.format("#{pane_title}"), TITLE);
}

/**
 * Why `screen` is not a whole frame of the dashboard in a pane of `size`
 * (the tab bar on the first row, a footer on the last, no row wider than
 * the pane), or null when it is.
 */
function notWhole(screen: string, size: { width: number; height: number }): string | null {
  const lines = rows(screen);
  if (lines.length !== size.height) return `${lines.length} rows, not ${size.height}`;
  // By label, short label, or (a long location at 80 columns) by key alone.
  if (!/^jobs .*1( Overview)?.*4( Dead)?.*5( Workflows| Flows)?.*7( Work)?/.test(lines[0]!)) {
    return "no tab bar on the first row";
  }
  if (!/\bq\b/.test(lines.at(-1)!)) return "no footer on the last row";
  const wide = lines.find((line) => Array.from(line).length > size.width);
  return wide === undefined ? null : `a row wider than ${size.width}: ${wide}`;
}

/** Asserts that `screen` is a whole frame of the dashboard; see {@linkcode notWhole}. */
function fitsThePane(screen: string, size: { width: number; height: number }): void {
  const why = notWhole(screen, size);
  assert.equal(why, null, `${why}:\n${frame(screen)}`);
}

/**
 * Checks what a stored escape sequence would have done had it reached the
 * terminal, once the screen shows what was drawn after it: set the title,
 * written a paste buffer (OSC 52), cleared the screen (rows the dashboard
 * does not redraw stay blank, so no whole frame comes). Returns the frame.
 */
async function unharmed(
  terminal: Terminal,
  where: string,
  size: { width: number; height: number },
): Promise<string> {
  assert.equal(
    await terminal.format("#{pane_title}"),
    TITLE,
    `${where}: a stored OSC set the title`,
  );
  assert.deepEqual(await terminal.buffers(), [], `${where}: a stored OSC 52 wrote the clipboard`);
  return await terminal.waitForScreen(
    `${where} as a whole frame (a cleared screen leaves rows blank)`,
    (s) => notWhole(s, size) === null,
  );
}

/**
 * Quits with `q` and checks the terminal is given back: exit status 0, the
 * tty in canonical mode with echo, a visible cursor, and the main screen as
 * the shell left it: its line from before, then the lines after, with
 * nothing of the dashboard between or below.
 */
async function quitRestoresTheTerminal(terminal: Terminal): Promise<void> {
  await terminal.press("q");
  await terminal.waitForScreen(
    "the exit status and tty flags after q",
    (s) => /^EXIT=\d+$/m.test(s) && /^TTY=.*$/m.test(s),
  );
  const screen = await terminal.scrollback();
  const printed = rows(screen).filter((line) => line.trim() !== "" && !/^Pane is dead/.test(line));
  assert.deepEqual(
    printed.map((line) => line.replace(/^TTY=.*/, "TTY=")),
    [BEFORE, "EXIT=0", "TTY="],
    `jobs tui did not exit 0 onto the restored main screen:\n${frame(screen)}`,
  );
  const flags = printed[2]!.slice("TTY=".length).trim().split(/\s+/).sort();
  assert.deepEqual(flags, ["echo", "icanon"], `the tty was left in raw mode:\n${frame(screen)}`);
  assert.equal(await terminal.format("#{alternate_on}"), "0", "still on the alternate screen");
  assert.equal(await terminal.format("#{cursor_flag}"), "1", "the cursor is still hidden");
}

/**
 * The operator's walk, the body of the tests below on each store: to the
 * discarded job in the jobs list, its detail, `r` and `y` to retry it (the
 * store changes, audited), a search edited with a shell's keys, then `q`.
 * `db` is the store's location, `dir` holds the schedules file and tmux's.
 */
async function walkRetrySearchQuit(
  db: string,
  dir: string,
  size: { width: number; height: number },
): Promise<void> {
  const fixture = await buildStore(db, dir, {
    args: { to: "ops@example.com" },
    error: "connection refused by smtp.example.com:25",
  });
  const id = fixture.discarded.id;
  await using terminal = await openTui(dir, fixture, size);
  await firstFrame(terminal, size);
  // The tab bar names the store as every message does: without its password.
  const tabs = rows(await terminal.screen())[0]!;
  assert.ok(!tabs.includes(PASSWORD), `the password shown: ${tabs}`);
  // Which store: a PostgreSQL one by its schema (kept however narrow), a file by its name.
  const schema = /[?&]schema=([^&]+)/.exec(describeLocation(db))?.[1];
  const named = schema ? `schema=${schema}` : describeLocation(db).replace(/^.*\//, "");
  assert.ok(tabs.includes(named), `the store not named (${named}): ${tabs}`);

  // The jobs list, newest first; walk down with j to the dead letter.
  await terminal.press("2");
  let screen = await dashboard(
    terminal,
    "the jobs list with every job",
    (s) =>
      s.includes("[2 Jobs]") && s.includes("filter all jobs") &&
      s.includes(`page 1 of 1 · ${fixture.states.size} jobs match`) && selectedId(s) !== null,
  );
  assert.equal(rows(screen)[1], "─".repeat(size.width), `the rule:\n${frame(screen)}`);
  const listed = [...screen.matchAll(/^[> ] (\d+)\s+(\w+)/gm)].map((m) => Number(m[1]));
  assert.equal(listed.length, fixture.states.size, `not every job listed:\n${frame(screen)}`);
  const target = listed.indexOf(id);
  assert.ok(target >= 0, `job ${id} is not listed:\n${frame(screen)}`);
  for (let row = listed.indexOf(selectedId(screen)!); row < target; row++) {
    await terminal.press("j");
    await dashboard(
      terminal,
      `the cursor on job ${listed[row + 1]}`,
      (s) => selectedId(s) === listed[row + 1],
    );
  }
  screen = await terminal.screen();
  assert.match(screen, new RegExp(`^> ${id}\\s+discarded\\s+mail\\s+send-mail`, "m"));

  await terminal.press("Enter");
  await dashboard(
    terminal,
    `the detail of job ${id}`,
    (s) => new RegExp(`^job ${id} discarded`, "m").test(s) && s.includes("connection refused"),
  );
  await terminal.press("r");
  await dashboard(
    terminal,
    `the confirmation to retry job ${id}`,
    (s) => s.includes(`Retry job ${id}?`),
  );
  await terminal.press("y");
  screen = await dashboard(
    terminal,
    `job ${id} retried and shown available`,
    (s) =>
      s.includes(`retried job ${id} (was discarded)`) &&
      new RegExp(`^job ${id} available`, "m").test(s),
  );
  fitsThePane(screen, size);

  // The store: the job is available again, audited; nothing else moved.
  await readStore(fixture.db, async (store) => {
    const job = await store.jobGet({ id });
    assert.equal(job?.state, "available");
    assert.equal(job?.maxAttempts, 2, "a used-up job gets one more attempt");
    const audit = await store.auditList({ target: `job:${id}` });
    assert.deepEqual(audit.map((row) => [row.action, row.actor]), [["job.retry", ACTOR]]);
    const now = new Map((await store.jobsList({})).map((j) => [j.id, j.state]));
    assert.deepEqual(now, new Map([...fixture.states, [id, "available"]]));
  });

  // Back to the list; `/` edits its search with the keys a shell has.
  await terminal.press("Escape");
  await dashboard(terminal, "the jobs list again", (s) => s.includes("/ search"));
  await terminal.press("/");
  await dashboard(terminal, "the search prompt", (s) => s.includes("Search jobs"));
  await terminal.press("xx mail", "C-w");
  await dashboard(terminal, "Ctrl-W deleting a word", (s) => /^> xx █/m.test(s));
  await terminal.press("C-u", "mail", "Home", "queue:", "End", "BSpace", "l");
  await dashboard(terminal, "the edited search", (s) => /^> queue:mail█/m.test(s));
  await terminal.press("Enter");
  screen = await dashboard(
    terminal,
    "the jobs of queue mail",
    (s) => s.includes("filter queue:mail") && s.includes("page 1 of 1 · 1 job match"),
  );
  assert.match(screen, new RegExp(`^> ${id}\\s+available\\s+mail`, "m"));
  fitsThePane(screen, size);

  // The Work tab: the queue's waiting item, free, oldest first.
  await terminal.press("7");
  screen = await dashboard(
    terminal,
    "the work queue disputes with its item",
    (s) => s.includes("[7 Work]") && /^> +- dsp-1 +- +age /m.test(s),
  );
  assert.match(screen, /^queues \[disputes\]/m);
  assert.match(screen, /^open 1 {2}claimed 0 {2}expired 0 {2}oldest /m);
  fitsThePane(screen, size);

  await quitRestoresTheTerminal(terminal);
}

const WALK = "walk to a discarded job, retry it, the store changes; q restores the terminal";

for (const size of [{ width: 100, height: 30 }, { width: 80, height: 24 }]) {
  Deno.test(`jobs tui at ${size.width}x${size.height}: ${WALK}`, async () => {
    const dir = await tempDir();
    try {
      await walkRetrySearchQuit(`${dir.path}/jobs.db`, dir.path, size);
    } finally {
      await dir.cleanup();
    }
  });
}

Deno.test(`jobs tui on PostgreSQL at 100x30: ${WALK}`, async () => {
  const dir = await tempDir();
  try {
    await using pg = postgresLocation();
    const url = new URL(pg.url);
    url.password = PASSWORD;
    await walkRetrySearchQuit(url.toString(), dir.path, { width: 100, height: 30 });
  } finally {
    await dir.cleanup();
  }
});

Deno.test("jobs tui shows stored escape sequences as text: no title, no clipboard, no clear", async () => {
  const size = { width: 100, height: 30 };
  const dir = await tempDir();
  try {
    // First, that this tmux would show a leak: the same bytes printed raw
    // in a pane set its title and a paste buffer.
    {
      await using control = await openTerminal({
        // It stays after printing: a pane that exits may lose its screen
        // before a loaded machine gets to read it.
        argv: [
          "sh",
          "-c",
          `read -r _; printf '%s\\n' "$1"; echo CONTROL-DONE; read -r _`,
          "control",
          HOSTILE,
        ],
        ...size,
        cwd: dir.path,
        title: TITLE,
        config: CLIPBOARD,
      });
      // The title is set before the text is printed: the text waits for Enter.
      assert.equal(await control.format("#{pane_title}"), TITLE);
      await control.press("Enter");
      await control.waitForScreen("the control pane's raw text", (s) => s.includes("CONTROL-DONE"));
      assert.equal(
        await control.format("#{pane_title}"),
        "owned",
        "this tmux ignores a title set by a pane: the check below could not fail",
      );
      assert.notDeepEqual(
        await control.buffers(),
        [],
        "this tmux ignores OSC 52 from a pane: the check below could not fail",
      );
    }

    const fixture = await buildStore(`${dir.path}/jobs.db`, dir.path, {
      args: { note: HOSTILE },
      error: HOSTILE,
    });
    const id = fixture.discarded.id;
    await using terminal = await openTui(dir.path, fixture, size);
    await firstFrame(terminal, size);
    assert.deepEqual(await terminal.buffers(), []);

    // Dead letters: the group shows the error; Enter lists its jobs, Enter
    // again the detail. Each wait is for a line drawn after the hostile text
    // (the footer, the audit heading): tmux has read the text by then.
    await terminal.press("4");
    await dashboard(
      terminal,
      "the dead letters with the send-mail group",
      (s) => /^>\s+1 send-mail\b/m.test(s) && s.includes("⏎ the group's jobs"),
    );
    let screen = await unharmed(terminal, "the dead letters", size);
    assert.match(screen, /^>\s+1 send-mail .*smtp: \\x1b\]0;owned\\x07 \\x1b\[2J/m);

    await terminal.press("Enter");
    await dashboard(
      terminal,
      `the group's jobs with job ${id} selected`,
      (s) => selectedId(s) === id && s.includes("/ search"),
    );
    screen = await unharmed(terminal, "the jobs list", size);
    assert.match(screen, new RegExp(`^> ${id}\\s+discarded .*smtp: \\\\x1b\\]0;owned`, "m"));

    await terminal.press("Enter");
    await dashboard(
      terminal,
      `the detail of job ${id} down to its audit`,
      (s) => s.includes("errors (1)") && /^audit \(/m.test(s),
    );
    screen = await unharmed(terminal, "the job's detail", size);
    assert.match(screen, new RegExp(`^job ${id} discarded`, "m"));
    assert.match(
      screen,
      /^args .*\\u001b\]0;owned\\u0007 \\u001b\[2J \\u001b\]52;c;aGVsbG8=\\u0007/m,
    );
    const errorRow = rows(screen).find((line) => /^ {2}#1 /.test(line));
    assert.ok(
      errorRow?.endsWith(`: ${HOSTILE_SHOWN}`),
      `the error is not shown:\n${frame(screen)}`,
    );

    await quitRestoresTheTerminal(terminal);
  } finally {
    await dir.cleanup();
  }
});
