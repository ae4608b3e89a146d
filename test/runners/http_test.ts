import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import {
  DEFAULT_HTTP_TIMEOUT_MS,
  httpWorker,
  type HttpWorkerOptions,
  retryAfterMs,
} from "../../src/runners/http.ts";
import { type HttpRun } from "../../src/kernel/runs.ts";
import { drainQueue, performJob, waitUntil } from "../../src/testing.ts";
import { tempJobs } from "../support/stores.ts";
import { CHARGE_FEE, performStep } from "./steps.ts";

/** What the server saw of a request, copied while it was open. */
interface Seen {
  method: string;
  url: URL;
  headers: Headers;
}

/**
 * A local server on a free port, shut down by `await using`. `closing`
 * settles when the test ends, so a handler that waits for an abort cannot
 * hold the shutdown for ever.
 */
function serve(
  handler: (request: Request, closing: Promise<void>) => Response | Promise<Response>,
) {
  const requests: Seen[] = [];
  const closing = Promise.withResolvers<void>();
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, (request) => {
    requests.push({
      method: request.method,
      url: new URL(request.url),
      headers: new Headers(request.headers),
    });
    return handler(request, closing.promise);
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    requests,
    async [Symbol.asyncDispose]() {
      closing.resolve();
      await server.shutdown();
    },
  };
}

/** Settles when the client goes away before the response. */
function aborted(request: Request): Promise<void> {
  return new Promise((resolve) => request.signal.addEventListener("abort", () => resolve()));
}

function worker(options: Partial<HttpWorkerOptions> = {}) {
  return httpWorker({ env: () => undefined, clock: new FakeClock(), ...options });
}

function get(url: string, extra: Partial<HttpRun> = {}): HttpRun {
  return { kind: "http", method: "GET", url, ...extra };
}

function post(url: string, extra: Partial<HttpRun> = {}): HttpRun {
  return { kind: "http", method: "POST", url, body: "{}", ...extra };
}

Deno.test("sends Idempotency-Key, X-Jobs-Fence and X-Jobs-Attempt, over the run's own", async () => {
  let body = "";
  await using server = serve(async (request) => {
    body = await request.text();
    return new Response("ok");
  });
  const result = await performJob(
    worker(),
    {
      kind: "http",
      method: "post",
      url: `${server.url}/hook`,
      headers: { "idempotency-key": "mine", "X-Jobs-Fence": "999", "Content-Type": "text/csv" },
      body: "a,b\n1,2",
    },
    { occurrence: "nightly@2026-01-01T00:00:00.000Z", attempt: 3 },
  );
  assert.equal(result.outcome, "completed");
  const [request] = server.requests;
  assert.equal(request?.method, "POST");
  assert.equal(request?.url.pathname, "/hook");
  assert.equal(body, "a,b\n1,2");
  assert.equal(request?.headers.get("Idempotency-Key"), "nightly@2026-01-01T00:00:00.000Z");
  assert.equal(request?.headers.get("X-Jobs-Fence"), "3");
  assert.equal(request?.headers.get("X-Jobs-Attempt"), "3");
  assert.equal(request?.headers.get("Content-Type"), "text/csv");
});

Deno.test("the Idempotency-Key of a job without occurrence is job:<id>", async () => {
  await using server = serve(() => new Response("ok"));
  const result = await performJob(worker(), get(server.url));
  assert.equal(result.outcome, "completed");
  assert.equal(server.requests[0]?.headers.get("Idempotency-Key"), "job:1");
  assert.equal(server.requests[0]?.headers.get("X-Jobs-Fence"), "1");
});

Deno.test("${NAME} in the URL and headers is filled from env, and masked where echoed", async () => {
  // The server echoes the header it got: the excerpt must not keep it.
  await using server = serve((request) =>
    new Response(`you sent ${request.headers.get("X-Api-Key")}`)
  );
  const env: Record<string, string> = { API_KEY: "k-93f1c2a8", HOOK: "reports" };
  const result = await performJob(
    worker({ env: (name) => env[name] }),
    get(`${server.url}/\${HOOK}`, { headers: { "X-Api-Key": "${API_KEY}" } }),
  );
  assert.equal(result.outcome, "completed");
  assert.equal(server.requests[0]?.headers.get("X-Api-Key"), "k-93f1c2a8");
  assert.equal(server.requests[0]?.url.pathname, "/reports");
  assert.equal(result.output, "HTTP 200\nyou sent [REDACTED]");
});

