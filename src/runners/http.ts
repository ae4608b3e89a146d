/**
 * The `jobs.http` runner: performs a schedule's `http` run and maps the
 * response to an outcome, as a pipeline of small steps: prepare the request
 * (fill `${NAME}` references, add the runner's headers), exchange it under a
 * timeout on the injected clock, keep a bounded excerpt of the response, and
 * map the status.
 *
 * | Response                                  | Outcome                          |
 * | ----------------------------------------- | -------------------------------- |
 * | 2xx                                       | completed                        |
 * | 429 or 503 with a valid `Retry-After`     | `{ snooze: ms }`                 |
 * | 429 or 503 without one                    | throw: retry with backoff        |
 * | other 4xx, 1xx and 3xx                    | `{ discard: "GET … answered 404" }` |
 * | other 5xx, network error, timeout         | throw: retry with backoff        |
 *
 * What it throws is an expected failure (`JobFailure`), stored as one line
 * and no stack: `POST https://host/path answered 503`, `GET … timed out
 * after 30000 ms`, `GET … failed: <the network error>`.
 *
 * A step of a workflow run (a job whose `ctx.workflow` is set) also sends
 * `Jobs-Workflow-Run` (the run's id), `Jobs-Step` (the step's id; for a
 * compensation, the step it undoes) and `Jobs-Use-Case` (the use case it
 * runs; absent when none), and its `Idempotency-Key` is the step's identity
 * (`<run>/<step>`, `<run>/<step>#<item>`, `<run>/<step>:compensate`). When
 * the run sets no body and the method takes one (any but GET and HEAD), the
 * body is the step document (step_document.ts: `{ run, workflow, step,
 * kind, use_case, input, results, index, item, compensates, cursor }`) as
 * JSON, with `Content-Type: application/json` unless the run sets its own.
 * A 2xx whose `Content-Type` is JSON (`application/json`, or a `+json`
 * type) is read whole, up to `resultBytes`, and its body is the step's
 * result, handed to the steps that depend on it; another 2xx completes the
 * step with no result. A JSON body that does not parse, or is longer than
 * `resultBytes`, discards the job naming the request; one cut short (a
 * timeout or a broken connection after the status) is retried.
 *
 * Secrets: expanded header values are never logged or kept. Messages name the
 * URL as the run spells it (references unexpanded, then {@linkcode redact}ed),
 * and the values of referenced variables are masked in the excerpt and in
 * errors, in case a server or the network stack echoes them.
 *
 * @module
 */

import type { Clock } from "../clock.ts";
import { JobFailure } from "../kernel/error_text.ts";
import { redact } from "../kernel/redact.ts";
import { DEFAULT_ARGS_LIMIT } from "../kernel/enqueue.ts";
import { defineWorker, type JobContext, type Outcome, type Worker } from "../kernel/worker.ts";
import { expandVariables, maskValues, MissingVariableError } from "../process/env.ts";
import { stepDocument } from "./step_document.ts";
import { HTTP_WORKER, type HttpRun } from "../kernel/runs.ts";

/** Timeout of a request when neither the run nor the job's meta sets one. */
export const DEFAULT_HTTP_TIMEOUT_MS = 30_000;
/** Bytes of the response body kept as the attempt's output. */
export const DEFAULT_EXCERPT_BYTES = 4096;
/** Most bytes of a step's JSON response read as its result: a step result's limit. */
export const DEFAULT_HTTP_RESULT_BYTES = DEFAULT_ARGS_LIMIT;

/** Options of {@linkcode httpWorker}. */
export interface HttpWorkerOptions {
  /** Reads the daemon's environment for `${NAME}` references in the URL and header values. */
  env: (name: string) => string | undefined;
  /** Times each request; its `now()` also dates an HTTP-date `Retry-After`. */
  clock: Clock;
  /** Sends the request. @default globalThis.fetch */
  fetch?: typeof fetch;
  /** How much of the response body is kept as output; the rest is not read. @default 4096 */
  excerptBytes?: number;
  /**
   * Most bytes of a workflow step's JSON response read as its result; a
   * longer one discards the job. @default 262144 (a step result's limit)
   */
  resultBytes?: number;
}

