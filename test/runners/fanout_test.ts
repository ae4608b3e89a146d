/**
 * The `jobs.fanout` runner through the real store and executor: a schedule
 * parsed from YAML-as-JSON, its occurrence row inserted as the planner would,
 * then drained. The store is wrapped to count (and break) the batch
 * transactions.
 */

import assert from "node:assert/strict";
import type { FakeClock } from "../../src/clock.ts";
import type { Job } from "../../src/kernel/types.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import { commandWorker } from "../../src/runners/command.ts";
import {
  cursorKey,
  defineSelection,
  FANOUT_WORKER,
  fanOutRunSchema,
  fanoutWorker,
  itemArgs,
  keyed,
  parseItems,
} from "../../src/runners/fanout.ts";
import { between } from "../../src/schedule/occurrences.ts";
import { definitionHash, fanOutRun, occurrenceJob } from "../../src/schedule/plan.ts";
import type { Schedule } from "../../src/schedule/types.ts";
import type { SqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import type { Store } from "../../src/store/store.ts";
import { drainJobs, waitUntil } from "../../src/testing.ts";
import { lines } from "../support/processes.ts";
import { scheduleOf } from "../support/schedules.ts";
import { tempDir, tempJobs } from "../support/stores.ts";
import { alive, driven, readPid } from "./processes.ts";

/** The FakeClock's start: `every: 1h` has an occurrence here. */
const T = Date.UTC(2026, 0, 1);

/** `count` lines `<prefix>-1` ... from a selection command run by `sh -c`. */
function counting(count: number, prefix = "item"): string {
  return `i=1; while [ $i -le ${count} ]; do echo ${prefix}-$i; i=$((i+1)); done`;
}

const items = (count: number, prefix = "item") =>
  Array.from({ length: count }, (_, i) => `${prefix}-${i + 1}`);

/**
 * A store whose transactions are counted, whose inserted batches are kept
 * (as the items of their jobs), whose `n`th transaction fails when
 * `failOn(n)` says so, and whose `n`th setting write inside a transaction
 * (a batch's cursor) fails when `failCursorOn(n)` says so.
 */
function spied(
  store: SqliteStore,
  failOn: (call: number) => boolean = () => false,
  failCursorOn: (call: number) => boolean = () => false,
) {
  const batches: unknown[][] = [];
  let calls = 0;
  let cursorWrites = 0;
  const proxy = new Proxy(store, {
    get(target, prop) {
      if (prop === "transaction") {
        return (fn: (tx: unknown) => Promise<unknown>) => {
          calls++;
          if (failOn(calls)) return Promise.reject(new Error("database is locked (test)"));
          return target.transaction((tx) =>
            fn({
              ...tx,
              jobsInsert: (params: Parameters<typeof tx.jobsInsert>[0]) => {
                batches.push(params.jobs.map((j) => JSON.parse(j.meta).item));
                return tx.jobsInsert(params);
              },
              settingSet: (params: Parameters<typeof tx.settingSet>[0]) => {
                if (failCursorOn(++cursorWrites)) {
                  return Promise.reject(new Error("cursor write failed (test)"));
                }
                return tx.settingSet(params);
              },
            })
          );
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as unknown as Store;
  return { store: proxy, batches };
}

/**
 * A Jobs with the fan-out runner (on a spied store), the command runner, a
 * `visit` worker that records each item it runs, and `extra` workers.
 */
async function setup(options: {
  failOn?: (call: number) => boolean;
  failCursorOn?: (call: number) => boolean;
  // deno-lint-ignore no-explicit-any
  extra?: any[];
  maxItems?: number;
  killGraceMs?: number;
  groupsDir?: string;
} = {}) {
  const visited: unknown[] = [];
  const visit = defineWorker<{ item: unknown; note?: string }>({
    name: "visit",
    perform: ({ item }) => void visited.push(item),
  });
  const env: Record<string, string> = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" };
  const t = await tempJobs([], {});
  const spy = spied(t.store, options.failOn, options.failCursorOn);
  const fan = fanoutWorker({
    store: () => spy.store,
    workers: () => t.jobs.registry,
    env: (name) => env[name],
    clock: t.clock,
    maxItems: options.maxItems,
    killGraceMs: options.killGraceMs,
    groupsDir: options.groupsDir,
  });
  const command = commandWorker({ env: (name) => env[name], clock: t.clock });
  for (const worker of [fan, command, visit, ...(options.extra ?? [])]) t.jobs.register(worker);
  return {
    ...t,
    visited,
    batches: spy.batches,
    /** Inserts the schedule's occurrence at T, as the planner does; returns its identity. */
    async plan(schedule: Schedule): Promise<string> {
      const [occurrence] = between(schedule, T, T + 1);
      await t.store.jobsInsert({
        jobs: [occurrenceJob(schedule, occurrence!)],
        now: t.clock.now(),
      });
      return occurrence!.occurrence;
    },
  };
}

async function parentOf(store: SqliteStore, occurrence: string): Promise<Job> {
  const [job] = await store.jobsList({ occurrence });
  assert.ok(job, `no job for ${occurrence}`);
  return job;
}

async function lastOutput(store: SqliteStore, id: number): Promise<string> {
  const attempts = await store.attemptsList({ jobId: id });
  return attempts.at(-1)?.output ?? "";
}

/** How many `settings` rows hold `key` (read past the store, to see the row itself is gone). */
function settingsRows(store: SqliteStore, key: string): number {
  const row = store.db.prepare("SELECT count(*) AS n FROM settings WHERE key = ?").get(key);
  return Number(row?.n);
}

function sorted(values: unknown[]): string[] {
  return values.map(String).sort();
}

Deno.test("a fan-out over 250 items with batch_size 100 makes 250 item jobs in 3 transactions, each run once", async () => {
  await using t = await setup();
  const schedule = scheduleOf({
    id: "fan",
    every: "1h",
    queue: "bulk",
    priority: 2,
    max_attempts: 3,
    tags: ["nightly"],
    timeout: "10m",
    selection: { command: counting(250), shell: true },
    batch_size: 100,
    run: { worker: "visit", args: { note: "n" } },
  });
  const occurrence = await t.plan(schedule);
  await drainJobs(t.jobs);

  assert.deepEqual(t.batches.map((b) => b.length), [100, 100, 50]);
  assert.deepEqual(sorted(t.visited), sorted(items(250)));
  const children = await t.store.jobsList({ worker: "visit" });
  assert.equal(children.length, 250);
  for (const child of children) {
    assert.equal(child.state, "completed");
    assert.equal(child.attempt, 1);
    assert.equal(child.scheduleId, null);
    assert.equal(child.queue, "bulk");
    assert.equal(child.priority, 2);
    assert.equal(child.maxAttempts, 3);
    assert.deepEqual(child.tags, ["nightly"]);
    assert.match(
      child.occurrence!,
      new RegExp(`^${occurrence.replace(/\./g, "\\.")}#[0-9a-f]{16}$`),
    );
    assert.deepEqual(child.meta, {
      schedule: "fan",
      timeoutMs: 600_000,
      definition: definitionHash(schedule),
      parent: occurrence,
      item: (child.args as { item: string }).item,
    });
    assert.deepEqual(child.args, { note: "n", item: child.meta.item });
    assert.equal(child.scheduledFor, T);
  }
  const parent = await parentOf(t.store, occurrence);
  assert.equal(parent.state, "completed");
  assert.equal(parent.worker, FANOUT_WORKER);
  assert.equal(parent.scheduleId, "fan");
  assert.match(
    await lastOutput(t.store, parent.id),
    /enqueued 250 item jobs in 3 batches of up to 100/,
  );
  // The run enqueued every item: its cursor is gone from the settings.
  assert.equal(await t.store.settingGet({ key: cursorKey(occurrence) }), null);
  assert.equal(settingsRows(t.store, cursorKey(occurrence)), 0);
});

Deno.test("a fan-out whose 2nd batch fails resumes at the cursor on retry, without duplicates", async () => {
  await using t = await setup({ failOn: (call) => call === 2 });
  const schedule = scheduleOf({
    id: "fan",
    every: "1h",
    selection: { command: counting(250), shell: true },
    batch_size: 100,
    run: { worker: "visit" },
  });
  const occurrence = await t.plan(schedule);

  await drainJobs(t.jobs);
  let parent = await parentOf(t.store, occurrence);
  assert.equal(parent.state, "retryable");
  assert.match(parent.errors[0]!.error, /database is locked \(test\)/);
  assert.equal(t.visited.length, 100);
  assert.deepEqual(
    { ...await t.store.settingGet({ key: cursorKey(occurrence) }) as object, digest: 0 },
    { cursor: 100, total: 250, digest: 0 },
  );

  await drainJobs(t.jobs, { withScheduled: true });
  parent = await parentOf(t.store, occurrence);
  assert.equal(parent.state, "completed");
  assert.equal(parent.attempt, 2);
  // The retry inserted items 101-250 only: it did not start over.
  assert.deepEqual(t.batches.map((b) => [b.length, b[0]]), [
    [100, "item-1"],
    [100, "item-101"],
    [50, "item-201"],
  ]);
  assert.match(await lastOutput(t.store, parent.id), /resumed at item 100 of 250/);
  assert.equal((await t.store.jobsList({ worker: "visit" })).length, 250);
  assert.deepEqual(sorted(t.visited), sorted(items(250)));
  // Kept while the run could be retried, deleted once the retry enqueued the rest.
  assert.equal(settingsRows(t.store, cursorKey(occurrence)), 0);
});

Deno.test("a fan-out whose cursor write fails rolls its batch back with it; the retry enqueues each item once", async () => {
  await using t = await setup({ failCursorOn: (call) => call === 2 });
  const schedule = scheduleOf({
    id: "fan",
    every: "1h",
    selection: { command: counting(250), shell: true },
    batch_size: 100,
    run: { worker: "visit" },
  });
  const occurrence = await t.plan(schedule);

  await drainJobs(t.jobs);
  let parent = await parentOf(t.store, occurrence);
  assert.equal(parent.state, "retryable");
  assert.match(parent.errors[0]!.error, /cursor write failed \(test\)/);
  // The 2nd batch was inserted, then rolled back with its cursor: only the
  // 1st batch's items exist, and the cursor says exactly that.
  assert.equal((await t.store.jobsList({ worker: "visit" })).length, 100);
  assert.equal(t.visited.length, 100);
  assert.deepEqual(
    { ...await t.store.settingGet({ key: cursorKey(occurrence) }) as object, digest: 0 },
    { cursor: 100, total: 250, digest: 0 },
  );

  await drainJobs(t.jobs, { withScheduled: true });
  parent = await parentOf(t.store, occurrence);
  assert.equal(parent.state, "completed");
  assert.deepEqual(t.batches.map((b) => [b.length, b[0]]), [
    [100, "item-1"],
    [100, "item-101"],
    [100, "item-101"],
    [50, "item-201"],
  ]);
  // Nothing of the rolled-back batch was left to find already enqueued.
  const output = await lastOutput(t.store, parent.id);
  assert.match(output, /resumed at item 100 of 250/);
  assert.match(output, /enqueued 150 item jobs in 2 batches of up to 100$/);
  assert.equal((await t.store.jobsList({ worker: "visit" })).length, 250);
  assert.deepEqual(sorted(t.visited), sorted(items(250)));
  assert.equal(settingsRows(t.store, cursorKey(occurrence)), 0);
});

Deno.test("a fan-out retried after its selection changed enqueues each item once, the new ones too", async () => {
  const dir = await tempDir();
  try {
    await using t = await setup({ failOn: (call) => call === 2 });
    const list = `${dir.path}/items.txt`;
    await Deno.writeTextFile(list, items(250).join("\n") + "\n");
    const schedule = scheduleOf({
      id: "fan",
      every: "1h",
      selection: { command: ["cat", list] },
      batch_size: 100,
      run: { worker: "visit" },
    });
    const occurrence = await t.plan(schedule);
    await drainJobs(t.jobs);
    assert.equal(t.visited.length, 100);

    // Between the attempts the list is reversed and grows by 20.
    const changed = [...items(250).reverse(), ...items(20, "new")];
    await Deno.writeTextFile(list, changed.join("\n") + "\n");
    await drainJobs(t.jobs, { withScheduled: true });

    const parent = await parentOf(t.store, occurrence);
    assert.equal(parent.state, "completed");
    assert.match(
      await lastOutput(t.store, parent.id),
      /enqueued 170 item jobs in 3 batches of up to 100; 100 were already enqueued/,
    );
    assert.equal((await t.store.jobsList({ worker: "visit" })).length, 270);
    assert.deepEqual(sorted(t.visited), sorted(changed));
  } finally {
    await dir.cleanup();
  }
});

/** Items a shell would act on, were one to see them. */
const HOSTILE = [
  "$(touch pwned-1)",
  "; touch pwned-2",
  "`touch pwned-3`",
  "a | touch pwned-4",
  "${HOME}",
  "$$ and $1",
  `"quoted" 'single'`,
  "*",
  "-n",
  "two\nlines",
  "{item}",
  "ünïcödé ✓",
];

Deno.test("items with shell metacharacters reach a command item job as literal data", async () => {
  const dir = await tempDir();
  try {
    const list = defineSelection({ name: "hostile", list: () => HOSTILE });
    await using t = await setup({ extra: [list] });
    const argvOut = `${dir.path}/argv.out`;
    const shellOut = `${dir.path}/shell.out`;
    // No shell sees the item: it is argument $1 and JOBS_ITEM of a fixed script.
    await t.plan(scheduleOf({
      id: "by-argv",
      every: "1h",
      selection: { worker: "hostile" },
      run: {
        command: [
          "/bin/sh",
          "-c",
          'printf "%s\\0%s\\0" "$1" "$JOBS_ITEM" >> "$2"',
          "sh",
          "{item}",
          argvOut,
        ],
        cwd: dir.path,
      },
    }));
    // A shell script reads the item from JOBS_ITEM, quoted.
    await t.plan(scheduleOf({
      id: "by-shell",
      every: "1h",
      selection: { worker: "hostile" },
      run: { command: `printf "%s\\0" "$JOBS_ITEM" >> '${shellOut}'`, shell: true, cwd: dir.path },
    }));
    const drained = await drainJobs(t.jobs);
    assert.equal(drained.completed, 2 + 2 * HOSTILE.length);

    const fields = (await Deno.readTextFile(argvOut)).split("\0").slice(0, -1);
    const pairs = Array.from(
      { length: fields.length / 2 },
      (_, i) => fields.slice(2 * i, 2 * i + 2),
    );
    for (const [argv, env] of pairs) assert.equal(argv, env);
    assert.deepEqual(pairs.map(([argv]) => argv).sort(), [...HOSTILE].sort());
    const viaShell = (await Deno.readTextFile(shellOut)).split("\0").slice(0, -1);
    assert.deepEqual(viaShell.sort(), [...HOSTILE].sort());
    const created = [];
    for await (const entry of Deno.readDir(dir.path)) created.push(entry.name);
    assert.deepEqual(created.sort(), ["argv.out", "shell.out"]);
  } finally {
    await dir.cleanup();
  }
});

Deno.test("a worker selection's list reaches a worker run as args.item, JSON values included", async () => {
  const list = defineSelection<{ n: number }>({
    name: "numbers",
    args: {
      parse: (input) => {
        const n = (input as { n?: unknown }).n;
        if (typeof n !== "number") throw new TypeError(`n must be a number, got ${n}`);
        return { n };
      },
    },
    list: ({ n }) => [...Array.from({ length: n }, (_, i) => ({ id: i })), "dup", "dup"],
  });
  await using t = await setup({ extra: [list] });
  const occurrence = await t.plan(scheduleOf({
    id: "objects",
    every: "1h",
    selection: { worker: "numbers", args: { n: 3 } },
    run: { worker: "visit" },
  }));
  await drainJobs(t.jobs);
  assert.deepEqual(t.visited, [{ id: 0 }, { id: 1 }, { id: 2 }, "dup"]);
  const parent = await parentOf(t.store, occurrence);
  assert.match(await lastOutput(t.store, parent.id), /listed 5 items \(1 listed twice, run once\)/);

  // Refused args and an unknown worker discard the run: retrying cannot help.
  const bad = await t.plan(scheduleOf({
    id: "bad-args",
    every: "1h",
    selection: { worker: "numbers", args: { n: "three" } },
    run: { worker: "visit" },
  }));
  const unknown = await t.plan(scheduleOf({
    id: "unknown",
    every: "1h",
    selection: { worker: "nowhere" },
    run: { worker: "visit" },
  }));
  await drainJobs(t.jobs);
  const [badJob, unknownJob] = [await parentOf(t.store, bad), await parentOf(t.store, unknown)];
  assert.equal(badJob.state, "discarded");
  assert.match(
    badJob.errors[0]!.error,
    /selection worker "numbers": invalid args: .*n must be a number, got three/,
  );
  assert.equal(unknownJob.state, "discarded");
  assert.match(
    unknownJob.errors[0]!.error,
    /selection worker "nowhere" is not a worker of this process/,
  );
});

Deno.test("a selection command that fails is retried with its stderr; bad output and too many items discard", async () => {
  await using t = await setup({ maxItems: 5 });
  const failing = await t.plan(scheduleOf({
    id: "failing",
    every: "1h",
    selection: { command: "echo 'cannot reach the accounts db' >&2; exit 3", shell: true },
    run: { worker: "visit" },
  }));
  const broken = await t.plan(scheduleOf({
    id: "broken",
    every: "1h",
    selection: { command: ["printf", "[1, 2"] },
    run: { worker: "visit" },
  }));
  const many = await t.plan(scheduleOf({
    id: "many",
    every: "1h",
    selection: { command: counting(6), shell: true },
    run: { worker: "visit" },
  }));
  await drainJobs(t.jobs);
  const failed = await parentOf(t.store, failing);
  assert.equal(failed.state, "retryable");
  assert.equal(
    failed.errors[0]!.error,
    `selection shell command "echo 'cannot reach the accounts db' >&2; exit 3" exited with code 3\n` +
      "stderr:\ncannot reach the accounts db",
  );
  const brokenJob = await parentOf(t.store, broken);
  assert.equal(brokenJob.state, "discarded");
  assert.match(
    brokenJob.errors[0]!.error,
    /selection output starts with "\[" but is not a JSON array/,
  );
  const manyJob = await parentOf(t.store, many);
  assert.equal(manyJob.state, "discarded");
  assert.match(manyJob.errors[0]!.error, /selection listed 6 items, more than the limit of 5/);
  assert.equal(t.visited.length, 0);
});

Deno.test("a selection command past the schedule's timeout is killed as a group, grandchild included, and retried", async () => {
  const dir = await tempDir();
  const groups = `${dir.path}/jobs.db.groups`;
  await using t = await setup({ groupsDir: groups });
  try {
    const occurrence = await t.plan(scheduleOf({
      id: "slow",
      every: "1h",
      timeout: "30s",
      selection: {
        command:
          `sleep 60 & echo $! > "${dir.path}/grandchild"; echo $$ > "${dir.path}/leader"; wait`,
        shell: true,
      },
      run: { worker: "visit" },
    }));
    const clock: FakeClock = t.clock;
    const drained = drainJobs(t.jobs);
    const leader = await readPid(`${dir.path}/leader`);
    const grandchild = await readPid(`${dir.path}/grandchild`);
    // The runner records the group once the spawn returns; the shell may write its pid first.
    await waitUntil("the group recorded", () => recordedGroups(groups).length > 0);
    assert.deepEqual(recordedGroups(groups), [`${leader}.json`]);
    clock.advance(29_999);
    assert.ok(alive(leader) && alive(grandchild), "not before the timeout");
    clock.advance(1);
    await driven(clock, drained, 50);
    assert.equal(alive(leader), false);
    await waitUntil("the grandchild to be gone", () => !alive(grandchild));
    assert.deepEqual(recordedGroups(groups), []);
    const parent = await parentOf(t.store, occurrence);
    assert.equal(parent.state, "retryable");
    assert.match(
      parent.errors[0]!.error,
      /^selection shell command "sleep 60 & echo .*…" timed out after 30000 ms$/,
    );
    assert.deepEqual(t.visited, []);
  } finally {
    await dir.cleanup();
  }
});

Deno.test("a selection whose leader exits while a grandchild ignores SIGTERM leaves no process: SIGKILL after the grace", async () => {
  const dir = await tempDir();
  const groups = `${dir.path}/jobs.db.groups`;
  await using t = await setup({ groupsDir: groups, killGraceMs: 5_000 });
  try {
    const occurrence = await t.plan(scheduleOf({
      id: "leaves",
      every: "1h",
      selection: {
        command:
          `(trap '' TERM; exec sleep 60) >/dev/null 2>&1 & echo $! > "${dir.path}/grandchild"; ` +
          `echo $$ > "${dir.path}/leader"; ` +
          // The leader lives until the test has seen its group recorded: a leader gone before
          // the runner reads its /proc entry leaves no record (see below), which is not what
          // this test is about.
          `while [ ! -e "${dir.path}/go" ]; do sleep 0.02; done; echo item-1`,
        shell: true,
      },
      run: { worker: "visit" },
    }));
    const clock: FakeClock = t.clock;
    const start = clock.now();
    const drained = drainJobs(t.jobs);
    const leader = await readPid(`${dir.path}/leader`);
    const grandchild = await readPid(`${dir.path}/grandchild`);
    // The runner records the group once the spawn returns; the shell may write its pid first.
    await waitUntil("the group recorded", () => recordedGroups(groups).length > 0, {
      timeoutMs: 30_000,
    });
    assert.deepEqual(recordedGroups(groups), [`${leader}.json`]);
    await Deno.writeTextFile(`${dir.path}/go`, "");
    await waitUntil("the leader to exit", () => !alive(leader), { timeoutMs: 30_000 });
    assert.ok(alive(grandchild), "the grandchild outlives its leader");
    // The grace (and the looks at the group during it) wait on the clock: move it on.
    await driven(clock, drained, 500);
    await waitUntil("the grandchild to be gone", () => !alive(grandchild));
    assert.ok(
      clock.now() - start >= 5_000,
      "SIGTERM is ignored: only SIGKILL after the grace ends it",
    );
    assert.deepEqual(recordedGroups(groups), []);
    assert.equal((await parentOf(t.store, occurrence)).state, "completed");
    assert.deepEqual(t.visited, ["item-1"]);
  } finally {
    await dir.cleanup();
  }
});

Deno.test("a selection's group is killed when the process exits while it runs", async () => {
  const dir = await tempDir();
  try {
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", new URL("./child_selection.ts", import.meta.url).pathname, dir.path],
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    let said = "";
    for await (const line of lines(child.stdout)) said = line;
    assert.equal((await child.status).code, 0);
    const [, leader, grandchild] = said.split(" ").map(Number);
    assert.ok(said.startsWith("running "), said);
    // Its own session: only the exit hook's SIGKILL to the group can have ended it.
    await waitUntil(
      "the selection's group to be gone",
      () => !alive(leader!) && !alive(grandchild!),
    );
  } finally {
    await dir.cleanup();
  }
});

/** The group records in `dir` (`<pgid>.json`), none when it does not exist. */
function recordedGroups(dir: string): string[] {
  try {
    return [...Deno.readDirSync(dir)].map((e) => e.name).sort();
  } catch {
    return [];
  }
}

Deno.test("itemArgs() fills the item into a command, an HTTP request and worker args", () => {
  const item = { value: "a b/${X}?&$$", text: "a b/${X}?&$$" };
  assert.deepEqual(
    itemArgs({
      kind: "command",
      argv: ["tool", "--id={item}", "{item}"],
      shell: false,
      env: { A: "1" },
    }, item),
    {
      kind: "command",
      argv: ["tool", "--id=a b/${X}?&$$", "a b/${X}?&$$"],
      shell: false,
      // `$$` is the runner's literal `$`, so the child sees the text as it is.
      env: { A: "1", JOBS_ITEM: "a b/$${X}?&$$$$" },
    },
  );
  assert.deepEqual(
    itemArgs({
      kind: "http",
      method: "POST",
      url: "https://x.test/a/{item}?q={item}",
      body: '{"id":"{item}"}',
    }, item),
    {
      kind: "http",
      method: "POST",
      url: "https://x.test/a/a%20b%2F%24%7BX%7D%3F%26%24%24?q=a%20b%2F%24%7BX%7D%3F%26%24%24",
      body: '{"id":"a b/${X}?&$$"}',
    },
  );
  assert.deepEqual(
    itemArgs({ kind: "worker", worker: "w", args: { deep: true } }, {
      value: { id: 7 },
      text: '{"id":7}',
    }),
    { deep: true, item: { id: 7 } },
  );
});

Deno.test("parseItems() reads one item per non-empty line, or one JSON array", () => {
  assert.deepEqual(parseItems("a\r\n\nb c\n  \n"), ["a", "b c", "  "]);
  assert.deepEqual(parseItems(' [1, "two", {"three": 3}]\n'), [1, "two", { three: 3 }]);
  assert.deepEqual(parseItems(""), []);
  assert.throws(
    () => parseItems("[oops"),
    /selection output starts with "\[" but is not a JSON array/,
  );
});

Deno.test("keyed() refuses items a job cannot carry, naming the item", () => {
  const command = { kind: "command" as const, argv: ["x"], shell: false };
  assert.deepEqual(keyed(["a", "b\0c"], command), {
    discard: "selection item 1 holds a NUL character, which a command cannot receive",
  });
  assert.deepEqual(keyed(["a", "x".repeat(20_000)], command), {
    discard: "selection item 1 is longer than 16384 bytes",
  });
  const ok = keyed(["a", "a", 1, "1"], { kind: "worker", worker: "w", args: {} });
  assert.ok(!("discard" in ok));
  // 1 and "1" have the same text, so the same key: one job.
  assert.deepEqual(ok.list.map((i) => i.value), ["a", 1]);
  assert.equal(ok.duplicates, 2);
});

Deno.test("the planner's jobs.fanout args are what the fan-out worker accepts", () => {
  const schedule = scheduleOf({
    id: "fan",
    every: "1h",
    selection: { command: ["ls"], env: { A: "${A}" } },
    run: { http: { method: "POST", url: "https://x.test/{item}", body: "{item}" } },
  });
  const [occurrence] = between(schedule, T, T + 1);
  const job = occurrenceJob(schedule, occurrence!);
  const worker = fanoutWorker({
    store: () => {
      throw new Error("not used");
    },
    env: () => undefined,
    clock: { now: () => T, sleep: () => Promise.resolve() },
  });
  assert.equal(job.worker, worker.name);
  assert.deepEqual(fanOutRunSchema.parse(JSON.parse(job.args)), fanOutRun(schedule));
  assert.throws(() => fanOutRunSchema.parse({ kind: "fanout", schedule: "x" }), /batchSize/);
});
