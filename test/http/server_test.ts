/**
 * The daemon's HTTP endpoint on a real port (127.0.0.1:0) over a temp
 * SQLite store: health, readiness, the Prometheus page, and the token.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { escapeLabelValue, renderMetrics } from "../../src/http/metrics.ts";
import { type HttpServerOptions, startHttpServer } from "../../src/http/server.ts";
import { waitUntil } from "../../src/testing.ts";
import type { Logger } from "../../src/kernel/logger.ts";
import { insertJob, tempStore } from "../support/stores.ts";
import { parseProm, value } from "./prom.ts";

const TOKEN = "s3cret-token-value";

function logs(): { logger: Logger; events: { event: string; fields: Record<string, unknown> }[] } {
  const events: { event: string; fields: Record<string, unknown> }[] = [];
  return { logger: (event, fields) => events.push({ event, fields }), events };
}

async function get(
  addr: { hostname: string; port: number },
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; headers: Headers }> {
  const response = await fetch(`http://${addr.hostname}:${addr.port}${path}`, { headers });
  return { status: response.status, body: await response.text(), headers: response.headers };
}

function options(
  store: HttpServerOptions["store"],
  extra: Partial<HttpServerOptions> = {},
): HttpServerOptions {
  return { store, listen: "127.0.0.1:0", logger: () => {}, clock: new FakeClock(), ...extra };
}

/** `store` with a `jobsCount` that hangs until the test calls `fail` (null until it is called). */
function hangingCount(store: HttpServerOptions["store"]): {
  store: HttpServerOptions["store"];
  fail: ((error: Error) => void) | null;
} {
  const hung: { store: HttpServerOptions["store"]; fail: ((error: Error) => void) | null } = {
    store,
    fail: null,
  };
  hung.store = new Proxy(store, {
    get(target, key, receiver) {
      if (key !== "jobsCount") return Reflect.get(target, key, receiver);
      return () => new Promise((_, reject) => (hung.fail = reject));
    },
  });
  return hung;
}

Deno.test("startHttpServer() on port 0 listens on a free port and logs it", async () => {
  await using t = await tempStore();
  const { logger, events } = logs();
  const server = await startHttpServer(options(t.store, { logger }));
  try {
    assert.ok(server.addr && server.addr.port > 0);
    const listening = events.find((e) => e.event === "http.listening");
    assert.equal(listening?.fields.port, server.addr.port);
  } finally {
    await server.close();
  }
});

Deno.test("/healthz answers 200 ok and unknown paths 404", async () => {
  await using t = await tempStore();
  const server = await startHttpServer(options(t.store));
  try {
    const health = await get(server.addr!, "/healthz");
    assert.equal(health.status, 200);
    assert.equal(health.body.trim(), "ok");
    assert.equal(health.headers.get("access-control-allow-origin"), null);
    assert.equal((await get(server.addr!, "/nope")).status, 404);
  } finally {
    await server.close();
  }
});

Deno.test("/readyz answers 200 on a migrated store and 503 with a reason once it is closed", async () => {
  await using t = await tempStore();
  const server = await startHttpServer(options(t.store));
  try {
    assert.equal((await get(server.addr!, "/readyz")).status, 200);
    await t.store.close();
    const ready = await get(server.addr!, "/readyz");
    assert.equal(ready.status, 503);
    assert.match(ready.body, /^store unreachable: .+\n$/);
    assert.equal((await get(server.addr!, "/healthz")).status, 200);
  } finally {
    await server.close();
  }
});

Deno.test("/readyz past its deadline answers 503, and the store's late failure is not left unhandled", async () => {
  await using t = await tempStore();
  const clock = new FakeClock();
  // A store whose count hangs until the test fails it, as a PostgreSQL read
  // does while its session is being killed and the pool reconnects.
  const hung = hangingCount(t.store);
  const store = hung.store;
  const server = await startHttpServer(options(store, { clock, readyTimeoutMs: 2000 }));
  try {
    const pending = get(server.addr!, "/readyz");
    await waitUntil("the readiness read started", () => hung.fail !== null);
    clock.advance(2000);
    const ready = await pending;
    assert.equal(ready.status, 503);
    assert.equal(ready.body, "store did not answer within 2000 ms\n");
    // Failing after the answer was sent: without a handler this is an
    // unhandled rejection, which ends a daemon (and fails this test).
    hung.fail!(new Error("terminating connection due to administrator command"));
    await new Promise((resolve) => setTimeout(resolve, 0));
  } finally {
    await server.close();
  }
});

