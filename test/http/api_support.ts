/**
 * What the `/api/v1` tests share: an app over one backend's fresh store on a
 * FakeClock, tokens minted as the command line mints them, and a request
 * helper that answers status and parsed JSON.
 */

import { enqueueJob } from "../../src/admin/jobs.ts";
import { createToken } from "../../src/admin/tokens.ts";
import { FakeClock } from "../../src/clock.ts";
import { apiApp, type ApiOptions } from "../../src/http/api/app.ts";
import type { Store } from "../../src/store/store.ts";
import assert from "node:assert/strict";
import { type Backend, newJob } from "../support/backends.ts";

/** The daemon's old single `--token` in these tests. */
export const INSTALL_TOKEN = "old-single-token-value";

/** An app over a fresh store of `backend`, closed with `await using`. */
export async function apiHarness(backend: Backend, extra: Partial<ApiOptions> = {}) {
  const clock = new FakeClock();
  const h = await backend.open(clock.now());
  const events: { event: string; fields: Record<string, unknown> }[] = [];
  const app = await apiApp({
    store: h.store,
    clock,
    logger: (event, fields) => events.push({ event, fields }),
    token: INSTALL_TOKEN,
    ...extra,
  });
  /** A token's secret with these roles and tenant. */
  const token = async (
    name: string,
    roles: string[],
    tenant: string | null = null,
    expiresInMs?: number,
  ) =>
    (await createToken(h.store, { name, roles, tenant, expiresInMs: expiresInMs ?? null }, {
      actor: "root",
      reason: null,
      now: clock.now(),
    }, "host")).secret;
  /** One request: status, headers and the body parsed as JSON (null when it is not). */
  const call = async (
    method: string,
    path: string,
    secret: string | null,
    body?: unknown,
    init: { headers?: Record<string, string>; remote?: string; raw?: BodyInit } = {},
  ) => {
    const headers: Record<string, string> = { ...init.headers };
    if (secret !== null) headers.authorization = `Bearer ${secret}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await app.fetch(
      new Request(`http://api.test${path}`, {
        method,
        headers,
        ...(init.raw !== undefined
          ? { body: init.raw }
          : body === undefined
          ? {}
          : { body: JSON.stringify(body) }),
      }),
      { remote: init.remote ?? "192.0.2.1" },
    );
    const text = await response.text();
    // deno-lint-ignore no-explicit-any -- the tests read whatever JSON came back
    let json: any = null;
    try {
      json = JSON.parse(text);
    } catch { /* not JSON */ }
    return { status: response.status, json, text, headers: response.headers };
  };
  return {
    app,
    clock,
    store: h.store as Store,
    events,
    token,
    call,
    [Symbol.asyncDispose]: () => h.close(),
  };
}

/** One job each of acme, globex and no tenant, enqueued as the command line does. */
export async function threeTenants(store: Store, now: number) {
  const who = { actor: "root", reason: null, now };
  const acme = await enqueueJob(store, "send", { to: "a@acme.test", password: "hunter2" }, {
    tenant: "acme",
    tags: ["mail"],
  }, who);
  const globex = await enqueueJob(store, "send", { to: "g@globex.test" }, {
    tenant: "globex",
  }, who);
  const none = await enqueueJob(store, "bill", {}, { queue: "money" }, who);
  return { acme: acme.id, globex: globex.id, none: none.id };
}

/**
 * A completed run of `pipeline` at `at` that dropped `drops` (reason,
 * key), each with its record kept, its job (and so the run) of `tenant`;
 * returns the drops' ids, newest first.
 */
export async function runWithDrops(
  store: Store,
  pipeline: string,
  at: number,
  drops: [string, string][],
  tenant: string | null = null,
): Promise<number[]> {
  await store.jobsInsert({
    jobs: [newJob({ queue: "setup", worker: "jobs.ingest", scheduledAt: at, tenant })],
    now: at,
  });
  const { jobs } = await store.jobsClaim({
    queue: "setup",
    node: "n1",
    limit: 1,
    now: at,
    leaseMs: 60_000,
  });
  const job = jobs[0]!;
  const run = await store.ingestRunOpen({
    pipeline,
    hash: "h1",
    jobId: job.id,
    fence: job.fence,
    trigger: "schedule",
    now: at,
  });
  assert.ok(run);
  const lease = { runId: run.id, jobId: job.id, fence: job.fence };
  const dropped: Record<string, number> = {};
  for (const [reason] of drops) dropped[reason] = (dropped[reason] ?? 0) + 1;
  assert.ok(
    await store.ingestChunkCommit({
      lease,
      pipeline,
      delta: { received: drops.length + 1, kept: 1, sunk: 1, failed: 0, dropped },
      pending: 0,
      cursor: "1",
      drops: drops.map(([reason, key]) => ({
        recordKey: key,
        reason,
        step: "dedupe",
        excerpt: `{"sku":"${key}"}`,
        record: `{"sku":"${key}"}`,
      })),
      failures: [],
      cleared: [],
      now: at,
    }),
  );
  assert.ok(
    await store.ingestRunFinish({ lease, state: "completed", error: null, pending: 0, now: at }),
  );
  return (await store.ingestDropsList({ pipeline, runId: run.id })).map((d) => d.id);
}
