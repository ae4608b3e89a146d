import assert from "node:assert/strict";
import { tempDir } from "../support/stores.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

/** Runs `main.ts` with `args` in a subprocess, as a user would. */
async function jobsCommand(...args: string[]) {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", MAIN, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

/** The result table's row of `worker`, split into cells. */
function row(stdout: string, worker: string): string[] {
  const table = stdout.slice(stdout.indexOf("\nresult\n"));
  const line = table.split("\n").find((l) => new RegExp(`^\\s+#\\d+\\s+${worker}\\s`).test(l));
  assert.ok(line, `no result row for ${worker} in:\n${stdout}`);
  return line.trim().split(/\s{2,}/);
}

Deno.test("jobs demo works every example job to its expected end, twice on one file", async () => {
  const dir = await tempDir();
  try {
    const db = `${dir.path}/demo.db`;
    for (const run of [1, 2]) {
      const { code, stdout, stderr } = await jobsCommand("demo", "--db", db);
      assert.equal(code, 0, `run ${run} failed:\n${stdout}\n${stderr}`);
      assert.ok(!stdout.includes("\x1b["), "no ANSI codes when stdout is not a terminal");
      assert.deepEqual(row(stdout, "resize").slice(1, 4), ["resize", "completed", "1"]);
      const charge = row(stdout, "charge");
      assert.deepEqual(charge.slice(1, 4), ["charge", "completed", "2"]);
      assert.match(charge[4] ?? "", /token=\[REDACTED\]/);
      assert.doesNotMatch(stdout, /tok_[0-9a-f]{8}/, "the card token is redacted");
      assert.deepEqual(row(stdout, "report").slice(1, 4), ["report", "completed", "1"]);
      assert.match(stdout, /snoozing 300 ms/);
      assert.deepEqual(row(stdout, "import").slice(1, 3), ["import", "discarded"]);
      assert.deepEqual(row(stdout, "sync").slice(1, 3), ["sync", "cancelled"]);
      assert.deepEqual(row(stdout, "remind").slice(1, 3), ["remind", "completed"]);
      assert.deepEqual(row(stdout, "newsletter").slice(1, 3), ["newsletter", "completed"]);
      assert.match(stdout, /newsletter again with the same args -> duplicate of #\d+/);
      assert.deepEqual(row(stdout, "welcome").slice(1, 3), ["welcome", "completed"]);
      assert.match(stdout, /rolled back: 0 signup rows and 0 welcome jobs remain/);
      assert.match(
        stdout,
        /\n8 jobs in [\d.]+ s: 6 completed, 1 cancelled, 1 discarded; 1 retried, 1 duplicate refused\n/,
      );
      if (run === 2) assert.match(stdout, /already holds 8 jobs from earlier runs/);
    }
  } finally {
    await dir.cleanup();
  }
});

Deno.test("jobs exits 2 naming an unknown command", async () => {
  const { code, stdout, stderr } = await jobsCommand("frobnicate");
  assert.equal(code, 2);
  assert.equal(stdout, "");
  assert.match(stderr, /^jobs: unknown command "frobnicate"/);
  assert.equal(stderr.trim().split("\n").length, 1, "one line");
});

Deno.test("jobs demo exits 2 naming an unknown option", async () => {
  const { code, stderr } = await jobsCommand("demo", "--dbb", "x.db");
  assert.equal(code, 2);
  assert.match(stderr, /^jobs demo: unknown option "--dbb"/);
});

Deno.test("jobs version prints the version from deno.json", async () => {
  const { code, stdout } = await jobsCommand("version");
  assert.equal(code, 0);
  assert.match(stdout, /^jobs \d+\.\d+\.\d+ \(deno \d+\.\d+\.\d+\)\n$/);
});
