/**
 * Calls that go together: while one batch of a key is in flight, the calls
 * of that key that arrive wait, and go as the next batch the moment it
 * lands. A store answers a batch with one statement and one commit where it
 * would otherwise run one of each per call; under twenty people pressing
 * "next" at once, the statements' and commits' cost, not the work, was most
 * of the wait.
 *
 * One batch per key is in flight at a time, so the batches of a key run in
 * the order their calls arrived; batches of different keys run side by
 * side. A lone call goes at once, as a batch of one: nothing waits for
 * company.
 *
 * @module
 */

/** One call waiting in a batch. */
interface Waiting<I, O> {
  input: I;
  resolve: (output: O) => void;
  reject: (error: unknown) => void;
}

/**
 * Gathers the calls of each key (`keyOf`) that arrive while that key's
 * batch is in flight, and runs them as one batch (`run`, answering each
 * input's output in order), at most `most` a batch.
 *
 * @example
 * ```ts
 * import { Gathering } from "./gathering.ts";
 * const doubled = new Gathering<number, number>(() => "all", (xs) => Promise.resolve(xs.map((x) => 2 * x)));
 * const answers = await Promise.all([doubled.add(1), doubled.add(2), doubled.add(3)]);
 * if (answers.join() !== "2,4,6") throw new Error(String(answers));
 * ```
 */
export class Gathering<I, O> {
  readonly #keyOf: (input: I) => string;
  readonly #run: (batch: readonly I[]) => Promise<readonly O[]>;
  readonly #most: number;
  /** Each key in flight, with the calls waiting for its next batch. */
  readonly #waiting = new Map<string, Waiting<I, O>[]>();

  constructor(
    keyOf: (input: I) => string,
    run: (batch: readonly I[]) => Promise<readonly O[]>,
    most = 100,
  ) {
    this.#keyOf = keyOf;
    this.#run = run;
    this.#most = most;
  }

  /** Runs `input` in its key's next batch, and answers its output. */
  add(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const key = this.#keyOf(input);
      const call = { input, resolve, reject };
      const waiting = this.#waiting.get(key);
      if (waiting) {
        waiting.push(call);
        return;
      }
      this.#waiting.set(key, []);
      void this.#flight(key, [call]);
    });
  }

  /** Runs `batch`, then each following batch of `key`, until none waits. */
  async #flight(key: string, batch: Waiting<I, O>[]): Promise<void> {
    for (;;) {
      try {
        const outputs = await this.#run(batch.map((call) => call.input));
        if (outputs.length !== batch.length) {
          throw new Error(`a batch of ${batch.length} was answered ${outputs.length} times`);
        }
        batch.forEach((call, i) => call.resolve(outputs[i]!));
      } catch (error) {
        for (const call of batch) call.reject(error);
      }
      const waiting = this.#waiting.get(key)!;
      if (waiting.length === 0) {
        this.#waiting.delete(key);
        return;
      }
      batch = waiting.splice(0, this.#most);
    }
  }
}
