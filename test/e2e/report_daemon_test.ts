/**
 * The daemon's report API end to end: a real `jobs daemon --token <t>
 * --listen 127.0.0.1:0` on the statement report (folder storage), on a
 * SQLite store and on a PostgreSQL one, with settings changed by `jobs
 * settings set` against the same store while it runs.
 *
 * - `POST /api/v1/reports/statement/runs` needs a bearer token (401
 *   without one): acme's operator token `ada`, made by `jobs tokens create
 *   --tenant acme --json`, runs it for acme as `token:ada`. A run that
 *   ends within `reports.request_budget` is answered 200 with its rows and
 *   output; with the budget at 1ms a run is answered 202 with
 *   `Location: /api/v1/reports/runs/<run>`, which is polled until it
 *   completes; an unknown report is 404, a param of the wrong type or a
 *   range beyond `max_range` 400, a principal without one of the report's
 *   roles 403, `max_concurrent` reached 429.
 * - `POST /api/v1/reports/runs/<run>/links` mints `http://127.0.0.1:<port>/downloads/<token>`,
 *   served without the bearer: the exact CSV bytes as text/csv, whatever
 *   tenant the caller says it is (`X-Jobs-Tenant` is not read); a token
 *   with one character changed 403; a link past its ttl (minted by HTTP or
 *   by `jobs report url --ttl`, whose link is whole from the listen address
 *   the daemon stored as its public URL, no `--base` given) 410. Each
 *   served download, and only those, is audited as `report.download` to
 *   `finance-audit`.
 * - With `report.statement.lifetime` 2s and `pruner: { every: 1s }`, the
 *   daemon's pruner removes the output file and the run (gone from `jobs
 *   reports --json` and `GET /api/v1/reports/runs/<run>`); its link, whose expiry
 *   was capped at the output's, answers 410.
 */

import assert from "node:assert/strict";
import { openStore } from "../../src/store/open.ts";
import { waitUntil } from "../../src/testing.ts";
import { daemonDir, jobsCommand, POLL, startDaemon } from "../support/daemon_process.ts";
import { postgresLocation } from "../support/pg_schema.ts";
import {
  MARCH,
  STATEMENT_SCHEDULES,
  statementCsv,
  writeStatementSources,
} from "../support/statement_report.ts";

const TOKEN = "e2e-report-token-0d5c";

/** Rows of the `volume` report: enough that no run of it ends within a 1 ms budget. */
const VOLUME_ROWS = 100_000;

const VOLUME_QUERY =
  `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < ${VOLUME_ROWS})
SELECT x AS id, 'row ' || x AS label FROM n WHERE :tenant IS NOT NULL
`;

/** The statement report, a slower `volume` report, and a pruner that runs every second. */
const SCHEDULES = STATEMENT_SCHEDULES.replace(
  "schedules: []\n",
  "schedules: []\npruner: { every: 1s }\n",
).replace("authorize: { roles: [finance],", "authorize: { roles: [finance, operator],") +
  `  - id: volume
    need:
      report: every row of a large generated table
      volume: ${VOLUME_ROWS} rows
      plan: one recursive statement, read through in batches
      latency_target: 5m
      max_result: ${VOLUME_ROWS} rows
      operator: finance-ops
    source: { sqlite: ./app.db }
    query: ./volume.sql
    paging: { mode: none, reason: one statement read through in batches }
    audit: { reason: volume check, target: volume-audit }
    format: { type: csv, columns: [id, label] }
    authorize: { roles: [finance, operator] }
    storage: { folder: ./exports }
    contact: finance-ops@example.com
`;

/** The request of a March statement (for the tenant and as the actor of the token). */
const REQUEST = { params: MARCH };

/** An answer of the report API: status, headers and the JSON body. */
interface Answer {
  status: number;
  headers: Headers;
  // deno-lint-ignore no-explicit-any
  body: any;
}

