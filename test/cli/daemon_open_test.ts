/**
 * A store the daemon cannot open: every message names the path and the
 * reason found on disk (a folder that does not exist or refuses new files,
 * a file or folder that is not writable, a directory where the file should
 * be, a file that is not a database), not only SQLite's "unable to open
 * database file".
 *
 * Permission bits do not bind root, and these tests run as root in CI. The
 * cases that need them (a file 0444, a folder 0555) run the open in a child
 * process as the unprivileged user `nobody` (setpriv) when the test runs as
 * root, so the open really fails; only where neither works (root without
 * setpriv) are they skipped. The cases root can observe (a folder on /proc
 * or /sys, where root cannot create files either) run in-process through
 * the whole `jobs daemon` command.
 */

import assert from "node:assert/strict";
import { runJobs, withFiles } from "../support/cli.ts";
import { tempDir } from "../support/stores.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";

const NOW = Date.UTC(2026, 2, 1);
const CHILD = new URL("./daemon_open_child.ts", import.meta.url).pathname;
const NOBODY = 65534;
const LINUX = Deno.build.os === "linux";

const ROOT = Deno.uid() === 0;
const SETPRIV = ["/usr/bin/setpriv", "/bin/setpriv"].find((path) => {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
});

async function daemon(db: string, config: string) {
  return await runJobs(["daemon", "--db", db, "--config", config, "--listen", "off"], {
    now: NOW,
  });
}

Deno.test({
  name: "jobs daemon on /proc/jobs.db names the folder that accepts no new file and why",
  ignore: !LINUX,
  fn: () =>
    withFiles("version: 1\nschedules: []\n", async ({ config }) => {
      const r = await daemon("/proc/jobs.db", config);
      assert.equal(r.code, 1);
      assert.equal(
        r.err,
        `jobs daemon: cannot open the store "/proc/jobs.db": the folder "/proc" does not ` +
          `accept new files (no such file or directory); SQLite needs to create jobs.db, ` +
          `jobs.db-wal and jobs.db-shm in it (from --db)`,
      );
    }),
});

Deno.test({
  name: "jobs daemon on /sys/jobs.db says the folder is not writable (permission denied)",
  ignore: !LINUX,
  fn: () =>
    withFiles("version: 1\nschedules: []\n", async ({ config }) => {
      const r = await daemon("/sys/jobs.db", config);
      assert.equal(r.code, 1);
      assert.equal(
        r.err,
        `jobs daemon: cannot open the store "/sys/jobs.db": the folder "/sys" is not writable ` +
          `(permission denied); SQLite needs to create jobs.db, jobs.db-wal and jobs.db-shm in it ` +
          `(from --db)`,
      );
    }),
});

Deno.test("jobs daemon names a missing folder, a folder at the path and a file that is not a store", async () => {
  await withFiles("version: 1\nschedules: []\n", async ({ dir, config }) => {
    const missing = await daemon(`${dir}/nope/jobs.db`, config);
    assert.equal(missing.code, 1);
    assert.equal(
      missing.err,
      `jobs daemon: no directory "${dir}/nope" for the store "${dir}/nope/jobs.db" (from --db)`,
    );

    await Deno.mkdir(`${dir}/folder.db`);
    const folder = await daemon(`${dir}/folder.db`, config);
    assert.equal(folder.code, 1);
    assert.equal(
      folder.err,
      `jobs daemon: the store "${dir}/folder.db" is a directory, not a SQLite file (from --db)`,
    );

    await Deno.writeTextFile(
      `${dir}/notes.db`,
      "not a database, but long enough to look. ".repeat(50),
    );
    const garbage = await daemon(`${dir}/notes.db`, config);
    assert.equal(garbage.code, 1);
    assert.equal(
      garbage.err,
      `jobs daemon: cannot open the store "${dir}/notes.db" (from --db): file is not a database`,
    );
  });
});

/** Opens the store at `db` in a child process as a user permission bits bind; its one JSON line. */
async function openAsUnprivileged(db: string, denoDir: string): Promise<Record<string, unknown>> {
  const deno = ["run", "--no-config", "--no-lock", "--allow-read", "--allow-write", CHILD, db];
  const command = ROOT
    ? new Deno.Command(SETPRIV!, {
      args: [
        `--reuid=${NOBODY}`,
        `--regid=${NOBODY}`,
        "--clear-groups",
        "env",
        `DENO_DIR=${denoDir}`,
        `HOME=${denoDir}`,
        Deno.execPath(),
        ...deno,
      ],
      cwd: denoDir,
    })
    : new Deno.Command(Deno.execPath(), { args: deno, cwd: denoDir });
  const out = await command.output();
  const text = new TextDecoder().decode(out.stdout).trim();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return JSON.parse(text);
}

Deno.test({
  name:
    "opening a store whose file or folder is read-only names the path and which of them refuses, and why",
  // Root ignores permission bits: without setpriv there is no user to whom they apply.
  ignore: !LINUX || (ROOT && SETPRIV === undefined),
  fn: async () => {
    const cache = await tempDir();
    const work = await tempDir();
    const cases: {
      name: string;
      file: number | null;
      folder: number;
      reason: (dir: string) => string;
    }[] = [
      {
        name: "file 0444 in folder 0555",
        file: 0o444,
        folder: 0o555,
        reason: (dir) =>
          `the file is not writable (permission denied); the folder "${dir}" is not writable ` +
          `(permission denied); SQLite needs to create jobs.db-wal and jobs.db-shm beside it`,
      },
      {
        name: "file 0644 in folder 0555",
        file: 0o644,
        folder: 0o555,
        reason: (dir) =>
          `the folder "${dir}" is not writable (permission denied); SQLite needs to create ` +
          `jobs.db-wal and jobs.db-shm beside it`,
      },
      {
        name: "file 0444 in folder 0755",
        file: 0o444,
        folder: 0o755,
        reason: () => `the file is not writable (permission denied)`,
      },
      {
        name: "no file in folder 0555",
        file: null,
        folder: 0o555,
        reason: (dir) =>
          `the folder "${dir}" is not writable (permission denied); SQLite needs to create ` +
          `jobs.db, jobs.db-wal and jobs.db-shm in it`,
      },
    ];
    try {
      await Deno.chmod(cache.path, 0o777);
      await Deno.chmod(work.path, 0o755);
      for (const [i, c] of cases.entries()) {
        const dir = `${work.path}/case${i}`;
        const db = `${dir}/jobs.db`;
        await Deno.mkdir(dir);
        if (c.file !== null) {
          const store = await openSqliteStore(db);
          await store.close();
          await Deno.chmod(db, c.file);
          if (ROOT) await Deno.chown(db, NOBODY, NOBODY);
        }
        await Deno.chmod(dir, c.folder);
        if (ROOT) await Deno.chown(dir, NOBODY, NOBODY);
        const result = await openAsUnprivileged(db, cache.path);
        assert.deepEqual(result, {
          error: "StoreOpenError",
          message: `cannot open the store "${db}": ${c.reason(dir)}`,
        }, c.name);
      }
    } finally {
      for (const [i] of cases.entries()) {
        await Deno.chmod(`${work.path}/case${i}`, 0o755).catch(() => {});
      }
      await work.cleanup();
      await cache.cleanup();
    }
  },
});
