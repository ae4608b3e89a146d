import assert from "node:assert/strict";
import {
  errorParts,
  errorSummary,
  STDERR_MARK,
  SUMMARY_STDERR_CHARS,
} from "../../src/text/stored_error.ts";

Deno.test("errorParts() splits a command's failure into its message and its stderr lines", () => {
  assert.deepEqual(errorParts('command "sh" exited with code 1\nstderr:\ndisk full\non /var\n'), {
    message: 'command "sh" exited with code 1',
    stderr: ["disk full", "on /var"],
  });
  // A worker's throw: the message's first line, without its frames.
  assert.deepEqual(errorParts("Error: boom\n    at perform (w.ts:1:1)"), {
    message: "Error: boom",
    stderr: [],
  });
  assert.deepEqual(errorParts(`exited${STDERR_MARK}  \n`), { message: "exited", stderr: [] });
});

Deno.test("errorSummary() is one line: the message, then the last non-blank line of stderr", () => {
  assert.equal(errorSummary("timed out after 5000 ms"), "timed out after 5000 ms");
  assert.equal(
    errorSummary('step "x" discarded: code 2\nstderr:\nfirst\nlast one\n\n'),
    'step "x" discarded: code 2; stderr: …last one',
  );
  assert.equal(errorSummary("code 2\nstderr:\nonly"), "code 2; stderr: only");
  const long = errorSummary(`code 2\nstderr:\n${"x".repeat(500)}`);
  assert.equal(long, `code 2; stderr: ${"x".repeat(SUMMARY_STDERR_CHARS - 1)}…`);
  assert.ok(!errorSummary("a\nb\nstderr:\nc\nd").includes("\n"));
});
