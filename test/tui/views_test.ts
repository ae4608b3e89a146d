/**
 * The screens as lines, without a renderer: the jobs list's totals and
 * schedule column, the overview's and the detail's error counts against
 * the errors they list, and rules the width of the terminal.
 */

import assert from "node:assert/strict";
import { detailLines, jobsLines, type JobsListProps, pageText } from "../../src/tui/jobs/view.tsx";
import { overviewLines } from "../../src/tui/overview/view.tsx";
import { schedulesLines } from "../../src/tui/schedules/view.tsx";
import { clip, plain, rule } from "../../src/tui/seg.ts";
import { fitLocation } from "../../src/tui/text.ts";
import { fixtureJob, fixtureState, NOW } from "./fixtures.ts";

/** Whether `text` holds a raw control character (what could reach the terminal). */
// deno-lint-ignore no-control-regex -- matching control characters is the point
const hasControl = (text: string) => /[\x00-\x1f\x7f-\x9f]/.test(text);

/** A total that counted every job. */
const exact = (count: number) => ({ count, atLeast: false, newest: null });

function jobsList(overrides: Partial<JobsListProps> = {}): string[] {
  const props: JobsListProps = {
    jobs: [
      fixtureJob({
        id: 12,
        scheduleId: "nightly-report",
        occurrence: "nightly-report@2026-03-08T07:00:00.000Z",
        scheduledFor: NOW,
      }),
      fixtureJob({ id: 11 }),
    ],
    filter: {},
    desc: true,
    page: 1,
    pageSize: 18,
    total: exact(2),
    cursor: 0,
    width: 80,
    height: 20,
    now: NOW,
    ...overrides,
  };
  return jobsLines(props).map((l) => plain(clip(l, props.width)));
}

Deno.test("the jobs list says which page of how many and how many jobs match the filter", () => {
  assert.equal(pageText(2, 50, exact(391)), "page 2 of 8 · 391 jobs match");
  assert.equal(pageText(1, 50, exact(1)), "page 1 of 1 · 1 job match");
  assert.equal(pageText(1, 50, exact(0)), "page 1 of 1 · 0 jobs match");
  assert.equal(
    pageText(3, 50, exact(100)),
    "page 3 of 3 · 100 jobs match",
    "a page past the count",
  );
  assert.equal(pageText(4, 50, null), "page 4", "not counted yet");
  const [header] = jobsList({
    page: 2,
    pageSize: 50,
    total: exact(391),
    filter: { states: ["discarded"] },
  });
  assert.equal(header, "filter state:discarded · newest first · page 2 of 8 · 391 jobs match");
});

Deno.test("a search's bounded total says so: a count that stopped at its cap, the newest jobs only", () => {
  const newest = { window: 100_000, above: 900_000 };
  assert.equal(
    pageText(2, 50, { count: 1000, atLeast: true, newest: null }),
    "page 2 of 20+ · 1000+ jobs match",
  );
  assert.equal(
    pageText(1, 50, { count: 12, atLeast: false, newest }),
    "page 1 of 1 · 12 jobs match among the newest 100000",
  );
  assert.equal(
    pageText(1, 50, { count: 1000, atLeast: true, newest }),
    "page 1 of 20+ · 1000+ jobs match among the newest 100000",
  );
  const none = { count: 0, atLeast: false, newest };
  assert.equal(
    jobsList({ jobs: [], total: none, filter: { search: "x" } }).at(-1),
    "  no jobs match among the newest 100000 (jobs ls --search reads them all)",
  );
  assert.equal(
    jobsList({ jobs: [], total: none, page: 3, filter: { search: "x" } }).at(-1),
    "  no more jobs among the newest 100000 (b: previous page)",
  );
  assert.equal(jobsList({ jobs: [], total: exact(0) }).at(-1), "  no jobs match");
});