/** Calls the report API at `base`, with `bearer` unless it is null. */
async function call(
  base: string,
  method: "GET" | "POST",
  path: string,
  options: { body?: unknown; bearer: string | null },
): Promise<Answer> {
  const bearer = options.bearer;
  const response = await fetch(`${base}${path}`, {
    method,
    headers: bearer === null ? {} : { authorization: `Bearer ${bearer}` },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
  });
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = { text };
  }
  return { status: response.status, headers: response.headers, body };
}

/** A download of `url` (no bearer, as a person's browser fetches it). */
async function download(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; bytes: Uint8Array }> {
  const response = await fetch(url, { headers });
  return {
    status: response.status,
    headers: response.headers,
    bytes: new Uint8Array(await response.arrayBuffer()),
  };
}

/** `token` with the character at `at` replaced by another of the base64url alphabet. */
function flip(token: string, at: number): string {
  const was = token[at]!;
  return token.slice(0, at) + (was === "A" ? "B" : "A") + token.slice(at + 1);
}

/** Resolves once the system clock (the daemon's too) has passed `iso`. */
function past(iso: string): Promise<true> {
  const at = Date.parse(iso);
  return waitUntil(`the clock to pass ${iso}`, () => Date.now() > at || undefined, POLL);
}

const decoder = new TextDecoder("utf-8", { fatal: true });

interface StoreCase {
  name: string;
  /** Where the daemon's store is, disposed of after the test. */
  location(dir: string): { db: string; [Symbol.asyncDispose](): Promise<void> };
}

const STORES: StoreCase[] = [
  {
    name: "sqlite",
    location: (dir) => ({ db: `${dir}/jobs.db`, [Symbol.asyncDispose]: () => Promise.resolve() }),
  },
  {
    name: "postgres",
    location: () => {
      const pg = postgresLocation();
      return { db: pg.url, [Symbol.asyncDispose]: () => pg[Symbol.asyncDispose]() };
    },
  },
];

