/**
 * `jobs bulk` as the issue pins it: `preview <queue> <bulk> [--key <k>]...
 * --as <person> --json` prints `{"manifest", "items", "totals"}`; `request
 * <manifest> --as <person>` sends the code through the queue's
 * `confirm_by: { command: [...] }` (the command gets it in
 * `JOBS_CONFIRM_CODE` and the manifest's summary as JSON on stdin, and
 * writes both to files this test reads); `confirm <manifest> --code <code>
 * --as <person>` runs one job per item. The code never appears in the
 * output; a wrong code and self-approval are refused with their reason.
 */

import assert from "node:assert/strict";
import { runJobs, withFiles } from "../support/cli.ts";
import { withStore } from "../support/stores.ts";

const NOW = Date.UTC(2026, 11, 6, 9);
const ENV = { USER: "root" };

function schedules(dir: string): string {
  const script = `printf '%s' "$JOBS_CONFIRM_CODE" > ${dir}/code; cat > ${dir}/stdin`;
  return [
    "version: 1",
    "work_queues:",
    "  - id: payouts",
    "    claim: required",
    "    lease: 1h",
    "    actions:",
    "      - id: pay",
    "        run: { worker: pay_out }",
    "    bulk:",
    "      - id: release",
    "        action: pay",
    "        money: { amount: amount, currency: currency }",
    `        confirm_by: { command: ${JSON.stringify(["/bin/sh", "-c", script])} }`,
    "        second_person: true",
    "    roles: [operator]",
    "",
  ].join("\n");
}

async function addPerson(db: string, name: string, role: string): Promise<void> {
  const added = await runJobs(["users", "add", name, "--role", role, "--db", db], {
    now: NOW,
    env: ENV,
    stdin: "correct horse battery\n",
  });
  assert.equal(added.code, 0, added.err);
}

Deno.test("jobs bulk preview, request and confirm with --json through a command channel", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await withFiles(schedules(dir), async ({ db, config }) => {
      await addPerson(db, "ann", "operator");
      await addPerson(db, "bob", "approver");
      const jobs = (args: string[]) =>
        runJobs([...args, "--db", db, "--config", config], { now: NOW, env: ENV, osUser: "root" });
      const json = async (args: string[]) => {
        const r = await jobs([...args, "--json"]);
        assert.equal(r.code, 0, `${args.join(" ")}: ${r.err}`);
        return JSON.parse(r.out);
      };
      for (
        const [key, data] of [
          ["p1", '{"amount": "1900.00", "currency": "EUR"}'],
          ["p2", '{"amount": 500, "currency": "EUR"}'],
          ["p3", '{"amount": "42.5", "currency": "USD"}'],
        ]
      ) {
        await json(["work", "add", "payouts", "--key", key!, "--data", data!]);
      }

      const preview = await json([
        "bulk",
        "preview",
        "payouts",
        "release",
        "--key",
        "p1",
        "--key",
        "p2",
        "--as",
        "ann",
      ]);
      assert.match(preview.manifest, /^[0-9a-f]{64}$/);
      assert.deepEqual(
        preview.items.map((i: { key: string; amount: string }) => [i.key, i.amount]),
        [["p1", "1900"], ["p2", "500"]],
      );
      assert.deepEqual(preview.totals, { EUR: "2400" });

      const asked = await jobs(["bulk", "request", preview.manifest, "--as", "ann"]);
      assert.equal(asked.code, 0, asked.err);
      const code = await Deno.readTextFile(`${dir}/code`);
      assert.match(code, /^\d{6}$/);
      assert.equal(asked.out.includes(code), false, "the code is never printed");
      const summary = JSON.parse(await Deno.readTextFile(`${dir}/stdin`));
      assert.equal(summary.count, 2);
      assert.deepEqual(summary.totals, { EUR: "2400" });
      assert.equal(summary.requester, "ann");

      const self = await jobs(["bulk", "confirm", preview.manifest, "--code", code, "--as", "ann"]);
      assert.equal(self.code, 1);
      assert.match(self.err, /\[not-approver\]|\[self-approval\]/);
      const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, "0");
      const bad = await jobs(["bulk", "confirm", preview.manifest, "--code", wrong, "--as", "bob"]);
      assert.equal(bad.code, 1);
      assert.match(bad.err, /4 tries left \[wrong-code\]/);

      const done = await json(["bulk", "confirm", preview.manifest, "--code", code, "--as", "bob"]);
      assert.equal(done.request.state, "confirmed");
      assert.equal(done.request.confirmer, "bob");
      assert.deepEqual(done.outcomes.map((o: { key: string; ok: boolean }) => [o.key, o.ok]), [
        ["p1", true],
        ["p2", true],
      ]);
      assert.equal(JSON.stringify(done).includes(code), false);

      const again = await jobs([
        "bulk",
        "confirm",
        preview.manifest,
        "--code",
        code,
        "--as",
        "bob",
      ]);
      assert.equal(again.code, 1);
      assert.match(again.err, /\[used\]/);

      const left = await json(["work", "ls", "payouts"]);
      assert.deepEqual(left.items.map((i: { key: string }) => i.key), ["p3"]);
      await withStore(db, async (store) => {
        for (const o of done.outcomes as { key: string; jobId: number }[]) {
          const job = await store.jobGet({ id: o.jobId });
          assert.equal(job?.uniqueKey, `payouts/${o.key}/pay`);
        }
        const trail = await store.auditList({ target: `manifest:${preview.manifest}` });
        const preview0 = trail.find((r) => r.action === "bulk.preview");
        assert.equal(preview0?.actor, "ann");
        assert.deepEqual(
          (preview0?.details as Record<string, unknown>).door,
          "cli",
        );
        assert.equal((preview0?.details as Record<string, unknown>).osUser, "root");
      });
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("jobs bulk request refuses what is not a manifest, and one never previewed", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await withFiles(schedules(dir), async ({ db, config }) => {
      await addPerson(db, "ann", "operator");
      const jobs = (args: string[]) =>
        runJobs([...args, "--db", db, "--config", config], { now: NOW, env: ENV, osUser: "root" });
      const shape = await jobs(["bulk", "request", "abc", "--as", "ann"]);
      assert.equal(shape.code, 2);
      assert.match(shape.err, /is not a manifest/);
      const none = await jobs(["bulk", "request", "a".repeat(64), "--as", "ann"]);
      assert.equal(none.code, 1);
      assert.match(none.err, /\[work-bulk-unpreviewed\]/);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
