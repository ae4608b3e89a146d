/**
 * `jobs enqueue <worker>`: one job, validated as the library validates it, of
 * a worker some daemon of this configuration defines.
 */

import assert from "node:assert/strict";
import { DEFAULT_ARGS_LIMIT } from "../../../src/kernel/enqueue.ts";
import { runJobs, withFiles } from "../../support/cli.ts";
import { withStore } from "../../support/stores.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const MAIN = new URL("../../../main.ts", import.meta.url).pathname;
const ENV = { USER: "ada" };
const MOD = new URL("../../../src/mod.ts", import.meta.url).href;
const SCHEDULES = `version: 1
workers: ./workers.ts
schedules:
  - id: greet-all
    every: 1h
    run: { worker: greet }
`;
const WORKERS = `import { defineWorker } from "${MOD}";
export const greet = defineWorker({ name: "greet", perform: () => {} });
export const reindexSearch = defineWorker({ name: "reindex-search", perform: () => {} });
`;

Deno.test("jobs enqueue prints the id, a duplicate's id, and names bad options", async () => {
  await withFiles(SCHEDULES, async ({ db }) => {
    // Workers another process defines: --force, so only the options are checked.
    const run = (args: string[]) =>
      runJobs(["enqueue", ...args, "--db", db, "--force", "--create"], { now: NOW, env: ENV });
    const ok = await run([
      "send",
      "--args",
      '{"to":"a@example.com"}',
      "--queue",
      "mail",
      "--tag",
      "x",
      "--tag",
      "y",
      "--in",
      "15m",
    ]);
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /^enqueued job (\d+): send on queue mail, scheduled$/);
    const id = Number(ok.out.match(/job (\d+)/)![1]);
    await withStore(db, async (store) => {
      const job = await store.jobGet({ id });
      assert.deepEqual([job?.args, job?.tags, job?.scheduledAt], [
        { to: "a@example.com" },
        ["x", "y"],
        NOW + 15 * 60_000,
      ]);
      const audit = await store.auditList({ target: `job:${id}` });
      assert.deepEqual(audit.map((a) => [a.action, a.actor, a.details]), [
        ["job.enqueue", "ada", { worker: "send", queue: "mail", duplicate: false }],
      ]);
    });

    const first = await run(["dedupe", "--args", '{"n":1}', "--unique"]);
    const dup = await run(["dedupe", "--args", '{"n":1}', "--unique"]);
    const firstId = first.out.match(/job (\d+)/)![1];
    assert.match(dup.out, new RegExp(`^duplicate of ${firstId}: job ${firstId} \\(available`));

    const cases: [string[], RegExp][] = [
      [["send", "--args", '{"to":'], /: --args "\{"to":" is not JSON: Unexpected end/],
      [
        ["send", "--args", "{'to':1}"],
        /: --args "\{'to':1\}" is not JSON: Expected property name/,
      ],
      [["send", "--priority", "12"], /"12" is not a whole number from 0 to 9/],
      [["send", "--max-attempts", "0"], /"0" is not a whole number from 1 to 1000000/],
      [["send", "--in", "5x"], /: option "--in <duration>": "5x" must be a number with a unit/],
      [["send", "--at", "tomorrow"], /: option "--at <instant>": "tomorrow" is not an ISO/],
      [["send", "--in", "1m", "--at", "2026-06-01T10:00:00Z"], /give "in" or "at", not both/],
      [["send", "--queue", "no spaces"], /queue must be .*, got "no spaces"/],
      [["send", "--meta", "[1]"], /--meta must be a JSON object/],
      [
        ["send", "--unique-by", "nothing"],
        /--unique-by "nothing" must be args, worker or keys:a,b/,
      ],
    ];
    for (const [args, message] of cases) {
      const bad = await run(args);
      assert.equal(bad.code, 2, `${args.join(" ")}: ${bad.err}`);
      assert.match(bad.err, message);
      assert.match(bad.err, /^jobs enqueue: /);
    }
    await withStore(db, async (store) => assert.equal((await store.jobsList({})).length, 2));
  });
});

