/**
 * The daemon's public URL end to end (issue 26.10), with real daemons on a
 * SQLite store and the statement report's folder output:
 *
 * - `jobs daemon --public-url https://Jobs.Example.com/ops/` stores it
 *   (canonical, audited once) and says so in `daemon.started`;
 * - a daemon started later without the flag, listening on 127.0.0.1, keeps
 *   it and its start log says why its listen address was not stored;
 * - `jobs report url <run>` and `POST /api/v1/reports/runs/<run>/links` both give
 *   `https://jobs.example.com/ops/downloads/<token>`, whose token the
 *   daemon serves.
 *
 * The derived URL (no flag: the listen address) is proven on both stores
 * by `report_daemon_test.ts`.
 */

import assert from "node:assert/strict";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { daemonDir, jobsCommand, startDaemon } from "../support/daemon_process.ts";
import { MARCH, STATEMENT_SCHEDULES, writeStatementSources } from "../support/statement_report.ts";

const TOKEN = "e2e-public-url-token-7f1a";

Deno.test({
  name:
    "jobs daemon --public-url is stored and kept over a later daemon's listen address; report links are whole",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using dir = await daemonDir();
    const { db, config } = dir;
    await Deno.writeTextFile(config, STATEMENT_SCHEDULES);
    await writeStatementSources(dir.path);
    const jobs = async (...args: string[]) => {
      const ran = await jobsCommand([...args, "--db", db, "--config", config]);
      assert.equal(ran.code, 0, `jobs ${args.join(" ")}: ${ran.stderr}`);
      return ran;
    };
    const migrated = await jobsCommand(["migrate", "--db", db]);
    assert.equal(migrated.code, 0, migrated.stderr);
    const ran = await jobs(
      "report",
      "statement",
      ...Object.entries(MARCH).flatMap(([k, v]) => ["--param", `${k}=${v}`]),
      "--tenant",
      "acme",
      "--role",
      "finance",
      "--wait",
      "--json",
    );
    const run = JSON.parse(ran.stdout).run as number;

    // An explicit public URL, canonical, in the start log.
    {
      await using first = await startDaemon({
        db,
        config,
        node: "pub1",
        args: ["--public-url", "https://Jobs.Example.com/ops/"],
      });
      const started = await first.waitFor("daemon.started");
      assert.equal(started.publicUrl, "https://jobs.example.com/ops");
      assert.equal(started.publicUrlFrom, "--public-url");
      assert.equal((await first.stop("SIGTERM")).code, 0, first.log());
    }

    // A daemon without the flag keeps it, and says why its listen address is not stored.
    await using second = await startDaemon({
      db,
      config,
      node: "pub2",
      args: ["--listen", "127.0.0.1:0", "--token", TOKEN],
    });
    const started = await second.waitFor("daemon.started");
    const base = `http://${started.listen}`;
    assert.equal(started.publicUrl, "https://jobs.example.com/ops");
    assert.match(
      String(started.publicUrlFrom),
      new RegExp(
        `^--public-url of node pub1 at \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z, kept: a public URL given ` +
          `explicitly is not replaced by the listen address ${base} \\(start with --public-url ` +
          `to change it\\)$`,
      ),
    );

    // Both ways of minting a link give a whole one on the public URL.
    const whole = /^https:\/\/jobs\.example\.com\/ops\/downloads\/([\w-]+\.[\w-]+)$/;
    const cli = await jobs("report", "url", String(run));
    assert.match(cli.stdout.trim(), whole);
    assert.match(
      cli.stderr,
      /served by the daemon's \/downloads\/ at https:\/\/jobs\.example\.com\/ops \(its public URL, --public-url of node pub1\)/,
    );
    // The daemon's --token is an installation-wide admin: it mints a link to any tenant's run.
    const minted = await fetch(`${base}/api/v1/reports/runs/${run}/links`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({}),
    });
    assert.equal(minted.status, 201);
    const link = await minted.json();
    const token = whole.exec(link.url)?.[1];
    assert.ok(token, link.url);
    // Behind the proxy that strips /ops, the daemon serves the token.
    const served = await fetch(`${base}/downloads/${token}`);
    assert.equal(served.status, 200);
    assert.match(await served.text(), /^id,booked_at,description,amount\r\n/);
    assert.equal((await second.stop("SIGTERM")).code, 0, second.log());

    // Stored once, explicit, and audited once: the kept one wrote nothing.
    const store = await openSqliteStore(db);
    try {
      const audit = await store.auditList({ target: "setting:daemon.public_url" });
      assert.deepEqual(
        audit.map((a) => [a.action, a.actor, a.reason]),
        [["setting.set", "pub1", "jobs daemon --public-url"]],
      );
      const stored = await store.settingGet({ key: "daemon.public_url" });
      assert.equal((stored as { url: string }).url, "https://jobs.example.com/ops");
    } finally {
      await store.close();
    }
  },
});
