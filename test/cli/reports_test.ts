/**
 * The report commands end to end through the command line, on both job
 * stores, with a SQLite source: `jobs report <id> --wait --json` runs a
 * monthly statement page by page to a tenant-scoped CSV in its folder;
 * a tenant carrying SQL, or one that is no storage path, is refused, and
 * so are params named like object properties (`constructor`);
 * the sensitive column is masked for an actor without its role; the date
 * range, rows and concurrency limits are enforced with the limit named and
 * a changed setting applies to the next run; `jobs reports` lists the runs;
 * `jobs report url` mints a whole daemon link from the public URL the
 * daemon stored, or from `--base`, and with neither says how to get one
 * rather than print a relative link; every run and link writes its audit
 * row.
 */

import assert from "node:assert/strict";
import { recordPublicUrl } from "../../src/admin/public_url.ts";
import { BACKENDS } from "../support/backends.ts";
import { runJobs, withFiles } from "../support/cli.ts";
import {
  makeLedger,
  STATEMENT_QUERY as QUERY,
  STATEMENT_SCHEDULES as SCHEDULES,
} from "../support/statement_report.ts";

const NOW = Date.UTC(2026, 11, 3, 9);
const ENV = { USER: "ada" };

const MARCH = ["--param", "from=2026-03-01", "--param", "to=2026-04-01"];

