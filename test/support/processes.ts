/** Test support for tests that spawn OS processes of their own. */

/** A `deno run` of a test script with the permissions the children need. */
export function denoScript(script: string, args: string[], options: Deno.CommandOptions = {}) {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", "--allow-write", "--allow-env", "--allow-sys", script, ...args],
    ...options,
  });
}

/** The lines of a child's stdout, as they arrive, without their newline. */
export async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buffer = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    let newline;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      yield buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
    }
  }
  if (buffer) yield buffer;
}
