import assert from "node:assert/strict";
import type { ScheduleConfig } from "../../src/config/types.ts";
import { waitUntil } from "../../src/testing.ts";
import { ScheduleSource } from "../../src/runtime/schedule_source.ts";
import { tempDir } from "../support/stores.ts";

const file = (ids: string[]) =>
  `version: 1\nschedules:\n${
    ids.map((id) => `  - id: ${id}\n    every: 1m\n    run: { command: ["true"] }\n`).join("")
  }`;

function recorder() {
  const events: { event: string; fields: Record<string, unknown> }[] = [];
  return {
    events,
    logger: (event: string, fields: Record<string, unknown>) => events.push({ event, fields }),
  };
}

Deno.test("a schedules.yaml with errors is refused and the last good configuration stays", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/schedules.yaml`;
    await Deno.writeTextFile(path, file(["a", "b"]));
    const log = recorder();
    const source = await ScheduleSource.open(path, log.logger);
    const seen: ScheduleConfig[] = [];
    source.onChange((config) => seen.push(config));

    await Deno.writeTextFile(path, file(["a", "b"]).replace("every: 1m", "every: 0m"));
    const refused = await source.reload();
    assert.equal(refused.ok, false);
    assert.deepEqual(source.config.schedules.map((s) => s.id), ["a", "b"]);
    assert.equal(seen.length, 0);
    const rejected = log.events.find((e) => e.event === "config.rejected");
    assert.ok(rejected, "the refusal is logged");
    assert.match(
      String((rejected.fields.errors as string[])[0]),
      /schedules\.yaml:4:\d+: schedule "a"/,
    );

    await Deno.writeTextFile(path, file(["a", "c"]));
    const accepted = await source.reload();
    assert.equal(accepted.ok && accepted.changed, true);
    assert.deepEqual(source.config.schedules.map((s) => s.id), ["a", "c"]);
    assert.deepEqual(seen.map((c) => c.schedules.map((s) => s.id)), [["a", "c"]]);
    assert.equal((await source.reload()).ok, true, "an unchanged file reloads quietly");
    assert.equal(seen.length, 1);
    source.close();
  } finally {
    await dir.cleanup();
  }
});

Deno.test("a watched schedules.yaml is reloaded when it is saved, also by rename", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/schedules.yaml`;
    await Deno.writeTextFile(path, file(["a"]));
    const source = await ScheduleSource.open(path, recorder().logger);
    source.watch();
    await Deno.writeTextFile(path, file(["a", "b"]));
    await waitUntil("the saved file is loaded", () => source.config.schedules.length === 2);
    // Editors save by writing a new file and renaming it over the old one.
    await Deno.writeTextFile(`${path}.tmp`, file(["a", "b", "c"]));
    await Deno.rename(`${path}.tmp`, path);
    await waitUntil("the renamed file is loaded", () => source.config.schedules.length === 3);
    source.close();
  } finally {
    await dir.cleanup();
  }
});

Deno.test("a first schedules.yaml with errors fails to open, naming them", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/schedules.yaml`;
    await Deno.writeTextFile(path, file(["a", "a"]));
    await assert.rejects(
      ScheduleSource.open(path, recorder().logger),
      /schedules\.yaml: 1 error\(s\):\n.*schedules\.yaml:\d+:\d+: .*"a"/,
    );
  } finally {
    await dir.cleanup();
  }
});

Deno.test("after checkWorkers, a reload naming an unknown worker or another module is refused", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/schedules.yaml`;
    const withWorker = (module: string, worker: string) =>
      `version: 1\nworkers: ./${module}\nschedules:\n` +
      `  - id: a\n    every: 1m\n    run: { worker: ${worker} }\n`;
    await Deno.writeTextFile(path, withWorker("workers.ts", "greet"));
    const log = recorder();
    const source = await ScheduleSource.open(path, log.logger);
    source.checkWorkers(`${dir.path}/workers.ts`, ["greet"]);
    assert.equal((await source.reload()).ok, true);

    await Deno.writeTextFile(path, withWorker("workers.ts", "gret"));
    const unknown = await source.reload();
    assert.ok(!unknown.ok);
    assert.equal(unknown.errors[0]?.code, "worker-unknown");
    assert.match(unknown.errors[0]!.message, /run\.worker "gret" is not a worker/);

    await Deno.writeTextFile(path, withWorker("other.ts", "greet"));
    const moved = await source.reload();
    assert.ok(!moved.ok);
    assert.match(moved.errors[0]!.message, /restart it to load ".*other\.ts"/);
    assert.equal(source.config.schedules[0]?.run.kind, "worker");
    assert.deepEqual(source.config.schedules[0]?.run, {
      kind: "worker",
      worker: "greet",
      args: {},
    });
    source.close();
  } finally {
    await dir.cleanup();
  }
});

Deno.test("every reload logs where things stand: rejected, then reloaded when fixed back, then unchanged", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/schedules.yaml`;
    await Deno.writeTextFile(path, file(["a"]));
    const log = recorder();
    const source = await ScheduleSource.open(path, log.logger);
    // The daemon's start check logs nothing: its first line is not a stale "unchanged".
    assert.equal((await source.verify()).ok, true);
    assert.equal(log.events.length, 0);

    await source.reload();
    assert.deepEqual(log.events.map((e) => e.event), ["config.unchanged"]);

    await Deno.writeTextFile(path, file(["a"]).replace("every: 1m", "every: 0m"));
    await source.reload();
    // The operator undoes the bad edit: the file equals the configuration kept.
    await Deno.writeTextFile(path, file(["a"]));
    const fixed = await source.reload();
    assert.equal(fixed.ok, true);
    await source.reload();
    assert.deepEqual(log.events.map((e) => e.event), [
      "config.unchanged",
      "config.rejected",
      "config.reloaded",
      "config.unchanged",
    ]);
    source.close();
  } finally {
    await dir.cleanup();
  }
});

Deno.test("a schedules.yaml whose command starts a program that is not there is used, and logged as config.warning at each load", async () => {
  const dir = await tempDir();
  try {
    const path = `${dir.path}/schedules.yaml`;
    await Deno.writeTextFile(
      path,
      'version: 1\nschedules:\n  - id: a\n    every: 1m\n    run: { command: ["./bin/app"] }\n',
    );
    const log = recorder();
    const source = await ScheduleSource.open(path, log.logger);
    source.lookForPrograms({ cwd: "/srv/app", path: "/usr/bin", stat: () => null });
    const started = await source.verify();
    assert.equal(started.ok, true);
    const warning = {
      event: "config.warning",
      fields: {
        file: path,
        code: "command-missing",
        warning: `${path}:5:22: schedule "a": run.command[0] "./bin/app" does not exist: ` +
          "no file /srv/app/bin/app (a command without cwd runs in the daemon's working " +
          "directory, here the current folder)",
      },
    };
    assert.deepEqual(log.events, [warning]);
    assert.equal((await source.reload()).ok, true);
    assert.deepEqual(log.events.map((e) => e.event), [
      "config.warning",
      "config.warning",
      "config.unchanged",
    ]);
    source.close();
  } finally {
    await dir.cleanup();
  }
});
