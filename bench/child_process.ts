/**
 * The benchmark's child processes, driven by lines over their stdin and
 * stdout.
 *
 * @module
 */

import { readLines } from "./shared.ts";

/**
 * A benchmark child process (a Deno script: `child.ts`, `limit_loop.ts`)
 * spoken to by lines on stdin and stdout. Its `ran N` lines (progress)
 * update {@linkcode Child.ran}; other lines queue for {@linkcode Child.next}.
 */
export class Child {
  readonly #process: Deno.ChildProcess;
  readonly #stdin: WritableStreamDefaultWriter<Uint8Array>;
  readonly #queued: string[] = [];
  #waiter: (() => void) | null = null;
  #closed = false;
  #exited = false;
  /** Jobs the child's runtime has run so far, as last reported. */
  ran = 0;

  constructor(script: string, args: string[]) {
    this.#process = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--allow-read",
        "--allow-write",
        "--allow-env",
        "--allow-sys",
        "--allow-net",
        script,
        ...args,
      ],
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    this.#process.status.then(() => this.#exited = true);
    this.#stdin = this.#process.stdin.getWriter();
    this.#pump();
  }

  async #pump(): Promise<void> {
    try {
      for await (const line of readLines(this.#process.stdout)) {
        if (line.startsWith("ran ")) this.ran = Number(line.slice(4));
        else this.#queued.push(line);
        this.#waiter?.();
      }
    } finally {
      this.#closed = true;
      this.#waiter?.();
    }
  }

  async send(line: string): Promise<void> {
    await this.#stdin.write(new TextEncoder().encode(`${line}\n`));
  }

  async next(): Promise<string> {
    while (this.#queued.length === 0) {
      if (this.#closed) throw new Error(`child ${this.#process.pid} closed its stdout`);
      await new Promise<void>((resolve) => this.#waiter = resolve);
      this.#waiter = null;
    }
    return this.#queued.shift()!;
  }

  async expect(line: string): Promise<void> {
    const got = await this.next();
    if (got !== line) {
      throw new Error(`child ${this.#process.pid}: expected "${line}", got "${got}"`);
    }
  }

  async wait(): Promise<void> {
    await this.#stdin.close().catch(() => {});
    const status = await this.#process.status;
    if (!status.success) throw new Error(`child ${this.#process.pid} exited with ${status.code}`);
  }

  /** Kills the child if it is still running (after a failure). */
  async kill(): Promise<void> {
    if (this.#exited) return;
    try {
      this.#process.kill("SIGKILL");
    } catch {
      // already gone
    }
    await this.#process.status;
  }
}
