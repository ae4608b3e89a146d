import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { commandRunSchema, commandWorker, snoozeMs } from "../../src/runners/command.ts";
import { ERROR_STDERR_BYTES, OutputTail } from "../../src/process/output.ts";
import { type CommandRun } from "../../src/kernel/runs.ts";
import { ERROR_CAP_BYTES } from "../../src/kernel/redact.ts";
import { groupAlive } from "../../src/process/process_group.ts";
import { drainAllJobs, drainQueue, performJob, waitUntil } from "../../src/testing.ts";
import { tempDir, tempJobs } from "../support/stores.ts";
import { alive, driven, readPid } from "./processes.ts";
import { CHARGE_FEE, performStep } from "./steps.ts";

const VARS: Record<string, string> = { API_TOKEN: "tok-5f2e9a", REGION: "eu-west" };

function worker(
  clock: FakeClock = new FakeClock(),
  options: { killGraceMs?: number; outputBytes?: number } = {},
) {
  return commandWorker({ env: (name) => VARS[name], clock, ...options });
}

function run(argv: string[], extra: Partial<CommandRun> = {}): CommandRun {
  return { kind: "command", argv, shell: false, ...extra };
}

/** A script run by `sh -c` as argv (no `shell: true`): `$1` is the working directory. */
function sh(script: string, dir: string, extra: Partial<CommandRun> = {}): CommandRun {
  return run(["/bin/sh", "-c", script, "sh", dir], extra);
}

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

/** Starts a grandchild `sleep 60` in the background, then waits on its own `sleep 60`. */
const SPAWNS_GRANDCHILD =
  `sleep 60 & echo $! > "$1/grandchild"; echo $$ > "$1/child"; echo started; wait`;

Deno.test("exit 0 completes through the kernel, keeping stdout and stderr as output", async () => {
  await using t = await tempJobs([worker()]);
  const { id } = await t.jobs.enqueue(
    "jobs.command",
    run(["/bin/sh", "-c", "echo out-1; echo err-1 >&2; echo out-2"]),
    { meta: { timeoutMs: 10_000 } },
  );
  const drained = await drainQueue(t.jobs, "default");
  assert.equal(drained.completed, 1);
  const job = await t.store.jobGet({ id });
  assert.equal(job?.state, "completed");
  const [attempt] = await t.store.attemptsList({ jobId: id });
  assert.equal(attempt?.outcome, "completed");
  for (const line of ["out-1", "err-1", "out-2"]) assert.match(attempt!.output!, new RegExp(line));
  assert.ok(attempt!.output!.indexOf("out-1") < attempt!.output!.indexOf("out-2"));
});

Deno.test("exit 75 snoozes for the seconds on stdout's last line, else 60 s", async () => {
  const clock = new FakeClock();
  const w = worker(clock);
  const named = await performJob(
    w,
    run(["/bin/sh", "-c", "echo working; echo snooze 30; exit 75"]),
    {
      clock,
    },
  );
  assert.equal(named.outcome, "snoozed");
  assert.equal(named.outcome === "snoozed" && named.until, clock.now() + 30_000);
  const bare = await performJob(w, run(["/bin/sh", "-c", "echo busy; exit 75"]), { clock });
  assert.equal(bare.outcome === "snoozed" && bare.until, clock.now() + 60_000);
  assert.equal(snoozeMs("x\nsnooze 1.5\n\n"), 1_500);
  assert.equal(snoozeMs("snooze soon\n"), 60_000);
  assert.equal(snoozeMs("snooze 5\nlater\n"), 60_000);
});