/** Raised into the request's signal when its timeout passes. */
export class HttpTimeoutError extends Error {
  constructor(readonly ms: number) {
    super(`timed out after ${ms} ms`);
    this.name = "HttpTimeoutError";
  }
}

/**
 * The runner of `http` runs, named `jobs.http`.
 *
 * Every request carries `Idempotency-Key` (stable across the job's attempts),
 * `X-Jobs-Fence` and `X-Jobs-Attempt`. When the run sets a header of the same
 * name (in any case), the runner's value wins: a fixed key would be shared by
 * every occurrence, and a fixed fence or attempt would lie.
 */
export function httpWorker(options: HttpWorkerOptions): Worker<HttpRun> {
  const excerptBytes = options.excerptBytes ?? DEFAULT_EXCERPT_BYTES;
  if (!Number.isInteger(excerptBytes) || excerptBytes < 0) {
    throw new RangeError(`httpWorker: excerptBytes must be an integer >= 0, got ${excerptBytes}`);
  }
  const resultBytes = options.resultBytes ?? DEFAULT_HTTP_RESULT_BYTES;
  if (!Number.isInteger(resultBytes) || resultBytes < 1) {
    throw new RangeError(`httpWorker: resultBytes must be an integer >= 1, got ${resultBytes}`);
  }
  const deps: Deps = {
    env: options.env,
    clock: options.clock,
    // Called unbound, the global fetch would lose its receiver.
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    excerptBytes,
    resultBytes,
  };
  return defineWorker<HttpRun>({
    name: HTTP_WORKER,
    // The request is aborted on its timeout before perform returns.
    selfTimed: true,
    args: { parse: parseHttpRun },
    perform: (run, ctx) => performHttp(run, ctx, deps),
  });
}

interface Deps {
  env: (name: string) => string | undefined;
  clock: Clock;
  fetch: typeof fetch;
  excerptBytes: number;
  resultBytes: number;
}

async function performHttp(run: HttpRun, ctx: JobContext, deps: Deps): Promise<Outcome> {
  const prepared = prepare(run, ctx, deps.env);
  if ("discard" in prepared) return prepared;
  if (ctx.workflow !== null) await addStep(prepared, run, ctx);
  const answer = await exchange(prepared, timeoutOf(run, ctx), deps, ctx.signal);
  ctx.output(`HTTP ${answer.status}\n${answer.excerpt}`);
  return outcomeOf(answer, prepared, deps.clock.now());
}

// ---------------------------------------------------------------------------
// Args

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FIELDS = new Set(["kind", "method", "url", "headers", "body", "timeoutMs"]);

/**
 * Validates the args of a `jobs.http` job (the executor discards the job
 * when this throws). The method is upper-cased; the URL is checked only
 * after expansion, since `${NAME}` references may make it whole.
 */
export function parseHttpRun(input: unknown): HttpRun {
  if (!isRecord(input)) throw new TypeError(`http run must be an object, got ${typeName(input)}`);
  const unknown = Object.keys(input).filter((k) => !FIELDS.has(k));
  if (unknown.length > 0) {
    throw new TypeError(`http run: unknown field "${unknown[0]}"`);
  }
  if (input.kind !== "http") {
    throw new TypeError(`http run: kind must be "http", got ${JSON.stringify(input.kind)}`);
  }
  const { method, url, headers, body, timeoutMs } = input;
  if (typeof method !== "string" || !TOKEN.test(method)) {
    throw new TypeError(`http run: method must be an HTTP method, got ${JSON.stringify(method)}`);
  }
  if (typeof url !== "string" || url === "") {
    throw new TypeError(`http run: url must be a non-empty string, got ${typeName(url)}`);
  }
  const run: HttpRun = { kind: "http", method: method.toUpperCase(), url };
  if (headers !== undefined) {
    if (!isRecord(headers)) {
      throw new TypeError(`http run: headers must be an object, got ${typeName(headers)}`);
    }
    for (const [name, value] of Object.entries(headers)) {
      if (!TOKEN.test(name)) throw new TypeError(`http run: invalid header name "${name}"`);
      if (typeof value !== "string") {
        throw new TypeError(`http run: header "${name}" must be a string, got ${typeName(value)}`);
      }
    }
    run.headers = headers as Record<string, string>;
  }
  if (body !== undefined) {
    if (typeof body !== "string") {
      throw new TypeError(`http run: body must be a string, got ${typeName(body)}`);
    }
    if (run.method === "GET" || run.method === "HEAD") {
      throw new TypeError(`http run: a ${run.method} request cannot have a body`);
    }
    run.body = body;
  }
  if (timeoutMs !== undefined) {
    if (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
      throw new TypeError(`http run: timeoutMs must be a positive number, got ${timeoutMs}`);
    }
    run.timeoutMs = timeoutMs;
  }
  return run;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `${typeof value} ${JSON.stringify(value)}`;
}

