import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { commandWorker } from "../../src/runners/command.ts";
import {
  groupAlive,
  type GroupRecord,
  ProcessGroup,
  processStart,
  type ReapedGroup,
  type ReapOptions,
  reapOrphans,
  recordGroup,
  signalGroup,
} from "../../src/process/process_group.ts";
import { drainQueue, waitUntil } from "../../src/testing.ts";
import { tempDir, tempJobs } from "../support/stores.ts";
import { alive } from "../runners/processes.ts";

/** A script in a process group of its own (pgid = its pid), as the runners start commands. */
function startGroup(script: string): Deno.ChildProcess {
  return new Deno.Command("/bin/sh", {
    args: ["-c", script],
    stdin: "null",
    stdout: "null",
    stderr: "null",
    detached: true,
  }).spawn();
}

/** Kills what is left of the group and collects its leader (for `finally`). */
async function stopGroup(child: Deno.ChildProcess): Promise<void> {
  signalGroup(child.pid, "SIGKILL");
  await child.status;
}

/** A pid that belonged to a process that has exited: a dead owner. */
async function deadPid(): Promise<number> {
  const child = new Deno.Command("true", { stdout: "null", stderr: "null" }).spawn();
  await child.status;
  return child.pid;
}

function readRecord(dir: string, pgid: number): GroupRecord {
  return JSON.parse(Deno.readTextFileSync(`${dir}/${pgid}.json`));
}

