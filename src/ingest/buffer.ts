/**
 * The bounded buffer between a source's reader and the processing loop.
 * The reader runs ahead of the loop (so a slow sink does not stall a fast
 * pipe), and the buffer decides what a full buffer means:
 *
 * - `block`: the reader waits until the loop has taken records;
 * - `drop_oldest`: the oldest buffered record is evicted and handed to the
 *   loop as an `overflow` drop with its next take. Evictions waiting to be
 *   committed are bounded by the capacity too: when that many wait, the
 *   reader waits, so memory stays at 2 x `capacity` records whatever the feed;
 * - `page`: the reader stops; the loop drains what is buffered and the run
 *   ends `paged`.
 *
 * `highWater` is the most records buffered at once:
 * tests assert it never passes the capacity.
 *
 * @module
 */

import type { SourceRecord } from "./formats.ts";
import type { Overflow } from "./types.ts";

/** What one take hands the loop. */
export interface Take {
  records: SourceRecord[];
  /** Records evicted by `drop_oldest` since the last take (all older than `records`). */
  evicted: SourceRecord[];
  /** The source has ended (or paged) and nothing is left after this take. */
  done: boolean;
}

/** The bounded buffer; see the module doc. */
export class RecordBuffer {
  readonly capacity: number;
  readonly overflow: Overflow;
  /** Most records buffered at once. */
  highWater = 0;
  /** `page`: the buffer filled and the reader stopped. */
  paged = false;
  #queue: SourceRecord[] = [];
  #head = 0;
  #evicted: SourceRecord[] = [];
  #ended = false;
  #error: unknown = null;
  #wakeReader: (() => void) | null = null;
  #wakeTaker: (() => void) | null = null;

  constructor(capacity: number, overflow: Overflow) {
    if (!Number.isInteger(capacity) || capacity < 1) {
      throw new RangeError(`buffer capacity must be a whole number >= 1, got ${capacity}`);
    }
    this.capacity = capacity;
    this.overflow = overflow;
  }

  get size(): number {
    return this.#queue.length - this.#head;
  }

  /** Whether the reader should stop (paged, ended or failed). */
  get stopped(): boolean {
    return this.#ended;
  }

  /**
   * Adds a batch; resolves once it is in (under `block`, after the loop took
   * enough). Returns false when the reader must stop (paged, or closed).
   */
  async push(batch: SourceRecord[], signal: AbortSignal): Promise<boolean> {
    let i = 0;
    while (i < batch.length) {
      if (this.#ended) return false;
      if (this.size < this.capacity) {
        const room = this.capacity - this.size;
        const end = Math.min(batch.length, i + room);
        for (; i < end; i++) this.#queue.push(batch[i]!);
        this.#mark();
        this.#wake();
        continue;
      }
      if (this.overflow === "page") {
        this.paged = true;
        this.#ended = true;
        this.#wake();
        return false;
      }
      if (this.overflow === "drop_oldest" && this.#evicted.length < this.capacity) {
        // Evict the oldest to make room, within the bound of evictions.
        this.#evicted.push(this.#queue[this.#head]!);
        this.#queue[this.#head] = undefined as unknown as SourceRecord;
        this.#head++;
        this.#queue.push(batch[i++]!);
        this.#compact();
        this.#wake();
        continue;
      }
      // block, or drop_oldest with evictions filling the bound: wait for a take.
      await this.#waitForRoom(signal);
    }
    return true;
  }

  /** The reader is done (ended, or failed with `error`). */
  end(error: unknown = null): void {
    if (error !== null && this.#error === null) this.#error = error;
    this.#ended = true;
    this.#wake();
  }

  /** Takes up to `max` records (waits for some, or the end). Throws the reader's error. */
  async take(max: number, signal: AbortSignal): Promise<Take> {
    for (;;) {
      if (signal.aborted) throw signal.reason;
      if (this.#error !== null) throw this.#error;
      if (this.size > 0 || this.#evicted.length > 0 || this.#ended) {
        const count = Math.min(max, this.size);
        const records = this.#queue.slice(this.#head, this.#head + count);
        this.#head += count;
        this.#compact();
        const evicted = this.#evicted;
        this.#evicted = [];
        this.#wakeReader?.();
        this.#wakeReader = null;
        return { records, evicted, done: this.#ended && this.size === 0 };
      }
      await new Promise<void>((resolve) => {
        this.#wakeTaker = resolve;
        signal.addEventListener("abort", () => resolve(), { once: true });
      });
    }
  }

  #mark(): void {
    if (this.size > this.highWater) this.highWater = this.size;
  }

  #compact(): void {
    if (this.#head > 4096 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    if (this.size === 0) {
      this.#queue = [];
      this.#head = 0;
    }
  }

  #wake(): void {
    this.#wakeTaker?.();
    this.#wakeTaker = null;
  }

  #waitForRoom(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      this.#wakeReader = resolve;
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
  }
}
