/**
 * Preloaded into every test module (`deno task test` passes `--preload`).
 *
 * When a test's body throws and then one of its `await using` resources
 * fails to dispose too (a schema that cannot be dropped, a child that will
 * not die), the runtime throws a `SuppressedError`, and `deno test` prints
 * only "SuppressedError: An error was suppressed during disposal" with the
 * line of the first throw: neither the assertion that failed nor why the
 * disposal failed. The test runner prints an error's `cause`, so this gives
 * every `SuppressedError` one: the error the body threw, its message first,
 * then the disposal's error and the body's, both in full.
 *
 * Nothing is changed for a test that passes, or whose failure is not a
 * `SuppressedError`.
 *
 * @module
 */

const explained = new WeakMap<SuppressedError, Error>();

/** An error's stack (its message and frames), or its text when it is not an Error. */
function inFull(error: unknown): string {
  return error instanceof Error ? String(error.stack ?? error) : String(error);
}

/** What the test runner prints as "Caused by:" under a `SuppressedError`. */
export function explainSuppressed(error: SuppressedError): Error {
  let found = explained.get(error);
  if (found === undefined) {
    const body = error.suppressed;
    const first = body instanceof Error ? body.message : String(body);
    found = new Error(
      `${first}\n\nthen disposing a resource failed too: ${inFull(error.error)}` +
        `\n\nthe test's own error, in full: ${inFull(body)}`,
    );
    explained.set(error, found);
  }
  return found;
}

if (typeof SuppressedError === "function") {
  Object.defineProperty(SuppressedError.prototype, "cause", {
    configurable: true,
    get(this: SuppressedError): Error {
      return explainSuppressed(this);
    },
  });
}