/** The run's timeout, else the schedule's (the job's run settings), else 30 s. */
function timeoutOf(run: HttpRun, ctx: JobContext): number {
  return run.timeoutMs ?? ctx.timeoutMs ?? DEFAULT_HTTP_TIMEOUT_MS;
}

// ---------------------------------------------------------------------------
// Prepare

interface Prepared {
  method: string;
  url: URL;
  headers: Headers;
  body: string | undefined;
  /** The URL as the run spells it, redacted: what messages show. */
  shown: string;
  /** Values of the referenced variables, masked wherever the runner writes text. */
  secrets: string[];
  /** A workflow step's request: a JSON response of a 2xx is its result. */
  step: boolean;
}

function prepare(
  run: HttpRun,
  ctx: JobContext,
  env: (name: string) => string | undefined,
): Prepared | { discard: string } {
  const shown = shownUrl(run.url);
  const secrets: string[] = [];
  // Remembers what each reference expanded to, so it can be masked later.
  const recording = (name: string) => {
    const value = env(name);
    if (value !== undefined) secrets.push(value);
    return value;
  };
  let href: string;
  const headers = new Headers();
  try {
    href = expandVariables(run.url, recording, "url");
    for (const [name, value] of Object.entries(run.headers ?? {})) {
      // Not `header "Authorization": …`, which redact() would read as a credential.
      const expanded = expandVariables(value, recording, `"${name}" header`);
      try {
        headers.set(name, expanded);
      } catch {
        // The message must not carry the value: it may be a secret.
        return { discard: `"${name}" header is not a valid HTTP header value after expansion` };
      }
    }
  } catch (error) {
    if (error instanceof MissingVariableError) return { discard: error.message };
    throw error;
  }
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return { discard: `url ${shown} is not a valid URL after expansion` };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return { discard: `url ${shown} must be http or https, got "${url.protocol}"` };
  }
  headers.set("Idempotency-Key", headerSafe(ctx.idempotencyKey));
  headers.set("X-Jobs-Fence", String(ctx.fence));
  headers.set("X-Jobs-Attempt", String(ctx.attempt));
  return { method: run.method, url, headers, body: run.body, shown, secrets, step: false };
}

/** Methods that take no body: a step's document is not sent with them. */
const BODILESS = new Set(["GET", "HEAD"]);

/** A workflow step's headers, and its document as the body when the run sets none. */
async function addStep(prepared: Prepared, run: HttpRun, ctx: JobContext): Promise<void> {
  const step = ctx.workflow!;
  prepared.step = true;
  prepared.headers.set("Jobs-Workflow-Run", String(step.run));
  prepared.headers.set("Jobs-Step", headerSafe(step.step));
  if (step.useCase !== null) prepared.headers.set("Jobs-Use-Case", headerSafe(step.useCase));
  if (run.body !== undefined || BODILESS.has(prepared.method)) return;
  prepared.body = JSON.stringify(await stepDocument(step, ctx));
  if (!prepared.headers.has("Content-Type")) {
    prepared.headers.set("Content-Type", "application/json");
  }
}

const REFERENCE = /\$\{[A-Za-z_][A-Za-z0-9_]*\}/g;