function writeRecord(dir: string, record: GroupRecord): void {
  Deno.writeTextFileSync(`${dir}/${record.pgid}.json`, JSON.stringify(record));
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Records `child`'s group as this process would, then hands it to a dead owner. */
async function orphanRecord(dir: string, child: Deno.ChildProcess): Promise<GroupRecord> {
  recordGroup(dir, { pgid: child.pid, job: 7, fence: 3 });
  const record = { ...readRecord(dir, child.pid), ownerPid: await deadPid() };
  writeRecord(dir, record);
  return record;
}

/** Runs `reapOrphans`, moving the fake clock each time it waits between looks at a group. */
async function reap(
  options: Omit<ReapOptions, "clock" | "logger">,
  clock = new FakeClock(),
): Promise<{ reaped: ReapedGroup[]; events: [string, Record<string, unknown>][] }> {
  const events: [string, Record<string, unknown>][] = [];
  let settled = false;
  const reaping = reapOrphans({
    ...options,
    clock,
    logger: (event, fields) => events.push([event, fields]),
  }).finally(() => (settled = true));
  while (!settled) {
    await waitUntil("the reaper to wait or finish", () => settled || clock.sleepers > 0);
    if (!settled) clock.advance(options.pollMs ?? 50);
  }
  return { reaped: await reaping, events };
}

Deno.test("processStart() reads field 22 of /proc/<pid>/stat, undefined for a gone pid", async () => {
  const start = processStart(Deno.pid);
  assert.ok(Number.isSafeInteger(start) && start! > 0, `start time ${start}`);
  assert.equal(processStart(Deno.pid), start);
  assert.equal(processStart(await deadPid()), undefined);
});

Deno.test("reapOrphans() kills a live group whose owner is dead and removes its record", async () => {
  const dir = await tempDir();
  // A leader and a member in the background: the whole group must go.
  const child = startGroup("sleep 300 & exec sleep 300");
  try {
    await waitUntil("the member to start", () => countMembers(child.pid) === 2);
    const record = await orphanRecord(dir.path, child);
    assert.equal(record.ownerPid === Deno.pid, false);

    const { reaped, events } = await reap({ dir: dir.path });

    assert.deepEqual(reaped, [{ pgid: child.pid, job: 7, fence: 3, signal: "SIGTERM" }]);
    assert.equal(groupAlive(child.pid), false);
    assert.equal((await child.status).signal, "SIGTERM");
    assert.equal(exists(`${dir.path}/${child.pid}.json`), false);
    assert.deepEqual(events, [
      ["command.orphan_reaped", { pgid: child.pid, job: 7, fence: 3, signal: "SIGTERM" }],
    ]);
  } finally {
    await stopGroup(child);
    await dir.cleanup();
  }
});

Deno.test("reapOrphans() sends SIGKILL once the grace has passed to a group ignoring SIGTERM", async () => {
  const dir = await tempDir();
  // An ignored signal stays ignored across exec.
  const child = startGroup("trap '' TERM; exec sleep 300");
  try {
    await waitUntil("the leader to exec sleep", () => commOf(child.pid) === "sleep");
    await orphanRecord(dir.path, child);
    const clock = new FakeClock();
    const reaping = reapOrphans({
      dir: dir.path,
      logger: () => {},
      clock,
      graceMs: 1_000,
      pollMs: 1_000,
    });
    await waitUntil("the reaper to wait out the grace", () => clock.sleepers > 0);
    assert.equal(groupAlive(child.pid), true, "SIGTERM is ignored");
    clock.advance(999);
    assert.equal(groupAlive(child.pid), true, "not killed before the grace ends");
    clock.advance(1);
    const reaped = await reaping;
    assert.deepEqual(reaped.map((r) => r.signal), ["SIGKILL"]);
    assert.equal((await child.status).signal, "SIGKILL");
    assert.equal(exists(`${dir.path}/${child.pid}.json`), false);
  } finally {
    await stopGroup(child);
    await dir.cleanup();
  }
});

Deno.test("reapOrphans() leaves the record and group of a live owner alone", async () => {
  const dir = await tempDir();
  const child = startGroup("exec sleep 300");
  try {
    // Recorded by this test process, which is alive: another daemon's running command.
    recordGroup(dir.path, { pgid: child.pid, job: 1, fence: 1 });
    const record = readRecord(dir.path, child.pid);
    assert.deepEqual(
      [record.ownerPid, record.ownerStart, record.procStart],
      [Deno.pid, processStart(Deno.pid), processStart(child.pid)],
    );

    const { reaped, events } = await reap({ dir: dir.path });

    assert.deepEqual(reaped, []);
    assert.deepEqual(events, []);
    assert.equal(groupAlive(child.pid), true);
    assert.deepEqual(readRecord(dir.path, child.pid), record);
  } finally {
    await stopGroup(child);
    await dir.cleanup();
  }
});

Deno.test("reapOrphans() removes stale and unreadable records without signalling anything", async () => {
  const dir = await tempDir();
  const reused = startGroup("exec sleep 300");
  const otherBoot = startGroup("exec sleep 300");
  try {
    // The group exited: its pid names nothing (or, later, someone else).
    const gone = startGroup("exit 0");
    await gone.status;
    const template = await orphanRecord(dir.path, reused);
    writeRecord(dir.path, { ...template, pgid: gone.pid });
    // The pid now leads another process than the one recorded (another start time).
    writeRecord(dir.path, { ...template, procStart: template.procStart - 1 });
    // Pids and start times of another boot mean nothing on this one.
    writeRecord(dir.path, {
      ...template,
      pgid: otherBoot.pid,
      procStart: processStart(otherBoot.pid)!,
      boot: "00000000-0000-0000-0000-000000000000",
    });
    Deno.writeTextFileSync(`${dir.path}/123.json`, "{not json");
    Deno.writeTextFileSync(`${dir.path}/456.json`, JSON.stringify({ pgid: "456" }));

    const { reaped, events } = await reap({ dir: dir.path });

    assert.deepEqual(reaped, []);
    assert.deepEqual(events, []);
    assert.equal(groupAlive(reused.pid), true);
    assert.equal(groupAlive(otherBoot.pid), true);
    assert.deepEqual([...Deno.readDirSync(dir.path)].map((e) => e.name), []);
  } finally {
    await stopGroup(reused);
    await stopGroup(otherBoot);
    await dir.cleanup();
  }
});

Deno.test("reapOrphans() of a directory that does not exist reaps nothing", async () => {
  const dir = await tempDir();
  try {
    const { reaped } = await reap({ dir: `${dir.path}/never.groups` });
    assert.deepEqual(reaped, []);
  } finally {
    await dir.cleanup();
  }
});

Deno.test("commandWorker with groupsDir records the running group and forgets it once gone", async () => {
  const dir = await tempDir();
  const groups = `${dir.path}/jobs.db.groups`;
  const clock = new FakeClock();
  const worker = commandWorker({ env: () => undefined, clock, groupsDir: groups });
  await using t = await tempJobs([worker], { clock });
  try {
    const script = `echo $$ > "$1/pid.tmp"; mv "$1/pid.tmp" "$1/pid"; ` +
      `while [ ! -e "$1/go" ]; do sleep 0.05; done`;
    const { id } = await t.jobs.enqueue("jobs.command", {
      kind: "command",
      argv: ["/bin/sh", "-c", script, "sh", dir.path],
      shell: false,
    });
    const drained = drainQueue(t.jobs, "default");
    const pid = await waitUntil(
      "the command to start",
      async () => Number(await Deno.readTextFile(`${dir.path}/pid`).catch(() => "")) || undefined,
    );
    const record = await waitUntil("the group's record", () => {
      try {
        return readRecord(groups, pid);
      } catch {
        return undefined;
      }
    });
    assert.deepEqual(
      [record.pgid, record.job, record.fence, record.ownerPid, record.procStart],
      [pid, id, 1, Deno.pid, processStart(pid)],
    );

    await Deno.writeTextFile(`${dir.path}/go`, "");
    assert.equal((await drained).completed, 1);
    assert.deepEqual([...Deno.readDirSync(groups)].map((e) => e.name), []);
  } finally {
    await dir.cleanup();
  }
});

/** How many live (not zombie) processes are in group `pgid`. */
function countMembers(pgid: number): number {
  let count = 0;
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) === pgid && fields[0] !== "Z") count++;
    } catch {
      // Exited while we looked.
    }
  }
  return count;
}