Deno.test("exit 76 cancels, 77 discards, another code or a signal retries naming it", async () => {
  const w = worker();
  const cancelled = await performJob(w, run(["/bin/sh", "-c", "exit 76"]));
  assert.equal(cancelled.outcome, "cancelled");
  assert.match(cancelled.error!, /exited with code 76/);
  const discarded = await performJob(w, run(["/bin/sh", "-c", "exit 77"]));
  assert.equal(discarded.outcome, "discarded");
  assert.match(discarded.error!, /exited with code 77/);
  const failed = await performJob(w, run(["/bin/sh", "-c", "echo trying; exit 3"]));
  assert.equal(failed.outcome, "retryable");
  assert.match(failed.error!, /command "\/bin\/sh" exited with code 3/);
  assert.match(failed.output!, /trying/);
  const killed = await performJob(w, run(["/bin/sh", "-c", "kill -KILL $$"]));
  assert.equal(killed.outcome, "retryable");
  assert.equal(killed.error, 'command "/bin/sh" was killed by SIGKILL');
  const last = await performJob(w, run(["/bin/sh", "-c", "exit 3"]), { maxAttempts: 1 });
  assert.equal(last.outcome, "discarded");
});

Deno.test("a program that cannot start is retried, naming it", async () => {
  const result = await performJob(worker(), run(["/nonexistent/jobs-cmd"]));
  assert.equal(result.outcome, "retryable");
  assert.match(result.error!, /^command "\/nonexistent\/jobs-cmd" cannot start: [^\n]+$/);
});

Deno.test("a command that exits 1 stores its message and stderr's tail, and no stack, in the job and its attempt", async () => {
  await using t = await tempJobs([worker()]);
  const script = `echo progress; echo "disk full on /var" >&2; exit 1`;
  const { id } = await t.jobs.enqueue("jobs.command", run(["sh", "-c", script]));
  assert.equal((await drainQueue(t.jobs, "default")).retryable, 1);
  const expected = 'command "sh" exited with code 1\nstderr:\ndisk full on /var';
  const job = await t.store.jobGet({ id });
  assert.deepEqual(job!.errors.map((e) => e.error), [expected]);
  const [attempt] = await t.store.attemptsList({ jobId: id });
  assert.equal(attempt!.error, expected);
  // stdout stays in the output, with stderr.
  assert.equal(attempt!.output, "progress\ndisk full on /var\n");
});

Deno.test("a failure's stderr is cut to its last ERROR_STDERR_BYTES, marked, within the 4 KiB cap", async () => {
  const result = await performJob(
    worker(),
    run(["sh", "-c", "head -c 10000 /dev/zero | tr '\\0' e >&2; echo >&2; echo LAST >&2; exit 2"]),
  );
  assert.equal(result.outcome, "retryable");
  const error = result.error!;
  const bytes = (text: string) => new TextEncoder().encode(text).length;
  assert.ok(bytes(error) <= ERROR_CAP_BYTES, `${bytes(error)} bytes`);
  const [head, stderr] = error.split("\nstderr:\n");
  assert.equal(head, 'command "sh" exited with code 2');
  // The last bytes, the end of stderr kept whole: 10 000 e's, a newline and LAST.
  assert.match(stderr!, /^\[truncated (\d+) bytes\] …e+\nLAST$/);
  const dropped = Number(/truncated (\d+)/.exec(stderr!)![1]);
  assert.equal(10_000 + "\nLAST\n".length - dropped, bytes(stderr!.split("…")[1]!) + 1);
  assert.ok(bytes(stderr!) < ERROR_STDERR_BYTES, `${bytes(stderr!)} bytes of stderr`);
});

Deno.test("an error names argv[0] quoted and escaped: a script's newline and escape codes stay on one line", async () => {
  const script = "echo oops >&2\nprintf '\\033[31m'; exit 4";
  const failed = await performJob(worker(), run([script], { shell: true }));
  assert.equal(failed.outcome, "retryable");
  assert.equal(
    failed.error,
    "shell command \"echo oops >&2\\nprintf '\\\\033[31m'; exit 4\" exited with code 4\nstderr:\noops",
  );
  const odd = await performJob(worker(), run(["/nonexistent/\x1b]0;title\x07\u202e"]));
  assert.equal(odd.outcome, "retryable");
  const [first] = odd.error!.split("\n");
  assert.match(first!, /^command "\/nonexistent\/\\u001b\]0;title\\u0007\\u202e" cannot start: /);
});

