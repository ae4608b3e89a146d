import assert from "node:assert/strict";
import { errorText, FRAMES_KEPT, framesOf, JobFailure } from "../../src/kernel/error_text.ts";
import { JobTimeoutError } from "../../src/kernel/executor.ts";
import { describeError } from "../../src/kernel/redact.ts";
import { defineWorker } from "../../src/kernel/worker.ts";
import { waitUntil } from "../../src/testing.ts";
import { tempJobs } from "../support/stores.ts";

/** The library's `src/`, as its frames name it. */
const LIBRARY = new URL("../../src/", import.meta.url).href;
const THIS_FILE = new URL(import.meta.url).href;

function checkLines(lines: number[]): void {
  const bad = lines.find((n) => n < 0);
  if (bad !== undefined) throw new RangeError(`invoice line must be >= 0, got ${bad}`);
}

function invoiceTotal(lines: number[]): number {
  checkLines(lines);
  return lines.reduce((a, b) => a + b, 0);
}

Deno.test("a worker's error thrown from a nested function keeps its message and the test file's frames, not the runtime's", async () => {
  let thrown: Error | undefined;
  const invoice = defineWorker<{ lines: number[] }>({
    name: "invoice",
    maxAttempts: 1,
    perform: ({ lines }) => {
      try {
        invoiceTotal(lines);
      } catch (error) {
        thrown = error as Error;
        throw error;
      }
    },
  });
  await using t = await tempJobs([invoice]);
  const runtime = await t.jobs.start({ queues: { default: 1 }, node: "n1" });
  const { id } = await t.jobs.enqueue(invoice, { lines: [3, -5] });
  const job = await waitUntil("the job to be discarded", async () => {
    const job = await t.store.jobGet({ id });
    return job?.state === "discarded" ? job : undefined;
  });
  await runtime.stop({ grace: 1_000 });

  // What was thrown does name the runtime: the stored text leaves it out.
  assert.match(thrown!.stack!, /src\/kernel\/executor\.ts/);
  assert.match(thrown!.stack!, /src\/runtime\//);
  const stored = job.errors[0]!.error;
  const [message, ...frames] = stored.split("\n");
  assert.equal(message, "RangeError: invoice line must be >= 0, got -5");
  assert.ok(frames.length >= 2, stored);
  assert.ok(frames.every((f) => /^\s+at /.test(f)), stored);
  assert.match(frames[0]!, /at checkLines /);
  assert.ok(frames.every((f) => f.includes(THIS_FILE)), stored);
  assert.doesNotMatch(stored, /src\/kernel\/executor\.ts|src\/runtime\/|ext:/);
  const [attempt] = await t.store.attemptsList({ jobId: id });
  assert.equal(attempt!.error, stored);
});

const at = (name: string, file: string, line = 1) => `    at ${name} (${file}:${line}:7)`;
const user = (name: string, line = 1) => at(name, "file:///app/workers/billing.ts", line);
const lib = (name: string, path: string) => at(name, `${LIBRARY}${path}`);

Deno.test("framesOf() cuts at the first library frame below the user's and drops the engine's", () => {
  const stack = [
    "TypeError: x is not a function",
    user("charge", 10),
    "    at Array.map (<anonymous>)",
    at("readAll", "ext:deno_fs/30_fs.js"),
    user("perform", 20),
    lib("execute", "kernel/executor.ts"),
    lib("run", "runtime/producer.ts"),
    "    at async Promise.all (index 0)",
    at("drive", "file:///app/main_test.ts"),
  ].join("\n");
  assert.deepEqual(framesOf(stack), [
    user("charge", 10),
    "    at Array.map (<anonymous>)",
    user("perform", 20),
  ]);
});

Deno.test("framesOf() keeps a library frame above the user's (the user called the library) and a library bug's own frames", () => {
  const called = [
    "Error: queue must be 1-128 letters",
    lib("checkQueueName", "kernel/worker.ts"),
    user("perform", 5),
    lib("execute", "kernel/executor.ts"),
  ].join("\n");
  assert.deepEqual(framesOf(called), [
    lib("checkQueueName", "kernel/worker.ts"),
    user("perform", 5),
  ]);
  const bug = [
    "TypeError: cannot read properties of undefined",
    lib("outcomeOf", "runners/command.ts"),
    lib("runCommand", "runners/command.ts"),
    at("processTicksAndRejections", "ext:core/01_core.js"),
    lib("execute", "kernel/executor.ts"),
  ].join("\n");
  assert.deepEqual(framesOf(bug), [
    lib("outcomeOf", "runners/command.ts"),
    lib("runCommand", "runners/command.ts"),
    lib("execute", "kernel/executor.ts"),
  ]);
  const deep = ["Error: deep", ...Array.from({ length: 9 }, (_, i) => user(`f${i}`, i))].join("\n");
  assert.equal(framesOf(deep).length, FRAMES_KEPT);
});

Deno.test("a JobFailure and a JobTimeoutError are stored as their message alone", () => {
  const failure = new JobFailure('command "sh" exited with code 1\nstderr:\nno space left', {
    cause: new Error("inner"),
  });
  assert.equal(errorText(failure), 'command "sh" exited with code 1\nstderr:\nno space left');
  assert.equal(describeError(new JobTimeoutError(5_000)), "timed out after 5000 ms");
  const plain = errorText(new Error("boom", { cause: new Error("root") }));
  assert.match(plain, /^boom\n\s+at .*\ncaused by: root$/s);
  assert.doesNotMatch(plain, /caused by: root\n\s+at /, "causes keep no frames");
});

Deno.test("a stack overflow is stored as one line, without frames or source paths", () => {
  const deep = (n: number): number => n === 0 ? 0 : 1 + deep(n - 1);
  let overflow: unknown;
  try {
    deep(10_000_000);
  } catch (error) {
    overflow = error;
  }
  assert.ok(overflow instanceof RangeError, String(overflow));
  assert.match((overflow as Error).stack!, /\n\s+at /);
  assert.equal(errorText(overflow), "RangeError: Maximum call stack size exceeded");
  assert.equal(describeError(overflow), "RangeError: Maximum call stack size exceeded");
  // A RangeError of another kind keeps its frames.
  assert.match(errorText(new RangeError("invoice line must be >= 0")), /\n\s+at /);
});