/** The program name of process `pid`, or "" once it is gone. */
function commOf(pid: number): string {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/comm`).trim();
  } catch {
    return "";
  }
}

/** A script leading its own group with piped output, watched by a ProcessGroup on `clock`. */
function watched(script: string, clock: FakeClock, killGraceMs = 5_000) {
  const child = new Deno.Command("/bin/sh", {
    args: ["-c", script],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    detached: true,
  }).spawn();
  let stdout = "";
  const group = new ProcessGroup(child, { clock, killGraceMs }, {
    stdout: (chunk) => stdout += new TextDecoder().decode(chunk),
    stderr: () => {},
  });
  return { group, stdout: () => stdout };
}

Deno.test("ProcessGroup ends once what outlived the leader exits on SIGTERM, without waiting out the grace", async () => {
  const clock = new FakeClock();
  // The grandchild takes a moment to clean up after SIGTERM, then exits.
  const { group, stdout } = watched(
    `(trap 'sleep 0.2; exit 0' TERM; while :; do sleep 0.05; done) >/dev/null 2>&1 & echo $!`,
    clock,
  );
  try {
    const end = await group.wait(new AbortController().signal, undefined);
    assert.equal(end.kind === "exited" && end.status.code, 0);
    await group.drained;
    const grandchild = Number(stdout().trim());
    assert.ok(alive(grandchild), "the grandchild outlives its leader");
    let done = false;
    const finished = group.finish(false).then(() => done = true);
    await waitUntil("the grandchild to exit on SIGTERM", () => !alive(grandchild));
    // One look later (50 ms of the clock, not the 5 s grace) the run is over.
    await waitUntil("a look at the group", () => clock.sleepers > 0);
    clock.advance(50);
    await waitUntil("finish() to end after one look", () => done);
    await finished;
    assert.equal(groupAlive(group.pgid), false);
  } finally {
    group.release();
    signalGroup(group.pgid, "SIGKILL");
  }
});

Deno.test("ProcessGroup records its group while it runs and forgets it on release", async () => {
  const dir = await tempDir();
  const groups = `${dir.path}/jobs.db.groups`;
  const clock = new FakeClock();
  const child = new Deno.Command("/bin/sh", {
    args: ["-c", "exec sleep 60"],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    detached: true,
  }).spawn();
  const group = new ProcessGroup(child, { clock, killGraceMs: 1_000, groupsDir: groups }, {
    stdout: () => {},
    stderr: () => {},
  });
  try {
    group.record({ job: 9, fence: 4 });
    const record = readRecord(groups, child.pid);
    assert.deepEqual([record.pgid, record.job, record.fence], [child.pid, 9, 4]);
    const stop = new AbortController();
    const waiting = group.wait(stop.signal, 2_000);
    clock.advance(2_000);
    assert.deepEqual(await waiting, { kind: "timeout", ms: 2_000 });
    await group.finish(true);
    assert.equal((await child.status).signal, "SIGTERM");
    group.release();
    assert.deepEqual([...Deno.readDirSync(groups)], []);
  } finally {
    group.release();
    signalGroup(child.pid, "SIGKILL");
    await dir.cleanup();
  }
});