Deno.test("a missing ${NAME} discards the job naming the variable, and sends nothing", async () => {
  await using server = serve(() => new Response("ok"));
  const result = await performJob(
    worker({ env: (name) => (name === "HOST" ? "127.0.0.1" : undefined) }),
    get(`${server.url}/x`, { headers: { Authorization: "Bearer ${API_TOKEN}" } }),
  );
  assert.equal(result.outcome, "discarded");
  assert.equal(
    result.error,
    '"Authorization" header: environment variable "API_TOKEN" is not set',
  );
  assert.equal(server.requests.length, 0);
});

Deno.test("200 completes and keeps the status and body as the attempt's output", async () => {
  await using server = serve(() => new Response("report queued"));
  const http = worker();
  await using t = await tempJobs([http]);
  const { id } = await t.jobs.enqueue(http, get(`${server.url}/run`));
  const drained = await drainQueue(t.jobs, "default");
  assert.equal(drained.completed, 1);
  assert.equal((await t.store.jobGet({ id }))?.state, "completed");
  const [attempt] = await t.store.attemptsList({ jobId: id });
  assert.equal(attempt?.output, "HTTP 200\nreport queued");
});

Deno.test("429 with Retry-After: 7 snoozes the job 7 s", async () => {
  await using server = serve(() =>
    new Response("slow down", { status: 429, headers: { "Retry-After": "7" } })
  );
  const clock = new FakeClock();
  const http = worker({ clock });
  await using t = await tempJobs([http], { clock });
  const { id } = await t.jobs.enqueue("jobs.http", get(server.url));
  const drained = await drainQueue(t.jobs, "default");
  assert.equal(drained.snoozed, 1);
  const job = await t.store.jobGet({ id });
  assert.equal(job?.state, "scheduled");
  assert.equal(job?.scheduledAt, clock.now() + 7000);
  const [attempt] = await t.store.attemptsList({ jobId: id });
  assert.equal(attempt?.output, "HTTP 429\nslow down");
});

Deno.test("503 with an HTTP-date Retry-After snoozes until that date on the injected clock", async () => {
  const clock = new FakeClock(Date.UTC(2026, 2, 8, 12, 0, 0));
  const retryAt = new Date(clock.now() + 90_000).toUTCString(); // "Sun, 08 Mar 2026 12:01:30 GMT"
  await using server = serve(() =>
    new Response("maintenance", { status: 503, headers: { "Retry-After": retryAt } })
  );
  const result = await performJob(worker({ clock }), get(server.url), { clock });
  assert.equal(result.outcome, "snoozed");
  assert.equal(result.outcome === "snoozed" && result.until, clock.now() + 90_000);
});

Deno.test("503 without Retry-After is retryable, stored as one line naming the request and status", async () => {
  await using server = serve(() => new Response("down", { status: 503 }));
  const result = await performJob(worker(), post(`${server.url}/status`));
  assert.equal(result.outcome, "retryable");
  // The whole error: no stack of the runner's own frames below it.
  assert.equal(result.error, `POST ${server.url}/status answered 503`);
});

Deno.test("retryAfterMs() reads delta-seconds and HTTP dates, and refuses the rest", () => {
  const now = Date.UTC(2026, 0, 1);
  assert.equal(retryAfterMs("7", now), 7000);
  assert.equal(retryAfterMs(" 0 ", now), 0);
  assert.equal(retryAfterMs("Thu, 01 Jan 2026 00:02:00 GMT", now), 120_000);
  assert.equal(retryAfterMs("Wed, 31 Dec 2025 23:00:00 GMT", now), 0, "a past date waits 0");
  assert.equal(retryAfterMs(null, now), null);
  assert.equal(retryAfterMs("-5", now), null);
  assert.equal(retryAfterMs("1.5", now), null);
  assert.equal(retryAfterMs("soon", now), null);
});