Deno.test("jobs enqueue refuses a worker no daemon of this configuration defines, naming the known ones", async () => {
  await withFiles(SCHEDULES, async ({ dir, db, config }) => {
    await Deno.writeTextFile(`${dir}/workers.ts`, WORKERS);
    const run = (args: string[]) =>
      runJobs(["enqueue", ...args, "--db", db, "--config", config, "--create"], {
        now: NOW,
        env: ENV,
      });

    const typo = await run(["gret"]);
    assert.equal(typo.code, 1);
    assert.equal(
      typo.err,
      `jobs enqueue: no daemon of this configuration defines worker "gret"; known: "greet", ` +
        `"jobs.command", "jobs.fanout", "jobs.http", "reindex-search" (--force enqueues it ` +
        `anyway, for a worker another process defines); did you mean "greet"?`,
    );
    // Refused before anything is written: not even the store is created.
    await assert.rejects(Deno.stat(db), Deno.errors.NotFound);

    for (const worker of ["greet", "reindex-search", "jobs.command"]) {
      // A built-in runner's args are checked at enqueue: give a whole command run.
      const args = worker === "jobs.command"
        ? ["--args", '{"kind":"command","argv":["true"]}']
        : [];
      const known = await run([worker, ...args]);
      assert.equal(known.code, 0, `${worker}: ${known.err}`);
    }
    const elsewhere = await run(["mailer", "--force"]);
    assert.equal(elsewhere.code, 0, elsewhere.err);
    // A worker jobs in the store already use is known from then on.
    const again = await run(["mailer"]);
    assert.equal(again.code, 0, again.err);
    const near = await run(["mailr"]);
    assert.equal(near.code, 1);
    assert.match(near.err, /known: .*"mailer".*; did you mean "mailer"\?$/);

    const hostile = await run(["bad\x1b[2Jname", "--force"]);
    assert.equal(hostile.code, 2);
    assert.equal(
      hostile.err,
      `jobs enqueue: worker "bad\\x1b[2Jname" is not a printable identifier: 1-128 letters, ` +
        `digits or ._:/- starting with a letter or digit`,
    );
    await withStore(db, async (store) => {
      assert.deepEqual((await store.jobsList({})).map((j) => j.worker), [
        "greet",
        "reindex-search",
        "jobs.command",
        "mailer",
        "mailer",
      ]);
    });
  });
});

/** Args whose JSON is `kib` KiB long (within a few bytes). */
function argsOf(kib: number): { blob: string } {
  return { blob: "x".repeat(kib * 1024 - 12) };
}

Deno.test("jobs enqueue takes 200 KiB args from --args-file and from standard input, and refuses 300 KiB naming the limit", async () => {
  await withFiles(SCHEDULES, async ({ dir, db }) => {
    const run = (args: string[], stdin?: string) =>
      runJobs(["enqueue", "bulk", ...args, "--db", db, "--force", "--create"], {
        now: NOW,
        env: ENV,
        stdin,
      });
    const big = argsOf(200);
    const file = `${dir}/args.json`;
    // Pretty-printed: the limit counts the args as stored, not the file's whitespace.
    await Deno.writeTextFile(file, JSON.stringify(big, null, 2));
    const fromFile = await run(["--args-file", file]);
    assert.equal(fromFile.code, 0, fromFile.err);
    const fromStdin = await run(["--args", "-"], JSON.stringify(big));
    assert.equal(fromStdin.code, 0, fromStdin.err);
    await withStore(db, async (store) => {
      const jobs = await store.jobsList({});
      assert.equal(jobs.length, 2);
      for (const job of jobs) assert.deepEqual(job.args, big);
    });

    const huge = JSON.stringify(argsOf(300));
    const bytes = new TextEncoder().encode(huge).length;
    assert.ok(bytes > DEFAULT_ARGS_LIMIT);
    const hugeFile = `${dir}/huge.json`;
    await Deno.writeTextFile(hugeFile, huge);
    const refusedFile = await run(["--args-file", hugeFile]);
    assert.equal(refusedFile.code, 2);
    assert.equal(
      refusedFile.err,
      `jobs enqueue: --args-file "${hugeFile}": args are ${bytes} bytes, more than the limit of ` +
        `${DEFAULT_ARGS_LIMIT}`,
    );
    const refusedStdin = await run(["--args", "-"], huge);
    assert.equal(refusedStdin.code, 2);
    assert.equal(
      refusedStdin.err,
      `jobs enqueue: --args - (standard input): args are ${bytes} bytes, more than the limit ` +
        `of ${DEFAULT_ARGS_LIMIT}`,
    );
    const refusedInline = await run(["--args", huge]);
    assert.equal(refusedInline.code, 2);
    assert.equal(
      refusedInline.err,
      `jobs enqueue: --args: args are ${bytes} bytes, more than the limit of ${DEFAULT_ARGS_LIMIT}`,
    );
    await withStore(db, async (store) => assert.equal((await store.jobsList({})).length, 2));
  });
});