Deno.test("/readyz's own deadline is under a second: a one-second prober reads its 503", async () => {
  await using t = await tempStore();
  const clock = new FakeClock();
  const hung = hangingCount(t.store);
  const server = await startHttpServer(options(hung.store, { clock }));
  try {
    const pending = get(server.addr!, "/readyz");
    await waitUntil("the readiness read started", () => hung.fail !== null);
    clock.advance(999);
    let answered: Awaited<typeof pending> | null = null;
    pending.then((response) => (answered = response));
    const ready = await waitUntil("/readyz answered 999 ms into a hung read", () => answered);
    assert.equal(ready.status, 503);
    assert.match(ready.body, /^store did not answer within \d+ ms\n$/);
  } finally {
    // Settles a read still hanging, so the server's close does not wait for it.
    hung.fail?.(new Error("gone"));
    await server.close();
  }
});

Deno.test("/readyz answers 503 at once while the read of a probe past its deadline still hangs", async () => {
  await using t = await tempStore();
  const clock = new FakeClock();
  let hung: { reject: (error: Error) => void } | null = null;
  let reads = 0;
  // The first count hangs (a store that stopped answering); later ones answer.
  const store = new Proxy(t.store, {
    get(target, key, receiver) {
      if (key !== "jobsCount") return Reflect.get(target, key, receiver);
      return (params: Parameters<typeof target.jobsCount>[0]) => {
        reads++;
        if (hung !== null || reads > 1) return target.jobsCount(params);
        return new Promise((_, reject) => (hung = { reject }));
      };
    },
  });
  const server = await startHttpServer(options(store, { clock, readyTimeoutMs: 500 }));
  try {
    const first = get(server.addr!, "/readyz");
    await waitUntil("the readiness read started", () => hung !== null);
    clock.advance(500);
    assert.equal((await first).status, 503);
    assert.equal((await first).body, "store did not answer within 500 ms\n");
    // The clock stands still: only an answer that waits for nothing comes.
    clock.advance(250);
    const second = await answered(get(server.addr!, "/readyz"), "a second /readyz");
    assert.equal(second.status, 503);
    assert.equal(
      second.body,
      "store did not answer: a read sent 750 ms ago is still waiting\n",
    );
    assert.equal(reads, 1, "no second read queued behind the hung one");
    // The hung read fails at last: the next probe reads again, and the store answers.
    hung!.reject(new Error("write CONNECT_TIMEOUT 127.0.0.1:5432"));
    const ready = await waitUntil("/readyz reads again", async () => {
      const answer = await answered(get(server.addr!, "/readyz"), "/readyz");
      return answer.status === 200 ? answer : null;
    });
    assert.equal(ready.body, "ready\n");
  } finally {
    await server.close();
  }
});