Deno.test("404 discards the job with the URL redacted", async () => {
  await using server = serve(() => new Response("no such report", { status: 404 }));
  const env: Record<string, string> = { SIG: "abcdef123456" };
  const result = await performJob(
    worker({ env: (name) => env[name] }),
    get(`${server.url}/reports/9?access_token=t0ps3cret&sig=\${SIG}&page=2`),
  );
  assert.equal(result.outcome, "discarded");
  assert.equal(
    result.error,
    `GET ${server.url}/reports/9?access_token=[REDACTED]&sig=[REDACTED]&page=2 answered 404`,
  );
  assert.equal(result.output, "HTTP 404\nno such report");
  assert.equal(server.requests[0]?.url.searchParams.get("sig"), "abcdef123456");
});

Deno.test("500 is retryable, and the last attempt discards", async () => {
  await using server = serve(() => new Response("boom", { status: 500 }));
  const http = worker();
  const retry = await performJob(http, get(server.url));
  assert.equal(retry.outcome, "retryable");
  assert.equal(retry.error, `GET ${server.url} answered 500`);
  assert.equal(retry.output, "HTTP 500\nboom");
  const last = await performJob(http, get(server.url), { attempt: 20, maxAttempts: 20 });
  assert.equal(last.outcome, "discarded");
});

Deno.test("connection refused is retryable, naming the URL as written", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close();
  const env: Record<string, string> = { KEY: "zz-secret-zz" };
  const result = await performJob(
    worker({ env: (name) => env[name] }),
    get(`http://127.0.0.1:${port}/hook?k=\${KEY}`),
  );
  assert.equal(result.outcome, "retryable");
  assert.ok(
    result.error!.startsWith(`GET http://127.0.0.1:${port}/hook?k=\${KEY} failed: `),
    result.error,
  );
  assert.ok(!result.error!.includes("zz-secret-zz"), result.error);
  assert.doesNotMatch(result.error!, /^\s+at /m, "no stack frames");
});

Deno.test("a timeout on the injected clock aborts the request and is retryable", async () => {
  let seenAbort = false;
  await using server = serve(async (request, closing) => {
    seenAbort = await Promise.race([closing.then(() => false), aborted(request).then(() => true)]);
    return new Response("too late");
  });
  const clock = new FakeClock();
  const running = performJob(worker({ clock }), get(`${server.url}/slow`), { clock });
  await waitUntil("the request reached the server", () => server.requests.length === 1);
  clock.advance(DEFAULT_HTTP_TIMEOUT_MS - 1);
  assert.equal(seenAbort, false);
  clock.advance(1);
  const result = await running;
  assert.equal(result.outcome, "retryable");
  assert.equal(result.error, `GET ${server.url}/slow timed out after 30000 ms`);
  await waitUntil("the server saw the request aborted", () => seenAbort);
});

Deno.test("the timeout is the run's, else the schedule's from meta, else 30 s", async () => {
  await using server = serve(async (request, closing) => {
    await Promise.race([closing, aborted(request)]);
    return new Response("");
  });
  const clock = new FakeClock();
  const http = worker({ clock });
  await using t = await tempJobs([http], { clock });
  const cases: [run: HttpRun, meta: Record<string, unknown>, ms: number][] = [
    [get(server.url, { timeoutMs: 2000 }), { timeoutMs: 5000 }, 2000],
    [get(server.url), { timeoutMs: 5000 }, 5000],
    [get(server.url), {}, 30_000],
  ];
  for (const [i, [run, meta, ms]] of cases.entries()) {
    // One attempt: a retry of an earlier case must not come due as the clock moves.
    const { id } = await t.jobs.enqueue(http, run, { meta, maxAttempts: 1 });
    const draining = drainQueue(t.jobs, "default");
    await waitUntil("the request reached the server", () => server.requests.length === i + 1);
    clock.advance(ms);
    assert.equal((await draining).discarded, 1);
    const job = await t.store.jobGet({ id });
    assert.match(job!.errors[0]!.error, new RegExp(`timed out after ${ms} ms`));
  }
});

Deno.test("an endless body is cut after excerptBytes and its stream cancelled", async () => {
  let cancelled = false;
  let sent = 0;
  await using server = serve(() =>
    new Response(
      new ReadableStream<Uint8Array>({
        pull(controller) {
          sent += 16 * 1024;
          controller.enqueue(new TextEncoder().encode("x".repeat(16 * 1024)));
        },
        cancel() {
          cancelled = true;
        },
      }),
    )
  );
  const result = await performJob(worker({ excerptBytes: 100 }), get(server.url));
  assert.equal(result.outcome, "completed");
  assert.equal(result.output, `HTTP 200\n${"x".repeat(100)}\n… [cut after 100 bytes]`);
  await waitUntil("the server saw the body cancelled", () => cancelled);
  assert.ok(sent < 64 * 1024 * 1024, `sent ${sent} bytes`);
});