Deno.test("args that are not a command run are discarded at once", async () => {
  const w = worker();
  for (
    const bad of [
      { kind: "command", argv: [], shell: false },
      { kind: "command", argv: ["ls", 3], shell: false },
      { kind: "http", argv: ["ls"], shell: false },
      { kind: "command", argv: ["a", "b"], shell: true },
      { kind: "command", argv: ["ls"], shell: false, env: { A: 1 } },
      { kind: "command", argv: ["ls"], shell: "yes" },
    ]
  ) {
    const result = await performJob(w, bad as unknown as CommandRun);
    assert.equal(result.outcome, "discarded", JSON.stringify(bad));
    assert.match(result.error!, /^invalid args: TypeError: command/);
  }
  assert.deepEqual(commandRunSchema.parse({ kind: "command", argv: ["ls"] }), run(["ls"]));
});

Deno.test("env values fill ${NAME} from the daemon's environment; the child inherits the rest", async () => {
  await using dir = await tempDirectory();
  Deno.env.set("JOBS_TEST_INHERITED", "from-daemon");
  try {
    const result = await performJob(
      worker(),
      sh(
        `printf '%s|%s|%s|%s' "$TOKEN" "$WHERE" "$LIT" "$JOBS_TEST_INHERITED" > "$1/env"; echo "token=$TOKEN plain $TOKEN"`,
        dir.path,
        { env: { TOKEN: "${API_TOKEN}", WHERE: "region-${REGION}", LIT: "a$$b" } },
      ),
    );
    assert.equal(result.outcome, "completed");
    assert.equal(
      await Deno.readTextFile(`${dir.path}/env`),
      "tok-5f2e9a|region-eu-west|a$b|from-daemon",
    );
    // The filled-in secret never reaches the stored output.
    assert.doesNotMatch(result.output!, /tok-5f2e9a/);
    assert.match(result.output!, /plain \[REDACTED\]/);
  } finally {
    Deno.env.delete("JOBS_TEST_INHERITED");
  }
});

Deno.test("a missing ${NAME} discards the job naming the variable, and runs nothing", async () => {
  await using dir = await tempDirectory();
  const result = await performJob(
    worker(),
    sh(`touch "$1/ran"`, dir.path, { env: { KEY: "${NOT_SET_ANYWHERE}" } }),
  );
  assert.equal(result.outcome, "discarded");
  assert.equal(
    result.error,
    'command env "KEY": environment variable "NOT_SET_ANYWHERE" is not set',
  );
  assert.equal(await exists(`${dir.path}/ran`), false);
});

Deno.test("the child gets JOBS_* for an occurrence and for a plain job", async () => {
  const print = run(["/bin/sh", "-c", "env | grep '^JOBS_' | sort"]);
  const clock = new FakeClock(Date.UTC(2026, 2, 8, 7, 0, 3));
  const scheduled = await performJob(worker(clock), print, {
    clock,
    attempt: 3,
    occurrence: "nightly@2026-03-08T07:00:00.000Z",
  });
  assert.equal(scheduled.outcome, "completed");
  assert.equal(
    scheduled.output,
    [
      "JOBS_ATTEMPT=3",
      "JOBS_FENCE=3",
      "JOBS_IDEMPOTENCY_KEY=nightly@2026-03-08T07:00:00.000Z",
      "JOBS_OCCURRENCE=nightly@2026-03-08T07:00:00.000Z",
      "JOBS_SCHEDULED_FOR=2026-03-08T07:00:00.000Z",
      "",
    ].join("\n"),
  );
  const item = await performJob(worker(clock), print, {
    clock,
    occurrence: "nightly@2026-03-08T07:00:00.000Z#0123456789abcdef",
  });
  assert.match(item.output ?? "", /^JOBS_SCHEDULED_FOR=2026-03-08T07:00:00\.000Z$/m);
  const plain = await performJob(worker(clock), print, { clock });
  assert.equal(
    plain.output,
    [
      "JOBS_ATTEMPT=1",
      "JOBS_FENCE=1",
      "JOBS_IDEMPOTENCY_KEY=job:1",
      "JOBS_OCCURRENCE=",
      "JOBS_SCHEDULED_FOR=2026-03-08T07:00:03.000Z",
      "",
    ].join("\n"),
  );
});