/** `promise`, or a failure naming `what` after 10 s of real time (an answer that never comes). */
async function answered<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} got no answer within 10 s`)), 10_000);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("/readyz answers 503 with the reason while the daemon is degraded, /healthz stays 200", async () => {
  await using t = await tempStore();
  let reason: string | null = "store calls failing (heartbeat: database is locked)";
  const server = await startHttpServer(options(t.store, { degraded: () => reason }));
  try {
    const degraded = await get(server.addr!, "/readyz");
    assert.equal(degraded.status, 503);
    assert.equal(degraded.body, "degraded: store calls failing (heartbeat: database is locked)\n");
    assert.equal((await get(server.addr!, "/healthz")).status, 200);
    reason = null;
    assert.equal((await get(server.addr!, "/readyz")).status, 200);
  } finally {
    await server.close();
  }
});

Deno.test("/metrics is Prometheus text with the job counts, queues, nodes and schedules", async () => {
  await using t = await tempStore();
  const now = Date.UTC(2026, 0, 1);
  await insertJob(t.store, { queue: "default" });
  await insertJob(t.store, { queue: "default" });
  await insertJob(t.store, { queue: "default", state: "completed", completedAt: now });
  await insertJob(t.store, {
    queue: "mail",
    state: "executing",
    attempt: 1,
    attemptedBy: "n1",
    attemptedAt: now,
    leaseExpiresAt: now + 60_000,
    args: { password: "hunter2" },
  });
  await t.store.queuePause({ name: "mail", paused: true, now });
  await t.store.nodeBeat({ node: "n1", queues: { mail: 2 }, now });
  await t.store.schedulesSync({
    schedules: [{ id: "nightly", hash: "h1", tenant: null }, {
      id: 'odd"id\\x',
      hash: "h2",
      tenant: null,
    }],
    now,
  });
  t.store.db.prepare(`UPDATE schedules SET misfires = 3, last_planned_for = ? WHERE id = ?`)
    .run(now, "nightly");

  const server = await startHttpServer(options(t.store, {
    metrics: () => ({
      completions: [{ labels: { queue: "default", worker: "noop" }, value: 7 }],
      failures: [{ labels: { queue: "default", worker: "noop" }, value: 2 }],
      durations: [{
        labels: { queue: "default", worker: "noop" },
        buckets: [{ le: 0.1, count: 4 }, { le: 1, count: 8 }],
        sum: 3.5,
        count: 9,
      }],
    }),
  }));
  try {
    const response = await get(server.addr!, "/metrics");
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
    const samples = parseProm(response.body);
    assert.equal(value(samples, "jobs_jobs", { queue: "default", state: "available" }), 2);
    assert.equal(value(samples, "jobs_jobs", { queue: "default", state: "completed" }), 1);
    assert.equal(value(samples, "jobs_jobs", { queue: "default", state: "executing" }), 0);
    assert.equal(value(samples, "jobs_jobs", { queue: "mail", state: "executing" }), 1);
    assert.equal(value(samples, "jobs_queue_paused", { queue: "mail" }), 1);
    assert.equal(value(samples, "jobs_nodes", {}), 1);
    assert.equal(value(samples, "jobs_schedule_misfires_total", { schedule: "nightly" }), 3);
    assert.equal(value(samples, "jobs_schedule_misfires_total", { schedule: 'odd"id\\x' }), 0);
    assert.equal(
      value(samples, "jobs_schedule_last_planned_seconds", { schedule: "nightly" }),
      now / 1000,
    );
    const labels = { queue: "default", worker: "noop" };
    assert.equal(value(samples, "jobs_completions_total", labels), 7);
    assert.equal(value(samples, "jobs_failures_total", labels), 2);
    assert.equal(value(samples, "jobs_attempt_duration_seconds_bucket", { ...labels, le: "1" }), 8);
    assert.equal(
      value(samples, "jobs_attempt_duration_seconds_bucket", { ...labels, le: "+Inf" }),
      9,
    );
    assert.equal(value(samples, "jobs_attempt_duration_seconds_count", labels), 9);
    assert.ok(!response.body.includes("hunter2"), "job args never reach the page");
  } finally {
    await server.close();
  }
});

Deno.test("escapeLabelValue() escapes backslash, double quote and line feed", () => {
  assert.equal(escapeLabelValue('a\\b"c\nd'), 'a\\\\b\\"c\\nd');
});

Deno.test("renderMetrics() keeps only queue and worker labels from a snapshot", async () => {
  await using t = await tempStore();
  const page = await renderMetrics(t.store, {
    completions: [{
      labels: { queue: "q", worker: "w", error: "boom" } as never,
      value: 1,
    }],
  });
  assert.match(page, /^jobs_completions_total\{queue="q",worker="w"\} 1$/m);
  assert.ok(!page.includes("boom"));
  parseProm(page);
});

Deno.test("listen on 0.0.0.0 without a token is refused", async () => {
  await using t = await tempStore();
  await assert.rejects(
    () => startHttpServer(options(t.store, { listen: "0.0.0.0:0" })),
    /"0\.0\.0\.0:0" \(not loopback\) requires a token/,
  );
  await assert.rejects(
    () => startHttpServer(options(t.store, { listen: "nonsense" })),
    /listen address "nonsense" is not host:port or off/,
  );
});

Deno.test("with a token, wrong or missing tokens get 401, the right one 200, /healthz none", async () => {
  await using t = await tempStore();
  const { logger, events } = logs();
  const server = await startHttpServer(options(t.store, { token: TOKEN, logger }));
  try {
    const addr = server.addr!;
    assert.equal((await get(addr, "/healthz")).status, 200);
    assert.equal((await get(addr, "/readyz")).status, 401);
    assert.equal((await get(addr, "/metrics")).status, 401);
    for (
      const wrong of ["Bearer nope", `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, TOKEN]
    ) {
      assert.equal((await get(addr, "/readyz", { authorization: wrong })).status, 401, wrong);
    }
    const ok = { authorization: `Bearer ${TOKEN}` };
    assert.equal((await get(addr, "/readyz", ok)).status, 200);
    assert.equal((await get(addr, "/metrics", ok)).status, 200);
    assert.ok(!JSON.stringify(events).includes(TOKEN), "the token never reaches the logs");
  } finally {
    await server.close();
  }
});

Deno.test("with a token, a non-loopback address is allowed", async () => {
  await using t = await tempStore();
  const server = await startHttpServer(
    options(t.store, { listen: "0.0.0.0:0", token: TOKEN }),
  );
  try {
    assert.ok(server.addr && server.addr.port > 0);
    const addr = { hostname: "127.0.0.1", port: server.addr.port };
    assert.equal((await get(addr, "/metrics")).status, 401);
  } finally {
    await server.close();
  }
});

Deno.test("listen off starts nothing and returns addr null", async () => {
  await using t = await tempStore();
  const server = await startHttpServer(options(t.store, { listen: "off" }));
  assert.equal(server.addr, null);
  await server.close();
});
