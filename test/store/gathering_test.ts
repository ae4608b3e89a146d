/**
 * The gathering of calls into batches (`src/store/gathering.ts`): a lone
 * call goes at once; calls of a key that arrive while its batch is in
 * flight go together in the next, in order; keys do not wait for each
 * other; a failed batch fails its own calls only.
 */

import assert from "node:assert/strict";
import { Gathering } from "../../src/store/gathering.ts";

/** A run whose batches the test lands by hand. */
function heldRun() {
  const batches: { key: string; inputs: string[]; land: (fail?: Error) => void }[] = [];
  const run = (inputs: readonly string[]) =>
    new Promise<string[]>((resolve, reject) => {
      batches.push({
        key: inputs[0]!.split(":")[0]!,
        inputs: [...inputs],
        land: (fail) => fail ? reject(fail) : resolve(inputs.map((i) => i.toUpperCase())),
      });
    });
  return { batches, run };
}

/** Lets every settled promise's callbacks run. */
async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

Deno.test("a lone call goes at once; the calls that arrive meanwhile go together next, in order", async () => {
  const { batches, run } = heldRun();
  const gathering = new Gathering<string, string>((i) => i.split(":")[0]!, run);
  const first = gathering.add("q:1");
  assert.deepEqual(batches.map((b) => b.inputs), [["q:1"]]);
  const later = [gathering.add("q:2"), gathering.add("q:3"), gathering.add("q:4")];
  // Nothing more goes while the first is in flight.
  assert.equal(batches.length, 1);
  batches[0]!.land();
  assert.equal(await first, "Q:1");
  await settle();
  assert.deepEqual(batches.map((b) => b.inputs), [["q:1"], ["q:2", "q:3", "q:4"]]);
  batches[1]!.land();
  assert.deepEqual(await Promise.all(later), ["Q:2", "Q:3", "Q:4"]);
  // Idle again: the next call goes at once.
  const again = gathering.add("q:5");
  assert.deepEqual(batches[2]!.inputs, ["q:5"]);
  batches[2]!.land();
  assert.equal(await again, "Q:5");
});

Deno.test("keys do not wait for each other, and a batch holds at most `most` calls", async () => {
  const { batches, run } = heldRun();
  const gathering = new Gathering<string, string>((i) => i.split(":")[0]!, run, 2);
  const calls = ["a:1", "b:1", "a:2", "a:3", "a:4", "b:2"].map((i) => gathering.add(i));
  assert.deepEqual(batches.map((b) => b.inputs), [["a:1"], ["b:1"]]);
  batches[0]!.land();
  await settle();
  assert.deepEqual(batches[2]!.inputs, ["a:2", "a:3"]);
  batches[1]!.land();
  await settle();
  assert.deepEqual(batches[3]!.inputs, ["b:2"]);
  batches[2]!.land();
  await settle();
  assert.deepEqual(batches[4]!.inputs, ["a:4"]);
  batches[3]!.land();
  batches[4]!.land();
  assert.deepEqual(await Promise.all(calls), ["A:1", "B:1", "A:2", "A:3", "A:4", "B:2"]);
});

Deno.test("a failed batch fails its own calls; the calls waiting behind it still go", async () => {
  const { batches, run } = heldRun();
  const gathering = new Gathering<string, string>((i) => i.split(":")[0]!, run);
  const first = gathering.add("q:1");
  const second = gathering.add("q:2");
  batches[0]!.land(new Error("connection reset"));
  await assert.rejects(first, /connection reset/);
  await settle();
  batches[1]!.land();
  assert.equal(await second, "Q:2");
});

Deno.test("a batch answered with the wrong number of outputs fails its calls, naming both", async () => {
  const gathering = new Gathering<string, string>(() => "k", () => Promise.resolve([]));
  await assert.rejects(gathering.add("x"), /a batch of 1 was answered 0 times/);
});