Deno.test("argv with shell metacharacters reaches the child literally and runs nothing else", async () => {
  await using dir = await tempDirectory();
  const marker = `${dir.path}/pwned`;
  const args = [
    `$(touch ${marker})`,
    `; touch ${marker}`,
    `\`touch ${marker}\``,
    `x\ntouch ${marker}`,
    `&& touch ${marker} | cat > ${marker}`,
    `*`,
    `\${HOME}`,
  ];
  const result = await performJob(worker(), run(["printf", "[%s]\\n", ...args]));
  assert.equal(result.outcome, "completed");
  assert.equal(result.output, args.map((a) => `[${a}]\n`).join(""));
  assert.equal(await exists(marker), false);
});

Deno.test("shell: true runs argv[0] as a /bin/sh script", async () => {
  await using dir = await tempDirectory();
  const result = await performJob(
    worker(),
    run([`echo $((40 + 2)) | tr 0-9 a-j; touch ran && echo "in $(basename "$PWD")"`], {
      shell: true,
      cwd: dir.path,
    }),
  );
  assert.equal(result.outcome, "completed");
  assert.equal(result.output, `ec\nin ${dir.path.split("/").at(-1)}\n`);
  assert.equal(await exists(`${dir.path}/ran`), true);
});

Deno.test("cwd sets the child's working directory", async () => {
  await using dir = await tempDirectory();
  const result = await performJob(worker(), run(["pwd"], { cwd: dir.path }));
  assert.equal(result.output, `${await Deno.realPath(dir.path)}\n`);
});

Deno.test("meta.timeoutMs on the injected clock stops the whole group, grandchild included", async () => {
  await using dir = await tempDirectory();
  const clock = new FakeClock();
  await using t2 = await tempJobs([worker(clock)], { clock });
  const { id } = await t2.jobs.enqueue("jobs.command", sh(SPAWNS_GRANDCHILD, dir.path), {
    meta: { timeoutMs: 1_000 },
  });
  const drained = drainQueue(t2.jobs, "default");
  const child = await readPid(`${dir.path}/child`);
  const grandchild = await readPid(`${dir.path}/grandchild`);
  assert.ok(alive(child) && alive(grandchild));
  t2.clock.advance(999);
  assert.ok(alive(child), "not before the timeout");
  t2.clock.advance(1);
  assert.equal((await drained).retryable, 1);
  // SIGKILL is sent; on a busy machine the processes die a moment later.
  await waitUntil("the child and grandchild to die", () => !alive(child) && !alive(grandchild));
  const [attempt] = await t2.store.attemptsList({ jobId: id });
  assert.match(attempt!.error!, /timed out after 1000 ms/);
  assert.match(attempt!.output!, /started/);
});

Deno.test("SIGKILL follows SIGTERM after killGraceMs when the group ignores SIGTERM", async () => {
  await using dir = await tempDirectory();
  const clock = new FakeClock();
  await using t = await tempJobs([worker(clock, { killGraceMs: 5_000 })], { clock });
  // An ignored signal stays ignored across exec: the sleeps ignore SIGTERM too.
  await t.jobs.enqueue("jobs.command", sh(`trap '' TERM; ${SPAWNS_GRANDCHILD}`, dir.path), {
    meta: { timeoutMs: 1_000 },
  });
  const drained = drainQueue(t.jobs, "default");
  const child = await readPid(`${dir.path}/child`);
  const grandchild = await readPid(`${dir.path}/grandchild`);
  clock.advance(1_000);
  await waitUntil("the kill grace to start", () => clock.sleepers > 0);
  assert.ok(alive(child) && alive(grandchild), "SIGTERM is ignored");
  clock.advance(4_999);
  assert.ok(alive(child), "not killed before the grace ends");
  clock.advance(1);
  assert.equal((await drained).retryable, 1);
  assert.equal(alive(child), false);
  // SIGKILL is sent; on a busy machine the grandchild dies a moment later.
  await waitUntil("the grandchild to die", () => !alive(grandchild));
  await waitUntil("the whole group to be gone", () => !groupAlive(child));
});