Deno.test("jobs report refuses --param constructor=x and a tenant that cannot be a storage path, exit 1 naming them", async () => {
  const sqlite = BACKENDS.find((b) => b.name === "sqlite")!;
  const h = await sqlite.open(NOW);
  try {
    await withFiles(SCHEDULES, async ({ dir, config }) => {
      await Deno.writeTextFile(`${dir}/statement.sql`, QUERY);
      makeLedger(`${dir}/app.db`);
      const run = (...args: string[]) =>
        runJobs([
          "report",
          "statement",
          ...args,
          "--role",
          "finance",
          "--db",
          h.location,
          "--config",
          config,
        ], {
          now: NOW,
          env: ENV,
        });
      for (const name of ["constructor", "toString", "hasOwnProperty", "__proto__"]) {
        const got = await run(...MARCH, "--param", `${name}=x`, "--tenant", "acme");
        assert.equal(got.code, 1, `${name}: ${got.err}`);
        assert.match(
          got.err,
          new RegExp(`has no parameter "${name}" \\(its parameters: from, to\\)`),
        );
      }
      for (const tenant of ["../x", "a/b", ".", "a\nb", "x".repeat(300)]) {
        const got = await run(...MARCH, "--tenant", tenant);
        assert.equal(got.code, 1, `${JSON.stringify(tenant)}: ${got.err}`);
        assert.match(got.err, /a tenant is 1 to 64 characters of A-Z, a-z, 0-9/);
      }
      assert.deepEqual(await h.store.reportRunsList({}), [], "no run was started");
    });
  } finally {
    await h.close();
  }
});

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: jobs report --wait, its limits, reports and report url`, async () => {
    const h = await backend.open(NOW);
    try {
      await withFiles(SCHEDULES, async ({ dir, config }) => {
        await Deno.writeTextFile(`${dir}/statement.sql`, QUERY);
        makeLedger(`${dir}/app.db`);
        const run = (args: string[], now = NOW) =>
          runJobs([...args, "--db", h.location, "--config", config], { now, env: ENV });
        const statement = (...more: string[]) =>
          run(["report", "statement", ...MARCH, "--tenant", "acme", "--role", "finance", ...more]);

        // A finance-lead reads the descriptions; CSV injection is escaped, text quoted.
        const ran = await statement("--role", "finance-lead", "--wait", "--json");
        assert.equal(ran.code, 0, ran.err);
        const result = JSON.parse(ran.out);
        assert.equal(result.state, "completed");
        assert.equal(result.rows, 12);
        assert.equal(result.ranBy, "here");
        assert.equal(result.output, `${dir}/exports/acme/statement/${result.run}.csv`);
        const bytes = await Deno.readFile(result.output);
        assert.equal(result.bytes, bytes.length);
        const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
        const lines = text.split("\r\n");
        assert.equal(lines[0], "id,booked_at,description,amount");
        assert.equal(lines[1], `2,2026-03-01,"'=HYPERLINK(""http://x"")",-2.5`);
        assert.equal(lines[2], "3,2026-03-02,'+1,-1.5");
        assert.equal(lines[3], "4,2026-03-03,'-1+1,-0.5");
        assert.equal(lines[4], "5,2026-03-04,'@SUM(A1),0.5");
        assert.equal(lines[5], "6,2026-03-05,'\tlead tab,1.5");
        assert.equal(lines[6], `7,2026-03-06,"'\rlead cr",2.5`);
        assert.equal(lines[7], `8,2026-03-07,"say ""hi"", then\nleave",3.5`);
        assert.equal(lines[8], "9,2026-03-08,café ünïcode,4.5");
        assert.equal(lines.length, 1 + 12 + 1); // the last line ends too
        assert.doesNotMatch(text, /globex|february/);

        // An actor without finance-lead gets the column masked.
        const masked = await statement("--wait", "--json");
        assert.equal(masked.code, 0, masked.err);
        const maskedText = await Deno.readTextFile(JSON.parse(masked.out).output);
        assert.match(maskedText, /^2,2026-03-01,\[REDACTED\],-2\.5\r$/m);
        assert.doesNotMatch(maskedText, /HYPERLINK|unicode|ünïcode/);

        // A tenant carrying SQL never reaches the query: it is no tenant (issue 25.12).
        const injected = await run([
          "report",
          "statement",
          ...MARCH,
          "--tenant",
          "acme' OR 1=1 --",
          "--role",
          "finance",
          "--wait",
          "--json",
        ]);
        assert.equal(injected.code, 1, injected.err);
        assert.match(injected.err, /tenant "acme' OR 1=1 --" holds "'"/);

        // Refused before anything runs: no role, a bad date, beyond the range, an unknown sort.
        const noRole = await run(["report", "statement", ...MARCH, "--tenant", "acme"]);
        assert.equal(noRole.code, 1);
        assert.match(noRole.err, /may be run by the roles finance; ada has no role/);
        const badDate = await statement("--param", "from=2026-02-30");
        assert.equal(badDate.code, 2, badDate.err); // --param given twice
        const wide = await run([
          "report",
          "statement",
          "--param",
          "from=2026-01-01",
          "--param",
          "to=2026-06-01",
          "--tenant",
          "acme",
          "--role",
          "finance",
        ]);
        assert.equal(wide.code, 1);
        assert.match(wide.err, /max_range 93d/);
        const sorted = await statement("--sort", "amount");
        assert.equal(sorted.code, 1);
        assert.match(sorted.err, /cannot sort by "amount": the sort keys are none/);
        const noTenant = await run(["report", "statement", ...MARCH, "--role", "finance"]);
        assert.equal(noTenant.code, 1);
        assert.match(noTenant.err, /tenant-isolated/);

        // A row limit, changed by a setting, applies to the next run: failed, nothing kept.
        const set = await run([
          "settings",
          "set",
          "report.statement.max_rows",
          "10",
          "--reason",
          "month-end OOM",
        ]);
        assert.equal(set.code, 0, set.err);
        const capped = await statement("--wait", "--json");
        assert.equal(capped.code, 1);
        const failed = JSON.parse(capped.out);
        assert.equal(failed.state, "failed");
        assert.equal(failed.limit, "max_rows");
        assert.match(failed.error, /max_rows 10 \(setting report\.statement\.max_rows\)/);
        assert.equal(failed.output, null);
        await assert.rejects(Deno.stat(`${dir}/exports/acme/statement/${failed.run}.csv`));

        // Concurrency: one queued run holds the only place.
        await run(["settings", "set", "report.statement.max_concurrent", "1", "--reason", "x"]);
        const queued = await statement("--json");
        assert.equal(queued.code, 0, queued.err);
        assert.equal(JSON.parse(queued.out).state, "queued");
        const second = await statement();
        assert.equal(second.code, 1);
        assert.match(second.err, new RegExp(`runs ${JSON.parse(queued.out).run} are queued`));
        assert.match(second.err, /max_concurrent 1/);

        // The listing, newest first.
        const listed = await run(["reports", "--json"]);
        assert.equal(listed.code, 0, listed.err);
        const runs = JSON.parse(listed.out);
        assert.deepEqual(
          runs.map((r: { state: string }) => r.state),
          ["queued", "failed", "completed", "completed"],
        );
        assert.equal(runs[3].rows, 12);
        assert.equal(runs[3].expiresAt, new Date(NOW + 7 * 86_400_000).toISOString());
        const table = await run(["reports"]);
        assert.match(table.out, /RUN\s+JOB\s+REPORT\s+TENANT\s+STATE/);

        // No daemon has stored its public URL and no --base: no relative link, one line saying
        // how to get a whole one, nothing minted or audited (issue 26.10).
        const relative = await run(["report", "url", String(result.run)]);
        assert.equal(relative.code, 1, relative.out);
        assert.equal(relative.out, "");
        assert.equal(
          relative.err,
          "jobs report url: no public URL known: start the daemon with --public-url " +
            "https://... or pass --base http://host:port",
        );
        // --base gives the whole link, canonical; one that is no http(s) URL is refused.
        const based = await run([
          "report",
          "url",
          String(result.run),
          "--base",
          "https://Proxy.example.com/jobs/",
        ]);
        assert.equal(based.code, 0, based.err);
        assert.match(based.out, /^https:\/\/proxy\.example\.com\/jobs\/downloads\/[\w-]+\.[\w-]+$/);
        assert.equal(based.err, "");
        const badBase = await run(["report", "url", String(result.run), "--base", "ftp://x"]);
        assert.equal(badBase.code, 2, badBase.err);
        assert.match(badBase.err, /"ftp:\/\/x" is not an http:\/\/ or https:\/\/ URL/);

        // The public URL a daemon stored: a whole link, and where it came from on stderr.
        await recordPublicUrl(h.store, {
          url: "https://jobs.example.com",
          source: "explicit",
          from: "--public-url",
          node: "d1",
          now: NOW,
        });
        const whole = await run(["report", "url", String(result.run)]);
        assert.equal(whole.code, 0, whole.err);
        assert.match(whole.out, /^https:\/\/jobs\.example\.com\/downloads\/[\w-]+\.[\w-]+$/);
        assert.equal(
          whole.err,
          "jobs report url: served by the daemon's /downloads/ at https://jobs.example.com " +
            "(its public URL, --public-url of node d1); works until " +
            new Date(NOW + 10 * 60_000).toISOString(),
        );
        const url = await run(["report", "url", String(result.run), "--ttl", "5m", "--json"]);
        assert.equal(url.code, 0, url.err);
        const link = JSON.parse(url.out);
        assert.equal(link.kind, "daemon");
        assert.match(link.url, /^https:\/\/jobs\.example\.com\/downloads\/[\w-]+\.[\w-]+$/);
        assert.equal(link.expires, new Date(NOW + 5 * 60_000).toISOString());
        const noLink = await run(["report", "url", String(failed.run)]);
        assert.equal(noLink.code, 1);
        assert.match(noLink.err, /is failed: it has no output/);

        // Every run and link is audited with the report's reason and target.
        const audit = await h.store.auditList({ target: "finance-audit" });
        assert.deepEqual(
          audit.map((a) => a.action),
          [
            "report.run",
            "report.run",
            "report.run",
            "report.run",
            "report.link",
            "report.link",
            "report.link",
          ],
        );
        assert.ok(audit.every((a) => a.reason === "customer statements" && a.actor === "ada"));
      });
    } finally {
      await h.close();
    }
  });
}