Deno.test("jobs enqueue names the args file and why it cannot be read, and takes one source of args", async () => {
  await withFiles(SCHEDULES, async ({ dir, db }) => {
    const run = (args: string[], stdin?: string) =>
      runJobs(["enqueue", "bulk", ...args, "--db", db, "--force", "--create"], {
        now: NOW,
        env: ENV,
        stdin,
      });
    const notJson = `${dir}/notes.txt`;
    await Deno.writeTextFile(notJson, "to: ada\n");
    const latin1 = `${dir}/latin1.json`;
    await Deno.writeFile(latin1, new Uint8Array([0x22, 0xe9, 0x22]));
    const cases: [string[], string | undefined, string][] = [
      [
        ["--args-file", `${dir}/missing.json`],
        undefined,
        `jobs enqueue: cannot read --args-file "${dir}/missing.json": no such file`,
      ],
      [
        ["--args-file", dir],
        undefined,
        `jobs enqueue: cannot read --args-file "${dir}": it is a directory`,
      ],
      [
        ["--args-file", notJson],
        undefined,
        `jobs enqueue: --args-file "${notJson}" is not JSON: Unexpected token 'o', "to: ada\\n" ` +
        `is not valid JSON`,
      ],
      [
        ["--args-file", latin1],
        undefined,
        `jobs enqueue: --args-file "${latin1}" is not UTF-8 text`,
      ],
      [
        ["--args", "-"],
        "",
        `jobs enqueue: --args - (standard input) is not JSON: Unexpected end of JSON input`,
      ],
      [
        ["--args", "{}", "--args-file", notJson],
        undefined,
        `jobs enqueue: give --args or --args-file, not both`,
      ],
    ];
    for (const [args, stdin, message] of cases) {
      const r = await run(args, stdin);
      assert.equal(r.code, 2, `${args.join(" ")}: ${r.err}`);
      assert.equal(r.err, message);
    }
    // Nothing was enqueued, and without args the job's are {}.
    const plain = await run([]);
    assert.equal(plain.code, 0, plain.err);
    await withStore(db, async (store) => {
      assert.deepEqual((await store.jobsList({})).map((j) => j.args), [{}]);
    });
  });
});

Deno.test("jobsctl enqueue --args - reads 200 KiB piped into a real process", async () => {
  await withFiles(SCHEDULES, async ({ dir, db }) => {
    const big = argsOf(200);
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        MAIN,
        "enqueue",
        "bulk",
        "--args",
        "-",
        "--db",
        db,
        "--force",
        "--create",
      ],
      cwd: dir,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(JSON.stringify(big)));
    await writer.close();
    const out = await child.output();
    const decode = (b: Uint8Array) => new TextDecoder().decode(b);
    assert.equal(out.code, 0, decode(out.stderr));
    assert.match(decode(out.stdout), /^enqueued job 1: bulk on queue default, available\n$/);
    await withStore(db, async (store) => {
      const [job] = await store.jobsList({});
      assert.deepEqual(job?.args, big);
    });
  });
});

Deno.test("jobs enqueue on a missing store file says so and creates nothing; --create creates it", async () => {
  await withFiles(SCHEDULES, async ({ dir, db }) => {
    const run = (args: string[]) =>
      runJobs(["enqueue", "bulk", "--force", ...args], { now: NOW, env: ENV });
    const missing = await run(["--db", db]);
    assert.equal(missing.code, 1);
    assert.equal(
      missing.err,
      `jobs enqueue: no file "${db}" for the store (from --db); a daemon creates it when it starts, or run: ` +
        `jobsctl migrate --db ${db}, or add --create`,
    );
    await assert.rejects(Deno.stat(db), Deno.errors.NotFound);
    // JOBS_DB is the same store, and says the same, naming JOBS_DB.
    const fromEnv = await runJobs(["enqueue", "bulk", "--force"], {
      now: NOW,
      env: { ...ENV, JOBS_DB: db },
    });
    assert.equal(fromEnv.err, missing.err.replace("(from --db)", "(from JOBS_DB)"));
    await assert.rejects(Deno.stat(db), Deno.errors.NotFound);

    // --create makes a file, never its directory.
    const nowhere = `${dir}/nope/jobs.db`;
    const noDir = await run(["--db", nowhere, "--create"]);
    assert.equal(noDir.code, 1);
    assert.equal(
      noDir.err,
      `jobs enqueue: no directory "${dir}/nope" for the store "${nowhere}" (from --db)`,
    );

    const created = await run(["--db", db, "--create"]);
    assert.equal(created.code, 0, created.err);
    assert.equal(created.out, "enqueued job 1: bulk on queue default, available");
    // From then on the store is there, with or without --create.
    const again = await run(["--db", db]);
    assert.equal(again.code, 0, again.err);
    await withStore(db, async (store) => assert.equal((await store.jobsList({})).length, 2));
  });
});