Deno.test("the jobs list shows each job's schedule at 80 columns and its whole occurrence from 140", () => {
  const narrow = jobsList({ width: 80 });
  assert.match(
    narrow[1]!,
    /^ {2}ID\s+STATE\s+QUEUE\s+WORKER\s+SCHEDULE\s+TRY\s+WHEN\s+ERROR \/ ARGS$/,
  );
  assert.match(narrow[2]!, /^> 12\s+available\s+default\s+send-mail\s+nightly-rep… 0\/3\s+1m ago/);
  assert.match(narrow[3]!, /^ {2}11\s+available\s+default\s+send-mail\s+-\s+0\/3/);
  for (const line of narrow) assert.ok(Array.from(line).length <= 80, line);
  const wide = jobsList({ width: 140 });
  assert.match(wide[1]!, /\bOCCURRENCE\s+TRY\b/);
  assert.match(
    wide[2]!,
    /\bsend-mail\s+nightly-report@2026-03-08T07:00:00\.000Z\s+0\/3\s+1m ago\s+\{"to"/,
  );
  for (const line of wide) assert.ok(Array.from(line).length <= 140, line);
  assert.match(wide[3]!, /\bsend-mail\s+-\s+0\/3/);
});

Deno.test("the overview counts the schedules file's errors and lists them; what does not fit is counted", () => {
  const state = fixtureState();
  const errors = [
    'schedules.yaml:3:5: schedule "a": unknown time zone "Europe/Berln"',
    'schedules.yaml:9:5: schedule "b": cron has 4 fields',
    'schedules.yaml:14:9: schedule "c": unknown queue "mial"',
  ];
  const overview = { now: NOW, ...state.overview, configProblems: errors };
  const at = (height: number) =>
    overviewLines({ overview, cursor: 0, width: 100, height, now: NOW }).map((l) => plain(l));
  const tall = at(20);
  const header = tall.find((l) => l.startsWith("SCHEDULES FILE"));
  assert.equal(header, "SCHEDULES FILE  3 errors; queues and schedules as the store knows them");
  for (const e of errors) assert.ok(tall.includes(`  ${e}`), `${e} is not listed`);
  assert.ok(tall.length <= 20);
  assert.ok(tall.includes("  hourly  disabled by alice 10m ago: vendor outage"));
  // Short of room: the errors shown and the "more" add up to the count.
  const short = at(12);
  const listed = short.filter((l) => l.startsWith("  schedules.yaml:")).length;
  const more = Number(/^ {2}… (\d+) more$/.exec(short.find((l) => l.includes("more"))!)?.[1]);
  assert.ok(listed >= 1);
  assert.equal(listed + more, 3);
  // A readable file: no section at all.
  const fine = overviewLines({
    overview: { now: NOW, ...state.overview },
    cursor: 0,
    width: 100,
    height: 20,
    now: NOW,
  }).map((l) => plain(l));
  assert.ok(!fine.some((l) => l.startsWith("SCHEDULES FILE")));
});

Deno.test("a job's detail lists every stored error its count names", () => {
  const errors = Array.from({ length: 5 }, (_, i) => ({
    at: NOW - (5 - i) * 1000,
    attempt: i + 1,
    error: `timeout #${i + 1}\nat send()`,
  }));
  const job = fixtureJob({ id: 7, state: "discarded", attempt: 5, errors, discardedAt: NOW });
  const lines = detailLines({
    detail: { job, attempts: [], audit: [] },
    id: 7,
    scroll: 0,
    width: 80,
    height: 20,
    now: NOW,
  }).map((l) => plain(l));
  const at = lines.indexOf("errors (5)");
  assert.ok(at > 0);
  assert.deepEqual(lines.slice(at + 1, at + 6), [
    "  #1 5s ago: timeout #1",
    "  #2 4s ago: timeout #2",
    "  #3 3s ago: timeout #3",
    "  #4 2s ago: timeout #4",
    "  #5 1s ago: timeout #5",
  ]);
  assert.equal(lines[at + 6], "");
});

Deno.test("rules are exactly the width, with or without a label, at 80, 100 and 140 columns", () => {
  for (const width of [80, 100, 140]) {
    assert.equal(plain(rule(width)), "─".repeat(width));
    const labelled = plain(rule(width, "nightly"));
    assert.equal(Array.from(labelled).length, width);
    assert.match(labelled, /^── nightly ─+$/);
    const detail = schedulesLines({
      schedules: fixtureState().schedules,
      cursor: 0,
      width,
      height: 26,
      now: NOW,
    }).map((l) => plain(clip(l, width))).find((l) => l.startsWith("──"));
    assert.equal(detail, labelled, "the schedule's heading is a whole rule, not a cut one");
  }
});

Deno.test("a retryable job's detail says when its next attempt is (issue 26.2)", () => {
  const job = fixtureJob({ id: 8, state: "retryable", attempt: 1, scheduledAt: NOW + 400_000 });
  const lines = detailLines({
    detail: { job, attempts: [], audit: [] },
    id: 8,
    scroll: 0,
    width: 80,
    height: 20,
    now: NOW,
  }).map((l) => plain(l));
  assert.ok(lines.includes("next attempt 2026-03-08T12:06:40Z, in 6 min 40 s"), lines.join("\n"));
});

Deno.test("fitLocation: a PostgreSQL URL sheds parameters, user, port, scheme, then its host's and database's middles; a path keeps its file name", () => {
  const url = "postgres://jobs_operator:pw@db-primary.internal.example.com:5432/production_jobs" +
    "?schema=billing_eu&sslmode=require";
  const at = (width: number) => fitLocation(url, width);
  assert.equal(
    at(200),
    "postgres://jobs_operator@db-primary.internal.example.com:5432/production_jobs" +
      "?schema=billing_eu&sslmode=require",
  );
  assert.equal(
    at(95),
    "postgres://jobs_operator@db-primary.internal.example.com:5432/production_jobs?schema=billing_eu",
  );
  assert.equal(
    at(94),
    "postgres://db-primary.internal.example.com:5432/production_jobs?schema=billing_eu",
  );
  assert.equal(
    at(80),
    "postgres://db-primary.internal.example.com/production_jobs?schema=billing_eu",
  );
  assert.equal(at(65), "db-primary.internal.example.com/production_jobs?schema=billing_eu");
  assert.equal(at(50), "db-prima…ple.com/production_jobs?schema=billing_eu");
  assert.equal(at(30), "db…om/pro…bs?schema=billing_eu");
  assert.equal(at(25), "d…/pr…s?schema=billing_eu");
  assert.equal(at(12), "…=billing_eu");
  for (let width = 1; width < 120; width++) {
    assert.ok(Array.from(at(width)).length <= width, `wider than ${width}: ${at(width)}`);
    assert.doesNotMatch(at(width), /pw/);
  }
  assert.equal(
    fitLocation("/home/someone/projects/acme/.local/state/jobs/jobs.db", 30),
    "/home/someone/project…/jobs.db",
  );
  assert.equal(fitLocation("./jobs.db", 30), "./jobs.db");
});

Deno.test("a schedule's detail shows its last planned and misfired instants in its own zone beside UTC, named from 120 columns (issue 26.12)", () => {
  const schedules = fixtureState().schedules;
  schedules[0]!.status = {
    ...schedules[0]!.status,
    lastPlannedFor: Date.UTC(2026, 2, 8, 7, 30),
    lastStartedAt: NOW - 3_600_000,
    lastCompletedAt: NOW - 3_590_000,
    misfires: 2,
    lastMisfireFor: Date.UTC(2026, 2, 7, 7, 30),
  };
  const detail = (width: number, cursor = 0) =>
    schedulesLines({ schedules, cursor, width, height: 26, now: NOW })
      .map((l) => plain(clip(l, width)));
  const narrow = detail(80);
  // The day DST starts in New York: 03:30 is -04:00, the day before -05:00.
  for (
    const line of [
      "last     planned for 2026-03-08T07:30:00.000Z (03:30 -04:00)",
      "         started 1h ago, completed 59m50s ago",
      "misfires 2 (last for 2026-03-07T07:30:00.000Z (02:30 -05:00, 1d4h ago))",
    ]
  ) assert.ok(narrow.includes(line), `missing ${line}:\n${narrow.join("\n")}`);
  const wide = detail(140);
  for (
    const line of [
      "last     planned for 2026-03-08T07:30:00.000Z (03:30 -04:00 America/New_York)",
      "misfires 2 (last for 2026-03-07T07:30:00.000Z (02:30 -05:00 America/New_York, 1d4h ago))",
    ]
  ) assert.ok(wide.includes(line), `missing ${line}:\n${wide.join("\n")}`);
  // A schedule in UTC: its instants once.
  schedules[1]!.status = { ...schedules[1]!.status, lastPlannedFor: Date.UTC(2026, 2, 8, 11) };
  assert.ok(detail(140, 1).includes("last     planned for 2026-03-08T11:00:00.000Z"));
});

Deno.test("a command job shows its command line, quoted for a shell and escaped, in the list and the detail; other jobs their JSON (issue 26.12)", () => {
  const command = fixtureJob({
    id: 21,
    worker: "jobs.command",
    args: {
      kind: "command",
      argv: ["/usr/bin/backup", "--to", "s3://bucket/night ly", "it's", "\x1b]52;c;aGk=\x07\n"],
      shell: false,
      cwd: "/srv/app",
      env: { REGION: "eu west", API_TOKEN: "[REDACTED]" },
    },
  });
  const script = fixtureJob({
    id: 22,
    worker: "jobs.command",
    args: { kind: "command", argv: ["pg_dump jobs | gzip > /tmp/x.gz"], shell: true },
  });
  // Args the runner would refuse: shown as they are stored.
  const odd = fixtureJob({ id: 23, worker: "jobs.command", args: { argv: "rm -rf /" } });
  const jobs = [command, script, odd, fixtureJob({ id: 11 })];
  const lines = jobsList({ jobs, width: 240 });
  const args = (id: number) => {
    const line = lines.find((l) => new RegExp(`^[ >] ${id} `).test(l))!;
    return line.slice(line.indexOf(" ago ") + 5).trimStart();
  };
  assert.equal(
    args(21),
    "/usr/bin/backup --to 's3://bucket/night ly' 'it'\\''s' $'\\x1b]52;c;aGk=\\x07\\n'  (in /srv/app)",
  );
  assert.equal(args(22), "/bin/sh -c 'pg_dump jobs | gzip > /tmp/x.gz'");
  assert.equal(args(23), '{"argv":"rm -rf /"}');
  assert.equal(args(11), '{"to":"ops@example.com"}');
  for (const line of lines) assert.ok(!hasControl(line), line);
  assert.match(jobsList({ jobs, width: 80 })[2]!, /1m ago +\/usr\/bin\/ba…$/, 'not {"kind":"co…');

  const detail = (job: typeof command) =>
    detailLines({
      detail: { job, attempts: [], audit: [] },
      id: job.id,
      scroll: 0,
      width: 80,
      height: 30,
      now: NOW,
    }).map((l) => plain(clip(l, 80)));
  const shown = detail(command);
  const at = shown.findIndex((l) => l.startsWith("command "));
  assert.deepEqual(shown.slice(at, at + 4), [
    "command    /usr/bin/backup --to 's3://bucket/night ly' 'it'\\''s' $'\\x1b]52;c;aGk",
    "           =\\x07\\n'",
    "cwd        /srv/app",
    "env        REGION='eu west' API_TOKEN='[REDACTED]'",
  ]);
  assert.ok(!shown.some((l) => l.startsWith("args ")), "no JSON beside it");
  for (const line of shown) assert.ok(!hasControl(line), line);
  assert.ok(detail(script).includes("command    /bin/sh -c 'pg_dump jobs | gzip > /tmp/x.gz'"));
  assert.ok(detail(fixtureJob({ id: 11 })).includes('args       {"to":"ops@example.com"}'));
});
