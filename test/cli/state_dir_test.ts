/**
 * Where `jobs daemon` keeps this host's records of the process groups its
 * commands run in: beside a SQLite file as before, under the XDG state
 * directory per PostgreSQL store (never with its credentials), or in
 * `--state-dir` / `JOBS_STATE_DIR`.
 */

import assert from "node:assert/strict";
import { groupsDirFor, storeStateName } from "../../src/cli/state_dir.ts";
import { runJobs, withFiles } from "../support/cli.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const PG = "postgres://jobs@db.example.com:6432/prod?schema=billing";

function env(vars: Record<string, string>): (name: string) => string | undefined {
  return (name) => vars[name];
}

Deno.test("groupsDirFor() keeps a SQLite store's records beside its file, as before", () => {
  assert.equal(
    groupsDirFor({ db: "/srv/jobs/jobs.db", env: env({ HOME: "/home/op" }) }),
    "/srv/jobs/jobs.db.groups",
  );
  assert.equal(groupsDirFor({ db: "./jobs.db", env: env({}) }), "./jobs.db.groups");
});

Deno.test("groupsDirFor() puts a PostgreSQL store's records under XDG_STATE_HOME, else ~/.local/state", () => {
  const name = storeStateName(PG);
  assert.match(name, /^db\.example\.com_6432_prod_billing_[0-9a-f]{8}$/);
  assert.equal(
    groupsDirFor({ db: PG, env: env({ XDG_STATE_HOME: "/var/state", HOME: "/home/op" }) }),
    `/var/state/jobs/${name}/groups`,
  );
  assert.equal(
    groupsDirFor({ db: PG, env: env({ HOME: "/home/op" }) }),
    `/home/op/.local/state/jobs/${name}/groups`,
  );
  // An empty or relative XDG_STATE_HOME is ignored, as the XDG specification says.
  for (const XDG_STATE_HOME of ["", "state"]) {
    assert.equal(
      groupsDirFor({ db: PG, env: env({ XDG_STATE_HOME, HOME: "/home/op" }) }),
      `/home/op/.local/state/jobs/${name}/groups`,
    );
  }
});

Deno.test("--state-dir, else JOBS_STATE_DIR, wins over the default for both stores", () => {
  const vars = env({ JOBS_STATE_DIR: "/from/env/", XDG_STATE_HOME: "/var/state" });
  assert.equal(groupsDirFor({ db: PG, stateDir: "/flag", env: vars }), "/flag/groups");
  assert.equal(groupsDirFor({ db: PG, env: vars }), "/from/env/groups");
  assert.equal(groupsDirFor({ db: "/srv/jobs.db", env: vars }), "/from/env/groups");
  assert.equal(
    groupsDirFor({ db: "/srv/jobs.db", stateDir: "/flag", env: vars }),
    "/flag/groups",
  );
});

Deno.test("storeStateName() is one name per store: the same for every user, password and scheme spelling", () => {
  const name = storeStateName(PG);
  for (
    const spelling of [
      "postgresql://jobs@db.example.com:6432/prod?schema=billing",
      "postgres://admin:s3cret@DB.example.com:6432/prod?schema=billing&password=x",
      "postgres://db.example.com:6432/prod?sslmode=require&schema=billing",
    ]
  ) assert.equal(storeStateName(spelling), name, spelling);
  assert.doesNotMatch(storeStateName("postgres://a:s3cret@h/db"), /s3cret|a@/);
  // The defaults postgres.js applies: port 5432, schema public, database postgres.
  assert.equal(
    storeStateName("postgres://u@h/"),
    storeStateName("postgres://u@h:5432/postgres?schema=public"),
  );
});

Deno.test("storeStateName() tells apart stores whose safe names are equal, and keeps to file-name characters", () => {
  const dash = storeStateName("postgres://u@h:5432/a-b");
  const slash = storeStateName("postgres://u@h:5432/a%2Fb");
  assert.notEqual(dash, slash);
  assert.equal(dash.replace(/_[0-9a-f]{8}$/, ""), slash.replace(/_[0-9a-f]{8}$/, ""));
  assert.notEqual(storeStateName(PG), storeStateName(PG.replace("billing", "billing2")));
  assert.notEqual(storeStateName(PG), storeStateName(PG.replace("6432", "6433")));
  const socket = storeStateName("postgres://u@localhost/db?host=/var/run/postgresql");
  assert.match(socket, /^[A-Za-z0-9._-]+$/);
  assert.match(socket, /^-var-run-postgresql_5432_db_public_/);
});

Deno.test("storeStateName() of a location that is no URL names it without its password", () => {
  assert.throws(
    () => storeStateName("postgres://u:s3cret@[bad/db"),
    (error: Error) => {
      assert.doesNotMatch(error.message, /s3cret/);
      assert.match(error.message, /is not a valid URL/);
      return true;
    },
  );
});

Deno.test("jobs daemon --help documents --state-dir and its defaults", async () => {
  const help = await runJobs(["daemon", "--help"], { now: NOW });
  assert.equal(help.code, 0, help.err);
  assert.match(help.out, /--state-dir <dir>/);
  assert.match(help.out, /JOBS_STATE_DIR/);
  assert.match(help.out, /<db>\.groups/);
  assert.match(help.out, /XDG_STATE_HOME/);
});

Deno.test("jobs daemon on PostgreSQL with neither XDG_STATE_HOME nor HOME asks for --state-dir, before opening the store", async () => {
  await withFiles("version: 1\nschedules: []\n", async ({ config }) => {
    // Nothing listens on port 9: had the daemon opened the store, the error would say so.
    const r = await runJobs(
      ["daemon", "--db", "postgres://u:s3cret@127.0.0.1:9/db", "--config", config],
      { now: NOW, env: {} },
    );
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, /^jobs daemon: neither XDG_STATE_HOME nor HOME is set/);
    assert.match(r.err, /give --state-dir or JOBS_STATE_DIR$/);
    assert.doesNotMatch(r.err, /s3cret/);
  });
});