Deno.test("jobs enqueue refuses a built-in runner's args its runner would discard, showing the shape", async () => {
  await withFiles(SCHEDULES.replace("workers: ./workers.ts\n", ""), async ({ db }) => {
    const run = (worker: string, args: string) =>
      runJobs(["enqueue", worker, "--args", args, "--db", db, "--create"], { now: NOW, env: ENV });
    const noKind = await run("jobs.command", '{"argv":["sleep","40"]}');
    assert.equal(noKind.code, 2);
    assert.equal(
      noKind.err,
      `jobs enqueue: jobs.command args: command run kind must be "command", got undefined; ` +
        `expected {"kind":"command","argv":["prog","arg"],"shell":false,"cwd":"/srv/app",` +
        `"env":{"NAME":"value"}} (shell, cwd and env optional)`,
    );
    const http = await run("jobs.http", '{"kind":"http","url":"https://example.com"}');
    assert.equal(http.code, 2);
    assert.match(http.err, /^jobs enqueue: jobs\.http args: http run: method must be an HTTP /);
    assert.match(http.err, /; expected \{"kind":"http","method":"POST","url":/);
    const fanout = await run("jobs.fanout", '{"kind":"fanout"}');
    assert.equal(fanout.code, 2);
    assert.match(fanout.err, /^jobs enqueue: jobs\.fanout args: fan-out schedule must be a /);
    assert.match(fanout.err, /; expected \{"kind":"fanout","schedule":"nightly",/);
    // Long args are cut in the runner's words, never in the shape.
    const long = await run(
      "jobs.command",
      JSON.stringify({ kind: "command", argv: ["x".repeat(9999), 3] }),
    );
    assert.equal(long.code, 2);
    assert.ok(long.err.length <= 500, long.err);
    assert.ok(long.err.endsWith(`"env":{"NAME":"value"}} (shell, cwd and env optional)`), long.err);
    // --force names another process's worker; it does not waive a runner's args.
    const forced = await runJobs(
      ["enqueue", "jobs.command", "--args", "{}", "--db", db, "--create", "--force"],
      { now: NOW, env: ENV },
    );
    assert.equal(forced.code, 2);
    // Nothing was stored, and the store was not even created.
    await assert.rejects(Deno.stat(db), Deno.errors.NotFound);

    const good = await run("jobs.command", '{"kind":"command","argv":["sleep","40"]}');
    assert.equal(good.code, 0, good.err);
    await withStore(db, async (store) => {
      assert.deepEqual((await store.jobsList({})).map((j) => j.worker), ["jobs.command"]);
    });
  });
});

Deno.test("jobs enqueue --debounce: a second enqueue of the key replaces the waiting job's args, audited", async () => {
  await withFiles(SCHEDULES, async ({ db }) => {
    const run = (args: string[], now: number) =>
      runJobs(["enqueue", ...args, "--db", db, "--force", "--create"], { now, env: ENV });
    const key = ["--unique-by", "keys:doc", "--debounce", "1m"];
    const first = await run(["reindex", "--args", '{"doc":7,"rev":1}', ...key], NOW);
    assert.equal(first.code, 0, first.err);
    assert.match(first.out, /^enqueued job (\d+): reindex on queue default, scheduled$/);
    const id = Number(first.out.match(/job (\d+)/)![1]);
    const second = await run(["reindex", "--args", '{"doc":7,"rev":2}', ...key], NOW + 10_000);
    assert.equal(second.code, 0, second.err);
    assert.equal(
      second.out,
      `replaced the args of job ${id} (scheduled on default), which holds the same unique key (debounce)`,
    );
    await withStore(db, async (store) => {
      const job = await store.jobGet({ id });
      assert.deepEqual([job?.args, job?.scheduledAt], [{ doc: 7, rev: 2 }, NOW + 60_000]);
      assert.equal((await store.jobsList({ worker: "reindex" })).length, 1);
      const audit = await store.auditList({ target: `job:${id}` });
      assert.deepEqual(audit.map((a) => a.details), [
        { worker: "reindex", queue: "default", duplicate: false },
        { worker: "reindex", queue: "default", duplicate: true, replaced: true },
      ]);
    });
    const stray = await run(["reindex", "--args", "{}", "--debounce-extend"], NOW);
    assert.equal(stray.code, 2);
    assert.match(stray.err, /--debounce-extend needs --debounce <duration>/);
  });
});