Deno.test("an abort of ctx.signal stops the group and leaves no orphan", async () => {
  await using dir = await tempDirectory();
  const control = new AbortController();
  const result = performJob(worker(), sh(SPAWNS_GRANDCHILD, dir.path), {
    signal: control.signal,
  });
  const child = await readPid(`${dir.path}/child`);
  const grandchild = await readPid(`${dir.path}/grandchild`);
  assert.ok(alive(grandchild));
  control.abort(new Error("cancelled by operator"));
  const ended = await result;
  assert.equal(ended.outcome, "retryable");
  assert.match(ended.error!, /command "\/bin\/sh" was stopped: cancelled by operator/);
  await waitUntil("the child and grandchild to die", () => !alive(child) && !alive(grandchild));
});

Deno.test("what a finished command left running in its group is stopped", async () => {
  await using dir = await tempDirectory();
  const clock = new FakeClock();
  // The look at the group during the grace waits on the clock: it is moved on.
  const result = await driven(
    clock,
    performJob(
      worker(clock),
      sh(`sleep 60 >/dev/null 2>&1 & echo $! > "$1/grandchild"; echo done`, dir.path),
      { clock },
    ),
    50,
  );
  assert.equal(result.outcome, "completed");
  assert.equal(result.output, "done\n");
  const grandchild = await readPid(`${dir.path}/grandchild`);
  await waitUntil("the grandchild to be gone", () => !alive(grandchild));
});

Deno.test("a grandchild that ignores SIGTERM and outlives the leader gets the grace, then SIGKILL", async () => {
  await using dir = await tempDirectory();
  const clock = new FakeClock();
  // The leader exits only once the grandchild ignores SIGTERM: a loaded
  // machine may not have run the grandchild's trap yet when the leader is
  // done, and the group's SIGTERM would then end it before any grace.
  const leaves = `(trap '' TERM; : > "$1/trapped"; exec sleep 60) >/dev/null 2>&1 & ` +
    `echo $! > "$1/grandchild"; while [ ! -e "$1/trapped" ]; do sleep 0.01; done; echo done`;
  let over = false;
  const result = performJob(worker(clock, { killGraceMs: 5_000 }), sh(leaves, dir.path), { clock })
    .finally(() => over = true);
  const grandchild = await readPid(`${dir.path}/grandchild`);
  // The leader is gone; the grace has started once the run looks at the group on the clock.
  await waitUntil("the grace to start", () => clock.sleepers > 0);
  clock.advance(4_999);
  await waitUntil("the last look of the grace", () => clock.sleepers > 0);
  assert.ok(alive(grandchild) && !over, "SIGTERM is ignored, and SIGKILL waits for the grace");
  clock.advance(1);
  assert.equal((await result).outcome, "completed");
  await waitUntil("the grandchild to be gone", () => !alive(grandchild));
});

Deno.test("a huge output keeps only its last outputBytes, marked", async () => {
  const result = await performJob(
    worker(new FakeClock(), { outputBytes: 4096 }),
    run(["/bin/sh", "-c", "head -c 5000000 /dev/zero | tr '\\0' x; echo; echo END"]),
  );
  assert.equal(result.outcome, "completed");
  const bytes = new TextEncoder().encode(result.output!).length;
  assert.ok(bytes <= 4096, `kept ${bytes} bytes`);
  assert.ok(bytes > 4000, `kept ${bytes} bytes`);
  assert.match(result.output!, /^\[truncated 49\d{5} bytes\] …x+\nEND\n$/);
});

Deno.test("OutputTail keeps the last bytes across wrap-arounds", () => {
  const tail = new OutputTail(10);
  let all = "";
  for (const piece of ["abc", "defgh", "ijklmnop", "q", "rstuvwxyz0123", "45"]) {
    tail.push(new TextEncoder().encode(piece));
    all += piece;
    assert.equal(new TextDecoder().decode(tail.bytes()), all.slice(-10));
    assert.equal(tail.dropped, Math.max(0, all.length - 10));
  }
  const short = new OutputTail(64);
  short.push(new TextEncoder().encode("hello"));
  assert.equal(short.text(), "hello");
});

