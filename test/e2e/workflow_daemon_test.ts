/**
 * The issue's saga from the command line: a `schedules.yaml` with
 * `use_cases:` and the `lend-copy` saga in its pinned shape, run by a real
 * `jobs daemon`; `jobs start` starts a run, its third step fails for good
 * (exit 77 discards at once), and the compensations of the second step then
 * the first run, once each, through the commands' own files; `jobs
 * workflows --json` shows the run `compensated`, `jobs workflow show` its
 * trail. A second run whose steps all succeed ends `completed` with each
 * step's result handed to the next through JOBS_STEP_INPUT/JOBS_STEP_RESULT.
 */

import assert from "node:assert/strict";
import { waitUntil } from "../../src/testing.ts";
import { EXIT_DISCARD } from "../../src/runners/command.ts";
import { daemonDir, jobsCommand, POLL, readLines, startDaemon } from "../support/daemon_process.ts";
import { LEND_COPY_WORKFLOWS } from "../support/workflows.ts";

/** A use case that appends `<name> <step identity>` to the ledger and writes its result. */
function useCase(dir: string, name: string, fail = false): string {
  const script = `echo "${name} $JOBS_IDEMPOTENCY_KEY $JOBS_USE_CASE" >> "${dir}/ledger"; ` +
    // What it was handed: the "by" of each result in its step document.
    `echo "${name}:$(grep -o '"by":"[a-z-]*"' "$JOBS_STEP_INPUT" | tr '\n' ' ')" >> "${dir}/inputs"; ` +
    (fail ? `[ -e "${dir}/fixed" ] || exit ${EXIT_DISCARD}; ` : "") +
    `printf '{"by":"%s","saw":%s}' "${name}" "$(wc -c < "$JOBS_STEP_INPUT")" > "$JOBS_STEP_RESULT"`;
  return JSON.stringify(["sh", "-c", script]);
}

function config(dir: string): string {
  return `version: 1
queues:
  default: { concurrency: 4 }
use_cases:
  use-case/lending.place-hold: { command: ${useCase(dir, "place-hold")} }
  use-case/lending.cancel-hold: { command: ${useCase(dir, "cancel-hold")} }
  use-case/billing.charge-fee: { command: ${useCase(dir, "charge-fee")} }
  use-case/billing.refund-fee: { command: ${useCase(dir, "refund-fee")} }
  use-case/lending.notify: { command: ${useCase(dir, "notify", true)} }
${LEND_COPY_WORKFLOWS}
`;
}

Deno.test({
  name:
    "jobs daemon runs the lend-copy saga: a notify that fails for good runs refund-fee then cancel-hold once each, the run ends compensated; fixed, a new run completes",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using dir = await daemonDir();
    const { db, config: file, ledger } = dir;
    await Deno.writeTextFile(file, config(dir.path));
    const check = await jobsCommand(["check", "--config", file]);
    assert.equal(check.code, 0, check.stderr);

    await using _daemon = await startDaemon({ db, config: file, node: "wf1" });
    const started = await jobsCommand([
      "start",
      "lend-copy",
      "--db",
      db,
      "--config",
      file,
      "--input",
      '{"copy":42}',
    ]);
    assert.equal(started.code, 0, started.stderr);
    const run = Number(started.stdout.trim());
    assert.ok(Number.isInteger(run) && run > 0, started.stdout);

    const stateOf = async (id: number) => {
      const listed = await jobsCommand(["workflows", "--db", db, "--json"]);
      const runs = JSON.parse(listed.stdout) as { id: number; workflow: string; state: string }[];
      return runs.find((r) => r.id === id)?.state;
    };
    await waitUntil("the run compensated", async () => (await stateOf(run)) === "compensated", {
      ...POLL,
      timeoutMs: 60_000,
    });
    assert.deepEqual(await readLines(ledger), [
      `place-hold ${run}/place-hold use-case/lending.place-hold`,
      `charge-fee ${run}/charge-fee use-case/billing.charge-fee`,
      `notify ${run}/notify use-case/lending.notify`,
      `refund-fee ${run}/charge-fee:compensate use-case/billing.refund-fee`,
      `cancel-hold ${run}/place-hold:compensate use-case/lending.cancel-hold`,
    ]);
    const show = await jobsCommand(["workflow", "show", String(run), "--db", db]);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /compensated/);
    assert.match(show.stdout, /notify\s+discarded/);

    await Deno.writeTextFile(`${dir.path}/fixed`, "");
    await Deno.remove(ledger);
    const again = await jobsCommand(["start", "lend-copy", "--db", db, "--config", file]);
    assert.equal(again.code, 0, again.stderr);
    const second = Number(again.stdout.trim());
    await waitUntil(
      "the second run completed",
      async () => (await stateOf(second)) === "completed",
      {
        ...POLL,
        timeoutMs: 60_000,
      },
    );
    assert.deepEqual((await readLines(ledger)).map((l) => l.split(" ")[0]), [
      "place-hold",
      "charge-fee",
      "notify",
    ]);
    // Each step was handed the result of the one before it; each compensation, what it undoes.
    const inputs = await readLines(`${dir.path}/inputs`);
    assert.ok(inputs.includes(`charge-fee:"by":"place-hold" `), inputs.join("\n"));
    assert.ok(inputs.includes(`notify:"by":"charge-fee" `), inputs.join("\n"));
    assert.ok(
      inputs.some((l) => l.startsWith("refund-fee:") && l.includes(`"by":"charge-fee"`)),
      inputs.join("\n"),
    );
  },
});