for (const backend of STORES) {
  Deno.test({
    name:
      `${backend.name}: jobs daemon serves report runs (200, 202, 4xx), download links (200, 403, 410) and prunes expired outputs`,
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      await using dir = await daemonDir();
      await using location = backend.location(dir.path);
      const { db } = location;
      const config = dir.config;
      await Deno.writeTextFile(config, SCHEDULES);
      await writeStatementSources(dir.path);
      await Deno.writeTextFile(`${dir.path}/volume.sql`, VOLUME_QUERY);
      const jobs = async (...args: string[]) => {
        const ran = await jobsCommand([...args, "--db", db, "--config", config]);
        assert.equal(ran.code, 0, `jobs ${args.join(" ")}: ${ran.stderr}`);
        return ran.stdout;
      };
      const setting = (key: string, value: string) =>
        jobs("settings", "set", key, value, "--reason", "report e2e");
      const checked = await jobsCommand(["check", "--config", config]);
      assert.equal(checked.code, 0, checked.stderr);
      assert.match(checked.stdout, /pruner every 1s/);

      await using daemon = await startDaemon({
        db,
        config,
        node: "rep1",
        args: ["--listen", "127.0.0.1:0", "--token", TOKEN],
      });
      /** acme's token `name` with `role`, made as the command line makes it: its secret. */
      const tokenOf = async (name: string, role: string) => {
        const args = ["tokens", "create", "--name", name, "--role", role, "--tenant", "acme"];
        const made = await jobsCommand([...args, "--json", "--db", db]);
        assert.equal(made.code, 0, made.stderr);
        return JSON.parse(made.stdout).token as string;
      };
      const ada = await tokenOf("ada", "operator");
      const acmeAdmin = await tokenOf("acme-admin", "admin");
      const started = await daemon.waitFor("daemon.started");
      assert.deepEqual(started.queues, { reports: 2, "jobs.bulk": 1 });
      const base = `http://${started.listen}`;
      assert.match(base, /^http:\/\/127\.0\.0\.1:\d+$/);
      // No --public-url: the address it listens on is stored for whole links (issue 26.10).
      assert.equal(started.publicUrl, base);
      assert.equal(started.publicUrlFrom, "the listen address");
      /** The API as acme's operator `ada` (another bearer when `options.bearer` says). */
      const api = (
        method: "GET" | "POST",
        path: string,
        options: { body?: unknown; bearer?: string | null } = {},
      ) => call(base, method, path, { bearer: ada, ...options });
      const poll = async (id: number, state = "completed") => {
        const seen = await waitUntil(`run ${id} ${state}`, async () => {
          const got = await api("GET", `/api/v1/reports/runs/${id}`);
          assert.equal(got.status, 200, JSON.stringify(got.body));
          return ["completed", "failed", "cancelled"].includes(got.body.state) ? got.body : null;
        }, { ...POLL, timeoutMs: 30_000 });
        assert.equal(seen.state, state, JSON.stringify(seen));
        return seen;
      };

      // The report API needs a bearer token; downloads alone do not.
      for (const bearer of [null, "not-the-token"]) {
        const refused = await api("POST", "/api/v1/reports/statement/runs", {
          body: REQUEST,
          bearer,
        });
        assert.equal(refused.status, 401);
        assert.equal(refused.headers.get("www-authenticate"), "Bearer");
      }
      assert.equal((await api("GET", "/api/v1/reports/runs/1", { bearer: null })).status, 401);
      const noBearerLink = await api("POST", "/api/v1/reports/runs/1/links", {
        body: {},
        bearer: null,
      });
      assert.equal(noBearerLink.status, 401);
      // The old route is gone, even with the daemon's own token: the path is the console's
      // form now, which takes no bearer token and refuses a request from no page of its own.
      const old = await call(base, "POST", "/reports/statement/runs", {
        body: { ...REQUEST, tenant: "acme", actor: "ada", roles: ["finance"] },
        bearer: TOKEN,
      });
      assert.equal(old.status, 403);
      {
        const read = await openStore(db, { mode: "read" });
        try {
          assert.deepEqual(await read.store.reportRunsList({}), [], "no run was started");
        } finally {
          await read.store.close();
        }
      }

      // Within the budget (10s here, for a loaded machine): 200 with the ended run.
      await setting("reports.request_budget", "10s");
      const ran = await api("POST", "/api/v1/reports/statement/runs", { body: REQUEST });
      assert.equal(ran.status, 200, JSON.stringify(ran.body));
      const first = ran.body;
      assert.equal(first.state, "completed");
      assert.equal(first.rows, 12);
      assert.equal(first.tenant, "acme");
      assert.equal(first.actor, "token:ada");
      assert.equal(first.output, `${dir.path}/exports/acme/statement/${first.run}.csv`);
      const firstBytes = await Deno.readFile(first.output);
      assert.equal(decoder.decode(firstBytes), statementCsv("acme", { lead: false }));
      assert.equal(first.bytes, firstBytes.length);

      // Refused before anything runs.
      const unknown = await api("POST", "/api/v1/reports/nope/runs", { body: REQUEST });
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.error.code, "report-not-found");
      assert.match(unknown.body.error.message, /no report "nope"/);
      const wrongType = await api("POST", "/api/v1/reports/statement/runs", {
        body: { params: { from: 20260301, to: "2026-04-01" } },
      });
      assert.equal(wrongType.status, 400);
      assert.equal(wrongType.body.error.code, "report-param-invalid");
      assert.match(
        wrongType.body.error.message,
        /from="20260301" must be a date such as 2026-03-01/,
      );
      const noRole = await api("POST", "/api/v1/reports/statement/runs", {
        body: REQUEST,
        bearer: acmeAdmin,
      });
      assert.equal(noRole.status, 403);
      assert.equal(noRole.body.error.code, "role-refused");
      assert.match(
        noRole.body.error.message,
        /may be run by the roles finance, operator; token:acme-admin has admin/,
      );
      const wide = await api("POST", "/api/v1/reports/statement/runs", {
        body: { params: { from: "2026-01-01", to: "2026-06-01" } },
      });
      assert.equal(wide.status, 400);
      assert.equal(wide.body.error.code, "report-param-invalid");
      assert.match(wide.body.error.message, /\(151 days\) exceeds max_range 93d/);

      // A 1ms budget (the smallest duration a setting takes) and a slower report: 202, then poll.
      const zero = await jobsCommand([
        "settings",
        "set",
        "reports.request_budget",
        "0ms",
        "--reason",
        "x",
        "--db",
        db,
        "--config",
        config,
      ]);
      assert.equal(zero.code, 2, zero.stderr);
      assert.match(zero.stderr, /must be more than zero, got "0ms"/);
      await setting("reports.request_budget", "1ms");
      const slow = await api("POST", "/api/v1/reports/volume/runs", { body: { params: {} } });
      assert.equal(slow.status, 202, JSON.stringify(slow.body));
      assert.equal(slow.body.budgetMs, 1);
      assert.ok(["queued", "running"].includes(slow.body.state), slow.body.state);
      assert.equal(slow.headers.get("location"), `/api/v1/reports/runs/${slow.body.run}`);
      const volume = await poll(slow.body.run);
      assert.equal(volume.rows, VOLUME_ROWS);
      assert.equal(volume.output, `${dir.path}/exports/acme/volume/${slow.body.run}.csv`);
      assert.equal((await Deno.stat(volume.output)).size, volume.bytes);

      // max_concurrent 1, one run waiting (the queue paused): the next request is 429.
      await setting("report.statement.max_concurrent", "1");
      await jobs("pause", "reports", "--reason", "hold one run");
      const held = await api("POST", "/api/v1/reports/statement/runs", { body: REQUEST });
      assert.equal(held.status, 202, JSON.stringify(held.body));
      assert.equal(held.body.state, "queued");
      const busy = await api("POST", "/api/v1/reports/statement/runs", { body: REQUEST });
      assert.equal(busy.status, 429, JSON.stringify(busy.body));
      assert.equal(busy.body.error.code, "report-limit");
      assert.match(
        busy.body.error.message,
        new RegExp(`runs ${held.body.run} are queued or running`),
      );
      assert.match(
        busy.body.error.message,
        /max_concurrent 1 \(setting report\.statement\.max_concurrent\)/,
      );
      await jobs("resume", "reports", "--reason", "let it run");
      assert.equal((await poll(held.body.run)).rows, 12);

      // A link: served without the bearer, byte for byte, bound to its run and tenant.
      const minted = await api("POST", `/api/v1/reports/runs/${first.run}/links`, {
        body: { ttl_ms: 60_000 },
      });
      assert.equal(minted.status, 201, JSON.stringify(minted.body));
      assert.equal(minted.body.kind, "daemon");
      assert.equal(minted.body.run, first.run);
      const url: string = minted.body.url;
      assert.match(url, new RegExp(`^${base}/downloads/[\\w-]+\\.[\\w-]+$`));
      const got = await download(url);
      assert.equal(got.status, 200);
      assert.equal(got.headers.get("content-type"), "text/csv; charset=utf-8; header=present");
      assert.equal(
        got.headers.get("content-disposition"),
        `attachment; filename="statement-${first.run}.csv"`,
      );
      assert.deepEqual(got.bytes, firstBytes);
      // What the caller says its tenant is counts for nothing: the token's signed tenant does.
      const said = await download(url, { "x-jobs-tenant": "globex" });
      assert.equal(said.status, 200);
      assert.deepEqual(said.bytes, firstBytes);
      const token = url.slice(url.lastIndexOf("/") + 1);
      const dot = token.indexOf(".");
      for (const at of [Math.floor(dot / 2), dot + 10]) {
        const tampered = await download(`${base}/downloads/${flip(token, at)}`);
        assert.equal(tampered.status, 403, `a change at ${at} of the token`);
        assert.deepEqual(JSON.parse(decoder.decode(tampered.bytes)), { error: "forged" });
      }
      const missing = await api("POST", "/api/v1/reports/runs/99999/links", { body: {} });
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error.code, "run-not-found");

      // Past its ttl, a link is 410: one minted for 1 ms, one by `jobs report url --ttl 1s`.
      const brief = await api("POST", `/api/v1/reports/runs/${first.run}/links`, {
        body: { ttl_ms: 1 },
      });
      assert.equal(brief.status, 201);
      await past(brief.body.expires);
      const late = await download(brief.body.url);
      assert.equal(late.status, 410);
      assert.deepEqual(JSON.parse(decoder.decode(late.bytes)), { error: "expired" });
      const cli = JSON.parse(
        await jobs(
          "report",
          "url",
          String(first.run),
          "--ttl",
          "1s",
          "--actor",
          "ada",
          "--json",
        ),
      );
      assert.equal(cli.kind, "daemon");
      assert.match(cli.url, new RegExp(`^${base}/downloads/`));
      await past(cli.expires);
      assert.equal((await download(cli.url)).status, 410);

      // A 2s lifetime: the pruner (every 1s) removes the file and the run; its link is 410.
      await setting("report.statement.lifetime", "2s");
      const short = await api("POST", "/api/v1/reports/statement/runs", { body: REQUEST });
      assert.equal(short.status, 202);
      const kept = await poll(short.body.run);
      assert.equal(Date.parse(kept.expiresAt) - Date.parse(kept.finishedAt), 2000);
      const shortLink = await api("POST", `/api/v1/reports/runs/${kept.run}/links`, {
        body: { ttl_ms: 60_000 },
      });
      assert.equal(shortLink.status, 201);
      // A link never outlives the output: its expiry is the output's, not now + 60s.
      assert.equal(shortLink.body.expires, kept.expiresAt);
      await Deno.stat(kept.output);
      await waitUntil("the pruner removed the expired output and its run", async () => {
        const gone = await Deno.stat(kept.output).then(() => false, () => true);
        return gone && (await api("GET", `/api/v1/reports/runs/${kept.run}`)).status === 404;
      }, { ...POLL, timeoutMs: 20_000 });
      await daemon.waitFor("pruner.report_runs_deleted");
      const listed = JSON.parse(await jobs("reports", "--json")) as { run: number }[];
      assert.deepEqual(
        listed.map((r) => r.run),
        [held.body.run, slow.body.run, first.run],
      );
      // The token expired with the output: 410 (expired) is answered before the run is looked up.
      const after = await download(shortLink.body.url);
      assert.equal(after.status, 410);
      assert.deepEqual(JSON.parse(decoder.decode(after.bytes)), { error: "expired" });

      const stopped = await daemon.stop();
      assert.equal(stopped.code, 0, daemon.log());

      // The audit: every run and link, and exactly the two downloads that were served.
      const opened = await openStore(db, { mode: "read" });
      try {
        const audit = await opened.store.auditList({ target: "finance-audit" });
        assert.deepEqual(audit.map((a) => a.action), [
          "report.run",
          "report.run",
          "report.link",
          "report.download",
          "report.download",
          "report.link",
          "report.link",
          "report.run",
          "report.link",
        ]);
        // The API's rows name the token; the link of `jobs report url --actor ada`, ada.
        assert.deepEqual(
          audit.map((a) => a.actor),
          [...Array(6).fill("token:ada"), "ada", "token:ada", "token:ada"],
        );
        assert.ok(audit.every((a) => a.reason === "customer statements"));
        const downloads = audit.filter((a) => a.action === "report.download");
        for (const row of downloads) {
          assert.deepEqual(row.details, {
            report: "statement",
            run: first.run,
            tenant: "acme",
            bytes: firstBytes.length,
          });
        }
        const volumeAudit = await opened.store.auditList({ target: "volume-audit" });
        assert.deepEqual(volumeAudit.map((a) => a.action), ["report.run"]);
      } finally {
        await opened.store.close();
      }
    },
  });
}