async function tempDirectory() {
  const dir = await tempDir();
  return { path: dir.path, [Symbol.asyncDispose]: dir.cleanup };
}

// ---------------------------------------------------------------------------
// Workflow steps

/** Writes an executable sh script into `dir` and returns its path. */
async function script(dir: string, name: string, body: string): Promise<string> {
  const path = `${dir}/${name}`;
  await Deno.writeTextFile(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return path;
}

Deno.test("a command step gets JOBS_WORKFLOW_RUN, JOBS_STEP, JOBS_USE_CASE and its step document, and its result file is the step's result", async () => {
  await using dir = await tempDirectory();
  const program = await script(
    dir.path,
    "charge-fee",
    [
      `env | grep '^JOBS_' | sort > "${dir.path}/env"`,
      `cp "$JOBS_STEP_INPUT" "${dir.path}/input.json"`,
      `printf '{"charge":"ch-1","amount":250}' > "$JOBS_STEP_RESULT"`,
    ].join("\n"),
  );
  const clock = new FakeClock(Date.UTC(2026, 4, 1, 9, 0, 0));
  const result = await performStep(worker(clock), run([program]), {
    clock,
    attempt: 2,
    cursor: { at: 600 },
  });
  assert.equal(result.outcome, "completed");
  assert.equal(result.value, '{"charge":"ch-1","amount":250}');
  assert.equal(result.workflow, 12);

  const env = Object.fromEntries(
    (await Deno.readTextFile(`${dir.path}/env`)).trim().split("\n").map((line) => {
      const at = line.indexOf("=");
      return [line.slice(0, at), line.slice(at + 1)];
    }),
  );
  const { JOBS_STEP_INPUT: input, JOBS_STEP_RESULT: output, ...rest } = env;
  assert.deepEqual(rest, {
    JOBS_ATTEMPT: "2",
    JOBS_FENCE: "2",
    JOBS_IDEMPOTENCY_KEY: "12/charge-fee",
    JOBS_OCCURRENCE: "12/charge-fee",
    JOBS_SCHEDULED_FOR: "2026-05-01T09:00:00.000Z",
    JOBS_STEP: "charge-fee",
    JOBS_USE_CASE: "use-case/billing.charge-fee",
    JOBS_WORKFLOW: "lend-copy",
    JOBS_WORKFLOW_RUN: "12",
  });
  assert.match(input!, /^\/.+\/input\.json$/);
  assert.match(output!, /^\/.+\/result\.json$/);
  const folder = input!.slice(0, input!.lastIndexOf("/"));
  assert.equal(output!.slice(0, output!.lastIndexOf("/")), folder);

  assert.deepEqual(JSON.parse(await Deno.readTextFile(`${dir.path}/input.json`)), {
    run: 12,
    workflow: "lend-copy",
    step: "charge-fee",
    kind: "step",
    use_case: "use-case/billing.charge-fee",
    input: CHARGE_FEE.payload.input,
    results: CHARGE_FEE.payload.results,
    index: null,
    item: null,
    compensates: null,
    cursor: { at: 600 },
  });
  // The attempt's files went with it.
  assert.equal(await exists(folder), false);
});

Deno.test("a command step's directory is private to its user", async () => {
  await using dir = await tempDirectory();
  const program = await script(
    dir.path,
    "modes",
    `stat -c %a "$(dirname "$JOBS_STEP_INPUT")" "$JOBS_STEP_INPUT"`,
  );
  const result = await performStep(worker(), run([program]));
  assert.equal(result.outcome, "completed");
  assert.equal(result.output, "700\n600\n");
});

Deno.test("a compensation and an item of a fanned-out step read what they undo and their item", async () => {
  const print = run(["/bin/sh", "-c", `cat "$JOBS_STEP_INPUT"; echo; echo "use=$JOBS_USE_CASE"`]);
  const compensation = await performStep(worker(), print, {
    step: "place-hold",
    kind: "compensation",
    useCase: "use-case/lending.cancel-hold",
    payload: {
      input: { copy: "c-1" },
      results: { "place-hold": { hold: "h-9" } },
      compensates: { step: "place-hold", result: { hold: "h-9" } },
    },
  });
  assert.equal(compensation.outcome, "completed");
  const [doc, use] = compensation.output!.trim().split("\n");
  assert.deepEqual(JSON.parse(doc!), {
    run: 12,
    workflow: "lend-copy",
    step: "place-hold",
    kind: "compensation",
    use_case: "use-case/lending.cancel-hold",
    input: { copy: "c-1" },
    results: { "place-hold": { hold: "h-9" } },
    index: null,
    item: null,
    compensates: { step: "place-hold", result: { hold: "h-9" } },
    cursor: null,
  });
  assert.equal(use, "use=use-case/lending.cancel-hold");

  const item = await performStep(worker(), print, {
    workflow: "import",
    step: "load",
    item: 3,
    useCase: null,
    payload: { input: null, results: { list: ["a", "b", "c", "d"] }, item: "d" },
  });
  const [itemDoc, noUse] = item.output!.trim().split("\n");
  assert.deepEqual(
    { ...JSON.parse(itemDoc!), results: undefined },
    {
      run: 12,
      workflow: "import",
      step: "load",
      kind: "step",
      use_case: null,
      input: null,
      results: undefined,
      index: 3,
      item: "d",
      compensates: null,
      cursor: null,
    },
  );
  assert.equal(noUse, "use=");
});

Deno.test("a command step that writes no result file completes with no result", async () => {
  const result = await performStep(worker(), run(["/bin/sh", "-c", "echo done"]));
  assert.equal(result.outcome, "completed");
  assert.equal(result.value, undefined);
});

Deno.test("a result file that is not JSON discards the step, naming the file", async () => {
  const result = await performStep(
    worker(),
    run(["/bin/sh", "-c", `echo 'charged, I think' > "$JOBS_STEP_RESULT"`]),
  );
  assert.equal(result.outcome, "discarded");
  assert.match(
    result.error!,
    /^command "\/bin\/sh" result file "\/.+\/result\.json" is not JSON: /,
  );
});

Deno.test("a command step that fails keeps no result, even with a result file written", async () => {
  const result = await performStep(
    worker(),
    run(["/bin/sh", "-c", `echo '{"half":true}' > "$JOBS_STEP_RESULT"; exit 3`]),
  );
  assert.equal(result.outcome, "retryable");
  assert.equal(result.value, undefined);
  assert.match(result.error!, /exited with code 3/);
});

Deno.test("a command step's result is handed on through the kernel's size limit", async () => {
  const big = run([
    "/bin/sh",
    "-c",
    `head -c 300000 /dev/zero | tr '\\0' a | sed 's/.*/"&"/' > "$JOBS_STEP_RESULT"`,
  ]);
  const result = await performStep(worker(), big);
  assert.equal(result.outcome, "discarded");
  assert.match(result.error!, /step "charge-fee" result/);
});

Deno.test("a command step's result reaches the step that depends on it through the store", async () => {
  await using t = await tempJobs([worker()]);
  t.jobs.registerWorkflow({
    id: "pipe",
    steps: [
      {
        id: "one",
        run: run(["/bin/sh", "-c", `echo '{"rows":41}' > "$JOBS_STEP_RESULT"`]),
      },
      {
        id: "two",
        dependsOn: ["one"],
        run: run(["/bin/sh", "-c", `cp "$JOBS_STEP_INPUT" "$JOBS_STEP_RESULT"`]),
      },
    ],
  });
  const { id } = await t.jobs.startWorkflow("pipe", { day: "2026-05-01" });
  await drainAllJobs(t.jobs);
  const detail = await t.store.workflowGet({ id });
  assert.equal(detail?.run.state, "completed");
  const two = detail!.steps.find((s) => s.step === "two")!;
  assert.deepEqual(JSON.parse(two.result!), {
    run: id,
    workflow: "pipe",
    step: "two",
    kind: "step",
    use_case: null,
    input: { day: "2026-05-01" },
    results: { one: { rows: 41 } },
    index: null,
    item: null,
    compensates: null,
    cursor: null,
  });
});