/**
 * The URL as the run spells it, redacted. References are set aside first:
 * `redact` would cut `${NAME}` at its brace; one that stands where a secret
 * would is masked whole, the others read as written.
 */
function shownUrl(template: string): string {
  const references: string[] = [];
  const parked = template.replace(REFERENCE, (reference) => {
    references.push(reference);
    return `\uE000${references.length - 1}\uE001`;
  });
  return redact(parked).replace(/\uE000(\d+)\uE001/g, (_m, i: string) => references[Number(i)]!);
}

/** Header values are bytes: a schedule id outside printable ASCII is percent-encoded. */
function headerSafe(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : encodeURIComponent(value);
}

/** `text` with the expanded URL shown as written and every filled-in value masked. */
function mask(text: string, prepared: Prepared): string {
  return maskValues(text.split(prepared.url.href).join(prepared.shown), prepared.secrets);
}

// ---------------------------------------------------------------------------
// Exchange

interface Answer {
  status: number;
  retryAfter: string | null;
  excerpt: string;
  /**
   * A step's 2xx JSON response: its whole body (`cut` null), or what was
   * read before the body was cut (`"more"` past `limit` bytes, else why).
   */
  json?: { text: string; cut: unknown; limit: number };
}

/**
 * Sends the request and reads the excerpt, under a timeout slept on the
 * injected clock. The timeout aborts the request (the server sees it go);
 * once the status is in, a timeout or a broken body only cuts the excerpt
 * short, since the server has answered.
 */
async function exchange(
  prepared: Prepared,
  timeoutMs: number,
  deps: Deps,
  jobSignal: AbortSignal,
): Promise<Answer> {
  // One controller for the request, aborted by the job's signal or the
  // timer; the listener on the job's signal goes when the exchange ends.
  const request = new AbortController();
  const signal = request.signal;
  let timedOut = false;
  const onJobAbort = () => request.abort(jobSignal.reason);
  if (jobSignal.aborted) onJobAbort();
  else jobSignal.addEventListener("abort", onJobAbort, { once: true });
  const stopTimer = new AbortController();
  deps.clock.sleep(timeoutMs, stopTimer.signal).then(() => {
    if (stopTimer.signal.aborted || signal.aborted) return;
    timedOut = true;
    request.abort(new HttpTimeoutError(timeoutMs));
  });
  const what = `${prepared.method} ${prepared.shown}`;
  try {
    let response: Response;
    // A fetch that throws at once fails like one that rejects: masked below.
    const sent = new Promise<Response>((resolve) =>
      resolve(deps.fetch(prepared.url, {
        method: prepared.method,
        headers: prepared.headers,
        body: prepared.body,
        signal,
      }))
    );
    try {
      response = await abortable(sent, signal);
    } catch (error) {
      // A fetch that ignored the signal may still answer: release its body.
      sent.then((late) => late.body?.cancel(), () => {});
      if (jobSignal.aborted) throw jobSignal.reason;
      if (timedOut) throw new JobFailure(`${what} timed out after ${timeoutMs} ms`);
      throw new JobFailure(`${what} failed: ${mask(messageOf(error), prepared)}`);
    }
    const result = prepared.step && response.status >= 200 && response.status < 300 &&
      isJson(response.headers.get("Content-Type"));
    const limit = result ? Math.max(deps.resultBytes, deps.excerptBytes) : deps.excerptBytes;
    const read = await readBody(response.body, limit, signal);
    if (jobSignal.aborted) throw jobSignal.reason;
    // Past the excerpt, bytes read for the result are cut from the output as unread ones are.
    const shortened = read.bytes.length > deps.excerptBytes;
    const text = decode(read.bytes.subarray(0, deps.excerptBytes), shortened || read.cut !== null);
    let excerpt = mask(text, prepared);
    if (read.cut === "more" || shortened) {
      excerpt += `\n… [cut after ${deps.excerptBytes} bytes]`;
    } else if (read.cut !== null) {
      const why = timedOut
        ? `timed out after ${timeoutMs} ms`
        : mask(messageOf(read.cut), prepared);
      excerpt += `\n… [body cut short: ${why}]`;
    }
    const answer: Answer = {
      status: response.status,
      retryAfter: response.headers.get("Retry-After"),
      excerpt,
    };
    if (result) {
      // Read as far as the excerpt too, but held to resultBytes.
      const over = read.cut === "more" || read.bytes.length > deps.resultBytes;
      answer.json = {
        text: new TextDecoder().decode(read.bytes),
        cut: over ? "more" : read.cut,
        limit: deps.resultBytes,
      };
    }
    return answer;
  } finally {
    stopTimer.abort();
    jobSignal.removeEventListener("abort", onJobAbort);
  }
}

