/**
 * The project file `.jobs.yaml`: found in the current folder or above, it
 * names the store and the schedules file once (paths relative to it), below
 * `--db`/`--config` and `JOBS_DB`/`JOBS_CONFIG`; every error about the
 * store says which one was used and why.
 */

import assert from "node:assert/strict";
import { runJobs } from "../support/cli.ts";
import { tempDir } from "../support/stores.ts";

const NOW = Date.UTC(2026, 5, 1, 9);

const SCHEDULES = `version: 1
schedules:
  - id: nightly
    cron: "0 3 * * *"
    run: { command: ["true"] }
`;

/** A temp project: `.jobs.yaml` naming `stores/main.db` and `conf/schedules.yaml`, and a subfolder. */
async function withProject(
  fn: (p: { dir: string; sub: string; db: string; config: string; file: string }) => Promise<void>,
): Promise<void> {
  const dir = await tempDir();
  try {
    const sub = `${dir.path}/services/api`;
    await Deno.mkdir(sub, { recursive: true });
    await Deno.mkdir(`${dir.path}/stores`);
    await Deno.mkdir(`${dir.path}/conf`);
    await Deno.writeTextFile(`${dir.path}/conf/schedules.yaml`, SCHEDULES);
    const file = `${dir.path}/.jobs.yaml`;
    await Deno.writeTextFile(file, "db: stores/main.db\nconfig: ./conf/schedules.yaml\n");
    await fn({
      dir: dir.path,
      sub,
      db: `${dir.path}/stores/main.db`,
      config: `${dir.path}/conf/schedules.yaml`,
      file,
    });
  } finally {
    await dir.cleanup();
  }
}

Deno.test("the project file found from a subfolder names the store and the schedules file, and errors name it", async () => {
  await withProject(async (p) => {
    const missing = await runJobs(["status"], { now: NOW, cwd: p.sub });
    assert.equal(missing.code, 1);
    assert.equal(
      missing.err,
      `jobs status: the store is not readable: no file "${p.db}" for the store ` +
        `(from ${p.file}); a daemon creates it when it starts, or run: jobsctl migrate --db ${p.db}`,
    );

    const migrated = await runJobs(["migrate"], { now: NOW, cwd: p.sub });
    assert.equal(migrated.code, 0, migrated.err);
    await Deno.stat(p.db);
    const status = await runJobs(["status"], { now: NOW, cwd: p.sub });
    assert.equal(status.code, 0, status.err);
    assert.match(status.out, new RegExp(`^store: sqlite ${p.db}: reachable`, "m"));
    // The schedules file came from the project file too: its schedule is declared.
    assert.match(status.out, /^ {2}nightly {2}enabled$/m);
  });
});

Deno.test("--db beats JOBS_DB, which beats the project file, which beats the default; each error says which", async () => {
  await withProject(async (p) => {
    const env = `${p.dir}/from-env.db`;
    const flag = `${p.dir}/from-flag.db`;
    const byEnv = await runJobs(["ls"], { now: NOW, cwd: p.sub, env: { JOBS_DB: env } });
    assert.equal(byEnv.code, 1);
    assert.match(
      byEnv.err,
      new RegExp(`^jobs ls: no file "${env}" for the store \\(from JOBS_DB\\)`),
    );
    const byFlag = await runJobs(["ls", "--db", flag], {
      now: NOW,
      cwd: p.sub,
      env: { JOBS_DB: env },
    });
    assert.equal(byFlag.code, 1);
    assert.match(
      byFlag.err,
      new RegExp(`^jobs ls: no file "${flag}" for the store \\(from --db\\)`),
    );

    // JOBS_CONFIG beats the project file's config: a missing one is an error naming it.
    const config = await runJobs(["check"], {
      now: NOW,
      cwd: p.sub,
      env: { JOBS_CONFIG: `${p.dir}/nope.yaml` },
    });
    assert.notEqual(config.code, 0);
    assert.match(config.err, /nope\.yaml/);
    const fromProject = await runJobs(["check"], { now: NOW, cwd: p.sub });
    assert.equal(fromProject.code, 0, fromProject.err);

    // Above the project, the default applies, and the error says so.
    const outside = await tempDir();
    try {
      const byDefault = await runJobs(["ls"], { now: NOW, cwd: outside.path });
      assert.equal(byDefault.code, 1);
      assert.match(
        byDefault.err,
        /for the store \(the default, as no --db, JOBS_DB or \.jobs\.yaml names one\)/,
      );
    } finally {
      await outside.cleanup();
    }
  });
});

Deno.test("a project file with an unknown key or a bad value fails the command naming the file", async () => {
  await withProject(async (p) => {
    await Deno.writeTextFile(p.file, "cofnig: conf/schedules.yaml\n");
    const unknown = await runJobs(["ls"], { now: NOW, cwd: p.sub });
    assert.equal(unknown.code, 1);
    assert.equal(
      unknown.err,
      `jobs: ${p.file}: unknown key "cofnig"; did you mean "config"? ` +
        "(a project file holds db: and config:)",
    );
    await Deno.writeTextFile(p.file, "db: [a, b]\n");
    const bad = await runJobs(["ls"], { now: NOW, cwd: p.sub });
    assert.equal(bad.err, `jobs: ${p.file}: db must be a path, got ["a","b"]`);
    await Deno.writeTextFile(p.file, 'db: "unclosed\n');
    const yaml = await runJobs(["ls"], { now: NOW, cwd: p.sub });
    assert.match(yaml.err, new RegExp(`^jobs: ${p.file}:\\d+: the project file is not valid YAML`));
  });
});
