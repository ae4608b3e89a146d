/**
 * What a child process wrote, kept within bounds: a rolling tail of its
 * bytes, and how a failure carries the tail of its stderr.
 *
 * @module
 */

import { STDERR_MARK } from "../text/stored_error.ts";
import { maskValues } from "./env.ts";

/**
 * Bytes of stderr's tail a failure's stored error carries: with the message
 * it stays under the store's 4 KiB per error. @default 2048
 */
export const ERROR_STDERR_BYTES = 2048;

/**
 * `message`, then the tail of what the command wrote to stderr (its last
 * {@linkcode ERROR_STDERR_BYTES}, marked when cut, filled-in secrets masked)
 * when it wrote anything: how a failure of a command reads in the store.
 */
export function withStderr(message: string, stderr: OutputTail, secrets: string[]): string {
  const said = stderr.text(secrets).trimEnd();
  return said.trim() === "" ? message : `${message}${STDERR_MARK}${said}`;
}

/** A rolling tail of bytes: memory stays at `capacity` whatever the output. */
export class OutputTail {
  readonly #buffer: Uint8Array;
  #end = 0;
  #length = 0;
  /** Bytes pushed out of the tail so far. */
  dropped = 0;

  constructor(readonly capacity: number) {
    this.#buffer = new Uint8Array(capacity);
  }

  push(chunk: Uint8Array): void {
    const cap = this.capacity;
    if (chunk.length >= cap) {
      this.dropped += this.#length + chunk.length - cap;
      this.#buffer.set(chunk.subarray(chunk.length - cap));
      this.#end = 0;
      this.#length = cap;
      return;
    }
    const first = Math.min(chunk.length, cap - this.#end);
    this.#buffer.set(chunk.subarray(0, first), this.#end);
    this.#buffer.set(chunk.subarray(first), 0);
    this.#end = (this.#end + chunk.length) % cap;
    const length = this.#length + chunk.length;
    this.dropped += Math.max(0, length - cap);
    this.#length = Math.min(cap, length);
  }

  /** The kept bytes, in order. */
  bytes(): Uint8Array {
    const start = (this.#end - this.#length + this.capacity) % this.capacity;
    if (start + this.#length <= this.capacity) {
      return this.#buffer.slice(start, start + this.#length);
    }
    const out = new Uint8Array(this.#length);
    const head = this.#buffer.subarray(start);
    out.set(head);
    out.set(this.#buffer.subarray(0, this.#length - head.length), head.length);
    return out;
  }

  /**
   * The kept text, with a `[truncated N bytes] …` marker (the kernel's) when
   * the start was dropped, and each of `secrets` masked. Fits `capacity`.
   */
  text(secrets: string[] = []): string {
    let text = new TextDecoder().decode(this.bytes());
    text = maskValues(text, secrets);
    if (this.dropped === 0) return text;
    // A cut inside a character leaves continuation bytes: they decode to U+FFFD.
    text = text.replace(/^\uFFFD+/, "");
    const encoder = new TextEncoder();
    const bytes = encoder.encode(text);
    // The marker takes its room from the tail, so it counts what it hides
    // too; its length depends on that count, hence a few rounds to settle.
    let hidden = 0;
    let marker = "";
    for (let round = 0; round < 3; round++) {
      marker = `[truncated ${this.dropped + hidden} bytes] …`;
      hidden = Math.max(
        0,
        bytes.length - Math.max(0, this.capacity - encoder.encode(marker).length),
      );
    }
    if (hidden === 0) return marker + text;
    const tail = new TextDecoder().decode(bytes.subarray(hidden));
    return marker + tail.replace(/^\uFFFD+/, "");
  }
}