Deno.test("the default excerpt is 4 KiB and never splits a character", async () => {
  await using server = serve(() => new Response("a" + "é".repeat(5000)));
  const result = await performJob(worker(), get(server.url));
  const excerpt = result.output!.split("\n")[1]!;
  assert.equal(excerpt, "a" + "é".repeat(2047));
  assert.ok(result.output!.endsWith("\n… [cut after 4096 bytes]"));
});

Deno.test("args that are not an http run are discarded at once", async () => {
  const http = worker();
  const cases: [args: unknown, error: RegExp][] = [
    [{ kind: "http", method: "GET" }, /url must be a non-empty string/],
    [{ kind: "command", method: "GET", url: "http://x" }, /kind must be "http"/],
    [
      { kind: "http", method: "GET", url: "http://x", body: "hi" },
      /GET request cannot have a body/,
    ],
    [{ kind: "http", method: "GET", url: "http://x", headers: { A: 1 } }, /header "A" must be/],
    [
      { kind: "http", method: "GET", url: "http://x", timeoutMs: -1 },
      /timeoutMs must be a positive number/,
    ],
    [{ kind: "http", method: "GET", url: "http://x", retries: 3 }, /unknown field "retries"/],
  ];
  for (const [args, error] of cases) {
    const result = await performJob(http, args as HttpRun);
    assert.equal(result.outcome, "discarded", JSON.stringify(args));
    assert.match(result.error!, /^invalid args: /);
    assert.match(result.error!, error);
  }
});

Deno.test("a URL that is not http(s) after expansion is discarded", async () => {
  const env: Record<string, string> = { BASE: "ftp://files.example.com" };
  const result = await performJob(worker({ env: (name) => env[name] }), get("${BASE}/x"));
  assert.equal(result.outcome, "discarded");
  assert.equal(result.error, 'url ${BASE}/x must be http or https, got "ftp:"');
});

// ---------------------------------------------------------------------------
// Workflow steps

function json(value: unknown, init: ResponseInit = {}): Response {
  return new Response(JSON.stringify(value), {
    ...init,
    headers: { "Content-Type": "application/json; charset=utf-8", ...init.headers },
  });
}

Deno.test("an http step sends Jobs-Workflow-Run, Jobs-Step, Jobs-Use-Case and its step document, and its JSON answer is the result", async () => {
  let body = "";
  await using server = serve(async (request) => {
    body = await request.text();
    return json({ sent: "n-1" }, { status: 201 });
  });
  const result = await performStep(
    worker(),
    { kind: "http", method: "POST", url: `${server.url}/v1/send` },
    { cursor: { page: 2 } },
  );
  assert.equal(result.outcome, "completed");
  assert.equal(result.value, '{"sent":"n-1"}');
  assert.equal(result.workflow, 12);
  const [seen] = server.requests;
  assert.equal(seen!.headers.get("jobs-workflow-run"), "12");
  assert.equal(seen!.headers.get("jobs-step"), "charge-fee");
  assert.equal(seen!.headers.get("jobs-use-case"), "use-case/billing.charge-fee");
  assert.equal(seen!.headers.get("idempotency-key"), "12/charge-fee");
  assert.equal(seen!.headers.get("content-type"), "application/json");
  assert.deepEqual(JSON.parse(body), {
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
    cursor: { page: 2 },
  });
});

Deno.test("an http step keeps the run's own body, sends none with GET, and omits Jobs-Use-Case when it has none", async () => {
  const bodies: string[] = [];
  await using server = serve(async (request) => {
    bodies.push(await request.text());
    return new Response("ok");
  });
  const own = await performStep(
    worker(),
    post(server.url, { body: "a,b", headers: { "Content-Type": "text/csv" } }),
  );
  assert.equal(own.outcome, "completed");
  const plain = await performStep(worker(), get(server.url), { useCase: null });
  assert.equal(plain.outcome, "completed");
  assert.deepEqual(bodies, ["a,b", ""]);
  assert.equal(server.requests[0]!.headers.get("content-type"), "text/csv");
  assert.equal(server.requests[1]!.headers.get("jobs-use-case"), null);
  assert.equal(server.requests[1]!.headers.get("jobs-step"), "charge-fee");
});

