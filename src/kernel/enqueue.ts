/**
 * Turns a worker, its args and enqueue options into a row to insert: every
 * option checked, args serialized and size-checked, nothing half-written.
 *
 * @module
 */

import { checkUnique, debounceOf, uniqueKey, type UniqueOptions } from "./unique.ts";
import type { NewJob } from "./types.ts";
import {
  checkMaxAttempts,
  checkQueueName,
  clampPriority,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_QUEUE,
  type Worker,
} from "./worker.ts";

/** Largest serialized args accepted by default, in bytes. */
export const DEFAULT_ARGS_LIMIT = 256 * 1024;

/** Options of one enqueue. */
export interface EnqueueOptions {
  /** @default the worker's queue, else "default" */
  queue?: string;
  /** 0 (first) to 9 (last); clamped into that range. @default the worker's, else 0 */
  priority?: number;
  /** Run no earlier than this many ms from now. */
  in?: number;
  /** Run no earlier than this instant (UTC epoch ms or a Date). */
  at?: number | Date;
  /** @default the worker's, else 20 */
  maxAttempts?: number;
  /** Free-form labels, for filtering. */
  tags?: string[];
  /** Free-form data kept with the job, not passed to `perform`. */
  meta?: Record<string, unknown>;
  /** Uniqueness; `false` turns off the worker's. @default the worker's */
  unique?: UniqueOptions | false;
  /** The tenant the job belongs to. */
  tenant?: string;
}

/** Raised when args or options are refused; no row is written. */
export class EnqueueError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EnqueueError";
  }
}

/** Serializes args as JSON, refusing what JSON would silently drop or mangle. */
export function serializeArgs(args: unknown, where: string, limit = DEFAULT_ARGS_LIMIT): string {
  let text: string | undefined;
  try {
    // Plain data takes JSON.stringify's own path: a replacer makes it call
    // back per value, which cost a bulk enqueue a tenth of its time.
    text = plainJson(args, 0) ? JSON.stringify(args) : JSON.stringify(args, (key, value) => {
      const t = typeof value;
      if (t === "function" || t === "symbol") {
        throw new EnqueueError(`${where}: args${path(key)} is a ${t}, which JSON cannot hold`);
      }
      if (t === "number" && !Number.isFinite(value)) {
        throw new EnqueueError(`${where}: args${path(key)} is ${value}, which JSON cannot hold`);
      }
      if (value instanceof Map || value instanceof Set) {
        throw new EnqueueError(
          `${where}: args${path(key)} is a ${value.constructor.name}, which JSON cannot hold`,
        );
      }
      return value;
    });
  } catch (error) {
    if (error instanceof EnqueueError) throw error;
    throw new EnqueueError(`${where}: args cannot be serialized: ${(error as Error).message}`);
  }
  if (text === undefined) {
    throw new EnqueueError(`${where}: args cannot be serialized: ${String(args)}`);
  }
  const bytes = text.length * 3 <= limit ? text.length : new TextEncoder().encode(text).length;
  if (bytes > limit) {
    throw new EnqueueError(`${where}: args are ${bytes} bytes, more than the limit of ${limit}`);
  }
  return text;
}

/** Nesting past which {@linkcode plainJson} leaves the value to the checking path. */
const PLAIN_DEPTH = 32;

/**
 * Whether JSON.stringify writes `value` as it is: strings, finite numbers,
 * booleans, null, and arrays and plain objects of those (undefined where
 * JSON drops it or writes null, as the checking path lets it). Anything
 * else (a function, a Map, a Date, NaN, a class instance, deep nesting)
 * goes through the replacer, which refuses what JSON would mangle.
 */
function plainJson(value: unknown, depth: number): boolean {
  switch (typeof value) {
    case "string":
    case "boolean":
    case "undefined":
      return true;
    case "number":
      return Number.isFinite(value);
    case "object": {
      if (value === null) return true;
      if (depth >= PLAIN_DEPTH) return false;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (!plainJson(value[i], depth + 1)) return false;
        return true;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) return false;
      if ("toJSON" in value) return false;
      for (const key in value) {
        if (!plainJson((value as Record<string, unknown>)[key], depth + 1)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

function path(key: string): string {
  return key === "" ? "" : `.${key}`;
}

/**
 * Builds the row for one job. `worker` is a defined worker or just a name
 * (a worker this process does not define, run elsewhere).
 */
export function buildJob(
  // deno-lint-ignore no-explicit-any
  worker: Worker<any> | string,
  args: unknown,
  options: EnqueueOptions,
  now: number,
  argsLimit = DEFAULT_ARGS_LIMIT,
): NewJob {
  const def = typeof worker === "string" ? null : worker;
  const name = def ? def.name : worker as string;
  const where = `enqueue "${name}"`;
  if (typeof name !== "string" || name.length === 0) {
    throw new EnqueueError(`enqueue: a worker or worker name is required, got "${String(name)}"`);
  }
  const queue = options.queue ?? def?.queue ?? DEFAULT_QUEUE;
  const maxAttempts = options.maxAttempts ?? def?.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const unique = options.unique === false ? undefined : options.unique ?? def?.unique;
  try {
    checkQueueName(queue, where);
    checkMaxAttempts(maxAttempts, where);
    if (unique) checkUnique(unique, where);
  } catch (error) {
    // The checks are shared with defineWorker; an enqueue refuses with one error class.
    throw new EnqueueError((error as Error).message);
  }
  const argsText = serializeArgs(args, where, argsLimit);
  const debounce = unique ? debounceOf(unique) : null;
  // A debounced job waits its window, so later inserts can replace it.
  const scheduledAt = debounce && options.in === undefined && options.at === undefined
    ? now + debounce.windowMs
    : scheduleOf(options, now, where);
  if (options.tags && !options.tags.every((t) => typeof t === "string")) {
    throw new EnqueueError(`${where}: tags must be strings, got ${JSON.stringify(options.tags)}`);
  }
  return {
    queue,
    worker: name,
    args: argsText,
    meta: options.meta ? serializeArgs(options.meta, `${where} meta`, argsLimit) : "{}",
    tags: options.tags ? JSON.stringify(options.tags) : "[]",
    tenant: options.tenant ?? null,
    priority: clampPriority(options.priority ?? def?.priority ?? 0),
    maxAttempts,
    scheduledAt,
    uniqueKey: unique
      ? uniqueKey(unique, { worker: name, queue, args: JSON.parse(argsText) }, now)
      : null,
    uniqueStates: unique ? unique.states ?? "incomplete" : null,
    occurrence: null,
    scheduleId: null,
    scheduledFor: null,
    ...(debounce ? { debounce: { extend: debounce.extend } } : {}),
  };
}

function scheduleOf(options: EnqueueOptions, now: number, where: string): number {
  if (options.in !== undefined && options.at !== undefined) {
    throw new EnqueueError(`${where}: give "in" or "at", not both`);
  }
  if (options.in !== undefined) {
    if (!Number.isFinite(options.in) || options.in < 0) {
      throw new EnqueueError(`${where}: "in" must be a number of ms >= 0, got ${options.in}`);
    }
    return now + options.in;
  }
  if (options.at !== undefined) {
    const at = options.at instanceof Date ? options.at.getTime() : options.at;
    if (!Number.isFinite(at)) {
      throw new EnqueueError(`${where}: "at" is not a valid instant: ${String(options.at)}`);
    }
    return at;
  }
  return now;
}
