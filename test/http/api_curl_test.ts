/**
 * `/api/v1` from a program that is not TypeScript: `curl` against the
 * daemon's HTTP endpoint on a real port enqueues a job and shows it with a
 * token of the store, and with the old `--token`.
 */

import assert from "node:assert/strict";
import { createToken } from "../../src/admin/tokens.ts";
import { SystemClock } from "../../src/clock.ts";
import { startHttpServer } from "../../src/http/server.ts";
import { tempStore } from "../support/stores.ts";

async function curl(...args: string[]): Promise<{ status: number; body: string }> {
  const out = await new Deno.Command("curl", {
    args: ["-sS", "-w", "\n%{http_code}", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const at = text.lastIndexOf("\n");
  return { status: Number(text.slice(at + 1)), body: text.slice(0, at) };
}

Deno.test("curl enqueues a job and shows it through /api/v1, with a store token and with --token", async () => {
  await using t = await tempStore();
  const clock = new SystemClock();
  const server = await startHttpServer({
    store: t.store,
    listen: "127.0.0.1:0",
    token: "old-single-token",
    logger: () => {},
    clock,
  });
  try {
    const { secret } = await createToken(t.store, {
      name: "shop",
      roles: ["operator"],
      tenant: "acme",
    }, {
      actor: "root",
      reason: null,
      now: clock.now(),
    }, "host");
    const base = `http://127.0.0.1:${server.addr!.port}/api/v1`;
    const made = await curl(
      "-X",
      "POST",
      "-H",
      `Authorization: Bearer ${secret}`,
      "-H",
      "Content-Type: application/json",
      "--data",
      '{"worker":"send_receipt","args":{"order":42},"queue":"mail"}',
      `${base}/jobs`,
    );
    assert.equal(made.status, 201, made.body);
    const { id } = JSON.parse(made.body);
    const shown = await curl("-H", `Authorization: Bearer ${secret}`, `${base}/jobs/${id}`);
    assert.equal(shown.status, 200, shown.body);
    const detail = JSON.parse(shown.body);
    assert.equal(detail.job.worker, "send_receipt");
    assert.equal(detail.job.tenant, "acme");
    assert.deepEqual(detail.job.args, { order: 42 });
    assert.equal(detail.audit[0].actor, "token:shop");
    const old = await curl(
      "-H",
      "Authorization: Bearer old-single-token",
      `${base}/jobs?queue=mail`,
    );
    assert.equal(old.status, 200, old.body);
    assert.deepEqual(JSON.parse(old.body).jobs.map((j: { id: number }) => j.id), [id]);
    const none = await curl(`${base}/jobs`);
    assert.equal(none.status, 401);
    assert.equal(JSON.parse(none.body).error.code, "unauthorized");
    // The old routes still answer to the old token only.
    assert.equal(
      (await curl(
        "-H",
        `Authorization: Bearer ${secret}`,
        `http://127.0.0.1:${server.addr!.port}/readyz`,
      )).status,
      401,
    );
  } finally {
    await server.close();
  }
});
