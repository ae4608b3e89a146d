/**
 * `jobs daemon` as a subprocess, as an operator runs it: a fast schedule
 * whose command appends its occurrence to a ledger file runs each occurrence
 * once, and SIGTERM shuts the daemon down cleanly with exit code 0; flags
 * that are wrong (`--lease`, `--public-url`) exit 2 naming the value.
 */

import assert from "node:assert/strict";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { waitUntil } from "../../src/testing.ts";
import { runJobs, withFiles } from "../support/cli.ts";
import { daemonDir, jobsCommand, spawnDaemon } from "../support/daemon_process.ts";

const SCHEDULES = `version: 1
queues:
  default: { concurrency: 2 }
schedules:
  - id: tick
    every: 1s
    misfire: skip
    run:
      command: ["sh", "-c", "echo \\"$JOBS_OCCURRENCE $JOBS_FENCE\\" >> ledger; echo ticked"]
      cwd: .
`;

Deno.test({
  name: "jobs daemon runs each occurrence of a schedule once and stops cleanly on SIGTERM",
  sanitizeResources: false,
  fn: async () => {
    await using dir = await daemonDir();
    const { db, config, ledger } = dir;
    await Deno.writeTextFile(config, SCHEDULES.replace("cwd: .", `cwd: ${dir.path}`));
    await using daemon = spawnDaemon(
      ["--db", db, "--config", config, "--node", "d1", "--listen", "127.0.0.1:0"],
      { name: "d1", signal: AbortSignal.timeout(60_000) },
    );
    const events = daemon.events;
    const entries = await waitUntil("three occurrences in the ledger", async () => {
      const text = await Deno.readTextFile(ledger).catch(() => "");
      const rows = text.split("\n").filter(Boolean);
      return rows.length >= 3 ? rows : null;
    }, { timeoutMs: 30_000 });
    // A saved edit is picked up while running: a second schedule starts.
    await Deno.writeTextFile(
      config,
      (await Deno.readTextFile(config)) + SCHEDULES.split("schedules:\n")[1]!
        .replace("id: tick", "id: tock").replace(">> ledger", ">> ledger2")
        .replace("cwd: .", `cwd: ${dir.path}`),
    );
    await waitUntil(
      "the reloaded schedule ran",
      async () =>
        (await Deno.readTextFile(`${dir.path}/ledger2`).catch(() => "")).includes("tock@"),
      {
        timeoutMs: 30_000,
      },
    );
    const status = await daemon.stop("SIGTERM");

    assert.equal(status.code, 0, JSON.stringify(events));
    const names = events.map((e) => e.event);
    assert.ok(names.includes("daemon.started"), JSON.stringify(names));
    assert.ok(names.includes("config.reloaded"), JSON.stringify(names));
    const listening = events.find((e) => e.event === "http.listening");
    assert.ok(listening && Number(listening.port) > 0, "the endpoint listened on a free port");
    assert.equal(names.at(-1), "daemon.stopped");
    const stop = events.find((e) => e.event === "job.stop" && e.outcome === "completed");
    assert.match(String(stop?.output), /ticked/);

    // Each occurrence ran once, with the first fence, and every row completed.
    const final = (await Deno.readTextFile(ledger)).split("\n").filter(Boolean);
    const occurrences = final.map((row) => row.split(" ")[0]!);
    assert.equal(new Set(occurrences).size, occurrences.length, final.join("\n"));
    assert.ok(final.every((row) => /^tick@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z 1$/.test(row)));
    assert.ok(entries.length >= 3);
    const store = await openSqliteStore(db);
    try {
      const jobs = await store.jobsList({});
      const ran = jobs.filter((j) => j.state === "completed" && j.scheduleId === "tick")
        .map((j) => j.occurrence);
      assert.deepEqual(ran.slice().sort(), occurrences.slice().sort());
      assert.deepEqual(await store.nodesList(), [], "the node deregistered");
      const [row] = await store.schedulesList({ ids: ["tick"] });
      assert.ok(row?.lastCompletedAt, "last_completed_at recorded");
    } finally {
      await store.close();
    }
  },
});

Deno.test("jobs daemon refuses a schedules.yaml with errors, naming them, and exits 1", async () => {
  await using dir = await daemonDir();
  await Deno.writeTextFile(dir.config, SCHEDULES.replace("every: 1s", "every: 0s"));
  const out = await jobsCommand([
    "daemon",
    "--db",
    dir.db,
    "--config",
    dir.config,
    "--listen",
    "off",
  ]);
  assert.equal(out.code, 1);
  assert.match(out.stderr, /schedules\.yaml:\d+:\d+: schedule "tick"/);
});

Deno.test("jobs daemon refuses a --lease (or JOBS_LEASE) that is not a whole number of ms of at least 1000", async () => {
  await using dir = await daemonDir();
  for (const lease of ["999", "2.5", "soon"]) {
    const bad = await jobsCommand([
      "daemon",
      "--db",
      dir.db,
      "--config",
      dir.config,
      "--lease",
      lease,
    ]);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(
      bad.stderr,
      new RegExp(`jobs daemon: --lease "${lease}" is not a whole number of ms of at least 1000`),
    );
  }
});

Deno.test("jobs daemon refuses a --public-url (or JOBS_PUBLIC_URL) that is no http(s) URL, or holds a user, a query or a fragment: exit 2 naming it, nothing opened", async () => {
  await withFiles(SCHEDULES, async ({ db, config }) => {
    const daemon = (args: string[], env: Record<string, string> = {}) =>
      runJobs(["daemon", "--db", db, "--config", config, "--listen", "off", ...args], {
        now: Date.UTC(2026, 11, 3),
        env,
      });
    const cases: [string, string][] = [
      [
        "ftp://jobs.example.com",
        "is not an http:// or https:// URL such as https://jobs.example.com",
      ],
      ["jobs.example.com", "is not an http:// or https:// URL such as https://jobs.example.com"],
      [
        "https://jobs.example.com/?tenant=acme",
        "has a query (?...): a link's token is joined after the path",
      ],
      [
        "https://jobs.example.com/#x",
        "has a fragment (#...): a link's token is joined after the path",
      ],
    ];
    for (const [url, why] of cases) {
      const bad = await daemon(["--public-url", url]);
      assert.equal(bad.code, 2, bad.err);
      assert.equal(bad.err, `jobs daemon: --public-url "${url}" ${why}`);
      const fromEnv = await daemon([], { JOBS_PUBLIC_URL: url });
      assert.equal(fromEnv.code, 2, fromEnv.err);
      assert.equal(fromEnv.err, `jobs daemon: JOBS_PUBLIC_URL "${url}" ${why}`);
    }
    // A password is never echoed.
    const secret = await daemon(["--public-url", "https://ada:s3cret@jobs.example.com"]);
    assert.equal(secret.code, 2);
    assert.equal(
      secret.err,
      `jobs daemon: --public-url "https://ada:[REDACTED]@jobs.example.com" holds a user or ` +
        `password: links are handed out, give none`,
    );
    // The flag wins over the variable: a bad variable under a good flag is not read.
    const flagFirst = await daemon(["--public-url", "ftp://x"], {
      JOBS_PUBLIC_URL: "https://jobs.example.com",
    });
    assert.match(flagFirst.err, /^jobs daemon: --public-url "ftp:\/\/x"/);
    await assert.rejects(Deno.stat(db), Deno.errors.NotFound, "no store was created");
  });
});
