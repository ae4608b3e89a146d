/**
 * The daemon's stderr lines: written together once per turn of the event
 * loop, all of them, in order, even by a pipe that takes part of a write,
 * and before the process ends, however it ends.
 */

import assert from "node:assert/strict";
import { FLUSH_BYTES, lineSink } from "../../src/cli/line_sink.ts";

const decoder = new TextDecoder();

Deno.test("lines of one turn go out in one write, at the turn's end, in order", async () => {
  const writes: string[] = [];
  const sink = lineSink((bytes) => {
    writes.push(decoder.decode(bytes));
    return bytes.length;
  });
  sink.write("one");
  sink.write("two");
  assert.deepEqual(writes, []);
  await new Promise((resolve) => setTimeout(resolve, 0));
  assert.deepEqual(writes, ["one\ntwo\n"]);
  sink.write("three");
  sink.flush();
  assert.deepEqual(writes, ["one\ntwo\n", "three\n"]);
  sink.flush();
  assert.equal(writes.length, 2);
});

Deno.test("a full buffer is written at once; a write that takes part of it is finished", () => {
  const taken: Uint8Array[] = [];
  // A pipe taking at most 1000 bytes a call.
  const sink = lineSink((bytes) => {
    const part = bytes.slice(0, 1000);
    taken.push(part);
    return part.length;
  });
  const line = "x".repeat(999);
  const n = Math.ceil(FLUSH_BYTES / 1000);
  for (let i = 0; i < n; i++) sink.write(`${i}:${line}`);
  const text = taken.map((b) => decoder.decode(b)).join("");
  assert.equal(text, Array.from({ length: n }, (_, i) => `${i}:${line}\n`).join(""));
});

for (const ending of ["exit", "throw", "return"] as const) {
  Deno.test(`lines queued before the process ends are written (${ending})`, async () => {
    const script = `
      import { flushOnExit, lineSink } from ${
      JSON.stringify(new URL("../../src/cli/line_sink.ts", import.meta.url).href)
    };
      const sink = lineSink((bytes) => Deno.stderr.writeSync(bytes));
      flushOnExit(sink);
      sink.write("last words");
      if (${JSON.stringify(ending)} === "exit") Deno.exit(3);
      if (${JSON.stringify(ending)} === "throw") throw new Error("boom");
    `;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--ext=ts", script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = decoder.decode(out.stderr);
    assert.match(stderr, /^last words\n/, stderr);
    assert.equal(out.code, ending === "return" ? 0 : ending === "exit" ? 3 : 1);
  });
}
