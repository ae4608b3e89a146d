/**
 * How a SQLite store hears other processes' commits (change_watch.ts): a
 * file watch wakes it, an idle store does not poll fast, and a watch that
 * hears nothing is found out and replaced by the fast poll. The watch's
 * clock is a FakeClock, so "fast" and "idle" are counted reads over a
 * stretch of its time, not wall-clock timings.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { Jobs } from "../../src/jobs.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import { type FileWatch, SIGNAL_EVERY_MS } from "../../src/store/sqlite/change_watch.ts";
import { openSqliteStore, type SqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { waitUntil } from "../../src/testing.ts";
import { tempDir } from "../support/stores.ts";

/** A file watch that never hears anything (a network mount, say) until closed. */
function deafWatch(): FileWatch {
  let close = () => {};
  const closed = new Promise<IteratorResult<{ kind: string; paths: string[] }>>((resolve) =>
    close = () => resolve({ done: true, value: undefined })
  );
  return {
    [Symbol.asyncIterator]: () => ({ next: () => closed }),
    close: () => close(),
  };
}

/** Moves the clock `ms` forward in steps, letting the watch's loop run between steps. */
async function drive(clock: FakeClock, ms: number, step: number): Promise<void> {
  for (let passed = 0; passed < ms; passed += step) {
    clock.advance(step);
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
}

/** Two stores on one fresh file: `watched` with the given options, `other` as another process would be. */
async function twoStores(
  options: Parameters<typeof openSqliteStore>[1],
): Promise<{ watched: SqliteStore; other: SqliteStore; [Symbol.asyncDispose](): Promise<void> }> {
  const dir = await tempDir();
  const path = `${dir.path}/jobs.db`;
  const watched = await openSqliteStore(path, options);
  const other = await openSqliteStore(path);
  return {
    watched,
    other,
    async [Symbol.asyncDispose]() {
      await watched.close();
      await other.close();
      await dir.cleanup();
    },
  };
}

const noop = defineWorker({ name: "noop", perform: () => {} });

Deno.test("an idle store reads data_version only at its safety-net poll, not every 2 ms", async () => {
  const clock = new FakeClock();
  await using t = await twoStores({ changeWatch: { clock, idlePollMs: 500 } });
  let wakes = 0;
  const off = t.watched.onExternalChange(() => wakes++);
  const watch = t.watched.changeWatch!;
  const before = watch.reads;
  // One second of the clock in 2 ms steps: the old poll read 500 times.
  await drive(clock, 1000, 2);
  const reads = watch.reads - before;
  assert.ok(
    reads <= 3,
    `an idle store read data_version ${reads} times in 1 s, expected at most 3`,
  );
  assert.equal(wakes, 0);
  assert.equal(watch.blind, null, "the watch hears, so it is not blind");
  off();
});

Deno.test("a commit from another connection wakes onExternalChange through the file watch, the clock standing still", async () => {
  const clock = new FakeClock();
  // No poll can find it: the fast poll's period is an hour and the clock never moves.
  await using t = await twoStores({ changePollMs: 3_600_000, changeWatch: { clock } });
  let wakes = 0;
  const off = t.watched.onExternalChange(() => wakes++);
  await new Jobs({ store: t.other, workers: [noop], clock }).enqueue(noop, {});
  await waitUntil("the watch to hear the other connection's commit", () => wakes > 0);
  assert.equal(t.watched.changeWatch!.blind, null);
  off();
});

Deno.test("a watch that hears nothing falls back to the fast poll, told once, and a runtime still wakes for another connection's job", async () => {
  const clock = new FakeClock();
  const blind: string[] = [];
  await using t = await twoStores({
    changePollMs: 2,
    changeWatch: { clock, watch: deafWatch, idlePollMs: 500, onBlind: (r) => blind.push(r) },
  });
  const ran: number[] = [];
  const worker = defineWorker<{ n: number }>({
    name: "mark",
    perform: (args) => void ran.push(args.n),
  });
  // The runtime's own poll is an hour away: only the store's change watch can wake it.
  const jobs = new Jobs({ store: t.watched, workers: [worker], clock, logger: () => {} });
  const runtime = await jobs.start({ queues: { default: 1 }, node: "n1", pollMs: 3_600_000 });
  try {
    const other = new Jobs({ store: t.other, workers: [worker], clock });
    // The watch's first look is a whole period after its start (a writer may
    // not know of it before): the commit comes after that.
    await drive(clock, 6_500, 500);
    await other.enqueue(worker, { n: 1 });
    // The safety-net poll finds the commit; another process's commit with no
    // event heard for a whole self-check period after makes the watch blind.
    for (let i = 0; i < 400 && blind.length === 0; i++) await drive(clock, 100, 50);
    assert.equal(blind.length, 1, "told once that the watch is blind");
    assert.match(blind[0]!, /unheard/);
    assert.match(t.watched.changeWatch!.blind ?? "", /unheard/);
    await waitUntil("the first job to run", () => ran.includes(1));

    // Blind, it polls fast again: 100 ms of the clock in 2 ms steps reads about 50 times.
    const before = t.watched.changeWatch!.reads;
    await drive(clock, 100, 2);
    const reads = t.watched.changeWatch!.reads - before;
    assert.ok(
      reads >= 40,
      `a blind watch read data_version ${reads} times in 100 ms, expected ~50`,
    );

    await other.enqueue(worker, { n: 2 });
    for (let i = 0; i < 200 && !ran.includes(2); i++) await drive(clock, 2, 2);
    await waitUntil("the second job to run", () => ran.includes(2));
    assert.equal(blind.length, 1, "told only once");
  } finally {
    await runtime.stop();
  }
});

Deno.test("a watch that cannot start is blind at once and the fast poll runs", async () => {
  const clock = new FakeClock();
  const blind: string[] = [];
  await using t = await twoStores({
    changeWatch: {
      clock,
      watch: () => {
        throw new Error("inotify watch limit reached");
      },
      onBlind: (r) => blind.push(r),
    },
  });
  let wakes = 0;
  const off = t.watched.onExternalChange(() => wakes++);
  assert.deepEqual(blind, ["the wake folder cannot be watched: inotify watch limit reached"]);
  await new Jobs({ store: t.other, workers: [noop], clock }).enqueue(noop, {});
  await drive(clock, 10, 2);
  await waitUntil("the fast poll to see the other connection's commit", () => wakes > 0);
  off();
});

Deno.test("the change watch watches the database's wake folder, never the database's own folder", async () => {
  // Deno.watchFs opens and closes each changed file of the folder it watches,
  // which drops every POSIX lock this process holds on it: watching jobs.db's
  // folder let another process remove a running daemon's WAL.
  const clock = new FakeClock();
  const watched: string[] = [];
  await using t = await twoStores({
    changeWatch: {
      clock,
      watch: (folder) => {
        watched.push(folder);
        return deafWatch();
      },
    },
  });
  const off = t.watched.onExternalChange(() => {});
  const db = await Deno.realPath(t.watched.location);
  assert.deepEqual(watched, [`${db}.wake`]);
  assert.ok((await Deno.stat(`${db}.wake/commit`)).isFile);
  off();
});

/** The wake file's time of change, as the touches set it (ms), or null when there is none. */
async function wakeStamp(store: SqliteStore): Promise<number | null> {
  try {
    const info = await Deno.stat(`${await Deno.realPath(store.location)}.wake/commit`);
    return info.mtime?.getTime() ?? null;
  } catch {
    return null;
  }
}

Deno.test("a write that changes no row touches no wake file; one that does, does", async () => {
  // An idle node's claim, stager and planner passes change nothing: touching
  // the wake file for them woke every watching process twice a second.
  const clock = new FakeClock();
  await using t = await twoStores({ changeWatch: { clock } });
  const off = t.watched.onExternalChange(() => {});
  const before = await wakeStamp(t.other);
  assert.notEqual(before, null, "the watch made the wake file");
  // Past the spacing of touches (the store's opening wrote), so that a touch
  // would come at once; and past it again after, for one put off.
  const spacing = () => new Promise((resolve) => setTimeout(resolve, 4 * SIGNAL_EVERY_MS));
  await spacing();
  const claim = { queue: "default", node: "n2", limit: 5, leaseMs: 30_000 };
  assert.deepEqual((await t.other.jobsClaim({ ...claim, now: clock.now() })).jobs, []);
  assert.equal((await t.other.jobsStage({ now: clock.now(), limit: 100 })).staged, 0);
  await spacing();
  assert.equal(await wakeStamp(t.other), before, "no row changed: no touch");
  await new Jobs({ store: t.other, workers: [noop], clock }).enqueue(noop, {});
  // At once, or by the end of its 20 ms window (the store's opening wrote too).
  await waitUntil(
    "an enqueue to touch the wake file",
    async () => (await wakeStamp(t.other)) !== before,
  );
  off();
});

Deno.test("heartbeats are not signalled at once, and an enqueue after them is", async () => {
  // A heartbeat touches at most once in QUIET_SIGNAL_MS: an idle daemon's
  // heartbeat, once a second, woke itself and every watching process.
  const clock = new FakeClock();
  await using t = await twoStores({ changeWatch: { clock } });
  const off = t.watched.onExternalChange(() => {});
  const beat = () => t.other.nodeBeat({ node: "n2", queues: { default: 1 }, now: clock.now() });
  await beat();
  const first = await wakeStamp(t.other);
  for (let i = 0; i < 5; i++) await beat();
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(await wakeStamp(t.other), first, "heartbeats 50 ms apart are not signalled yet");
  // A put-off quiet touch must not hold back a commit others wait for.
  await new Jobs({ store: t.other, workers: [noop], clock }).enqueue(noop, {});
  await waitUntil(
    "the enqueue after heartbeats to touch the wake file",
    async () => (await wakeStamp(t.other)) !== first,
  );
  off();
});

Deno.test("a store's own heartbeats, which touch nothing at once, never make its watch blind", async () => {
  // They move its WAL with no event to hear: the self-check looked at the WAL.
  const clock = new FakeClock();
  const blind: string[] = [];
  await using t = await twoStores({ changeWatch: { clock, onBlind: (r) => blind.push(r) } });
  const off = t.watched.onExternalChange(() => {});
  for (let s = 0; s < 60; s++) {
    await t.watched.nodeBeat({ node: "n1", queues: { default: 1 }, now: clock.now() });
    await drive(clock, 1000, 250);
  }
  assert.deepEqual(blind, []);
  assert.equal(t.watched.changeWatch!.blind, null);
  off();
});

Deno.test("a store whose own watch is the only one touches no wake file; another watch makes it touch", async () => {
  // Its own watch hearing its own commits woke it mid-work: same-process
  // enqueue-to-start p95 0.95 -> 1.6 ms.
  const clock = new FakeClock();
  await using t = await twoStores({ changeWatch: { clock } });
  const off = t.watched.onExternalChange(() => {});
  const jobs = new Jobs({ store: t.watched, workers: [noop], clock });
  const before = await wakeStamp(t.watched);
  assert.notEqual(before, null);
  for (let i = 0; i < 3; i++) {
    await jobs.enqueue(noop, {});
    await new Promise((resolve) => setTimeout(resolve, 2 * SIGNAL_EVERY_MS));
  }
  assert.equal(await wakeStamp(t.watched), before, "nobody else listens: no touch");
  // Another watch (the other store's, as a dashboard's would be) appears:
  // within PRESENCE_CHECK_MS the commits touch again.
  const offOther = t.other.onExternalChange(() => {});
  await waitUntil("a commit to touch the wake file once another watch is there", async () => {
    await jobs.enqueue(noop, {});
    return (await wakeStamp(t.watched)) !== before;
  });
  offOther();
  off();
});

Deno.test("the presence file of a watch whose process is gone does not count, and is removed", async () => {
  if (!(await Deno.stat("/proc/self").catch(() => null))) return; // Linux only: /proc tells
  const clock = new FakeClock();
  await using t = await twoStores({ changeWatch: { clock } });
  const off = t.watched.onExternalChange(() => {});
  const folder = `${await Deno.realPath(t.watched.location)}.wake`;
  let dead = 4_000_000;
  while (await Deno.stat(`/proc/${dead}`).catch(() => null)) dead++;
  const stale = `${folder}/watch-${dead}-1`;
  await Deno.writeFile(stale, new Uint8Array());
  const before = await wakeStamp(t.watched);
  await new Jobs({ store: t.watched, workers: [noop], clock }).enqueue(noop, {});
  await new Promise((resolve) => setTimeout(resolve, 2 * SIGNAL_EVERY_MS));
  assert.equal(await wakeStamp(t.watched), before, "a dead watch hears nothing: no touch");
  assert.equal(await Deno.stat(stale).catch(() => null), null, "its presence file removed");
  off();
});