Deno.test("an http step's document keeps the run's Content-Type when it sets one", async () => {
  await using server = serve(() => new Response("ok"));
  await performStep(
    worker(),
    {
      kind: "http",
      method: "PUT",
      url: server.url,
      headers: { "content-type": "application/vnd.x+json" },
    },
  );
  assert.equal(server.requests[0]!.headers.get("content-type"), "application/vnd.x+json");
});

Deno.test("a step's 2xx that is not JSON completes with no result; a JSON one of a plain job keeps none", async () => {
  await using server = serve((request) =>
    new URL(request.url).pathname === "/text" ? new Response('{"a":1}') : json({ a: 1 })
  );
  const text = await performStep(worker(), get(`${server.url}/text`));
  assert.equal(text.outcome, "completed");
  assert.equal(text.value, undefined);
  const plain = await performJob(worker(), get(`${server.url}/json`));
  assert.equal(plain.outcome, "completed");
  assert.equal(plain.value, undefined);
  const problem = await performStep(
    worker(),
    get(`${server.url}/json`),
  );
  assert.equal(problem.value, '{"a":1}');
});

Deno.test("a step's JSON answer is read whole past the excerpt, and the output stays an excerpt", async () => {
  const list = Array.from({ length: 2000 }, (_, i) => i);
  await using server = serve(() => json(list));
  const result = await performStep(worker({ excerptBytes: 50 }), get(server.url));
  assert.equal(result.outcome, "completed");
  assert.deepEqual(JSON.parse(result.value!), list);
  assert.equal(
    result.output,
    `HTTP 200\n${JSON.stringify(list).slice(0, 50)}\n… [cut after 50 bytes]`,
  );
});

Deno.test("a step's JSON answer that does not parse, or is over resultBytes, discards the step naming the request", async () => {
  await using server = serve((request) =>
    new URL(request.url).pathname === "/broken"
      ? new Response("{not json", { headers: { "Content-Type": "application/json" } })
      : json("x".repeat(500))
  );
  const broken = await performStep(worker(), get(`${server.url}/broken`));
  assert.equal(broken.outcome, "discarded");
  assert.match(
    broken.error!,
    new RegExp(`^GET ${server.url}/broken answered 200 with a body that is not JSON: `),
  );
  // Over the limit within the excerpt, and past both.
  for (const excerptBytes of [4096, 10]) {
    const big = await performStep(
      worker({ resultBytes: 100, excerptBytes }),
      get(`${server.url}/big`),
    );
    assert.equal(big.outcome, "discarded");
    assert.equal(big.error, `GET ${server.url}/big answered 200 with a JSON body over 100 bytes`);
  }
  const fits = await performStep(worker({ resultBytes: 502 }), get(`${server.url}/big`));
  assert.equal(fits.value, JSON.stringify("x".repeat(500)));
});

Deno.test("a step's JSON answer cut short by the timeout is retried, naming the request", async () => {
  const sentHead = Promise.withResolvers<void>();
  await using server = serve((_request, closing) =>
    new Response(
      new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(new TextEncoder().encode('{"items":[1,2,'));
          sentHead.resolve();
          await closing;
          controller.close();
        },
      }),
      { headers: { "Content-Type": "application/json" } },
    )
  );
  const clock = new FakeClock();
  let answered = false;
  const fetch: typeof globalThis.fetch = (input, init) =>
    globalThis.fetch(input, init).then((response) => {
      answered = true;
      return response;
    });
  const running = performStep(worker({ clock, fetch }), get(`${server.url}/slow`), { clock });
  await sentHead.promise;
  // The status is in before the timeout fires: what is cut is the body.
  await waitUntil("the status reached the runner", () => answered);
  clock.advance(DEFAULT_HTTP_TIMEOUT_MS);
  const result = await running;
  assert.equal(result.outcome, "retryable");
  assert.equal(
    result.error,
    `GET ${server.url}/slow answered 200 but its JSON body was cut short: timed out after 30000 ms`,
  );
});