/** Settles like `promise`, or rejects with the signal's reason as soon as it aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** A JSON media type: `application/json`, or any `+json` type, whatever its parameters. */
function isJson(contentType: string | null): boolean {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"));
}

/**
 * Reads at most `limit` bytes of `body` (one chunk more, to know whether
 * there is more), then cancels the stream so an endless body is never
 * buffered. `cut` is "more" when bytes were left unread, the error when
 * reading stopped early, null when the whole body was read.
 */
async function readBody(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
  signal: AbortSignal,
): Promise<{ bytes: Uint8Array; cut: unknown }> {
  if (body === null) return { bytes: new Uint8Array(0), cut: null };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let cut: unknown = null;
  try {
    for (;;) {
      const { done, value } = await abortable(reader.read(), signal);
      if (done) break;
      if (value.length === 0) continue;
      if (size + value.length > limit) {
        chunks.push(value.subarray(0, limit - size));
        size = limit;
        cut = "more";
        break;
      }
      chunks.push(value);
      size += value.length;
    }
  } catch (error) {
    cut = error ?? new Error("body read failed");
  } finally {
    await reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return { bytes, cut };
}

/** `bytes` as text; when `cut` (the bytes stop early), a character cut in two is dropped. */
function decode(bytes: Uint8Array, cut: boolean): string {
  const text = new TextDecoder().decode(bytes);
  // A cut inside a character decodes to U+FFFD: drop it.
  return cut ? text.replace(/\uFFFD+$/, "") : text;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// ---------------------------------------------------------------------------
// Status

/** Maps the status; see the module doc's table. */
function outcomeOf(answer: Answer, prepared: Prepared, now: number): Outcome {
  const { status } = answer;
  if (status >= 200 && status < 300) return answer.json ? resultOf(answer, prepared) : undefined;
  // The status alone: the reason phrase is the server's text and adds nothing to the code.
  const text = `${prepared.method} ${prepared.shown} answered ${status}`;
  if (status === 429 || status === 503) {
    const ms = retryAfterMs(answer.retryAfter, now);
    if (ms !== null) return { snooze: ms };
    throw new JobFailure(text);
  }
  if (status >= 500) throw new JobFailure(text);
  return { discard: text };
}

/** A step's 2xx JSON response as its result; see the module doc. */
function resultOf(answer: Answer, prepared: Prepared): Outcome {
  const { text, cut, limit } = answer.json!;
  const what = `${prepared.method} ${prepared.shown} answered ${answer.status}`;
  if (cut === "more") return { discard: `${what} with a JSON body over ${limit} bytes` };
  if (cut !== null) {
    throw new JobFailure(
      `${what} but its JSON body was cut short: ${mask(messageOf(cut), prepared)}`,
    );
  }
  try {
    return { result: JSON.parse(text) };
  } catch (error) {
    // The parser quotes the body: masked like the excerpt.
    return { discard: `${what} with a body that is not JSON: ${mask(messageOf(error), prepared)}` };
  }
}

/**
 * The wait a `Retry-After` value asks for, in ms: delta-seconds, or an
 * HTTP date compared with `now` (a past date means no wait). Null when
 * absent or unreadable.
 */
export function retryAfterMs(value: string | null, now: number): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // HTTP dates name the weekday: refuses bare numbers with signs or decimals.
  if (!/^[A-Za-z]{3,9},? /.test(text)) return null;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - now);
}
