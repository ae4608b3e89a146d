/**
 * Reading a secret from the terminal without echoing it (`jobs users add`
 * asks for a password twice): the terminal is put in raw mode for the
 * line, each byte kept but none shown, and restored however the line ends.
 * main.ts hands this to the commands as `CliDeps.readSecret`.
 *
 * @module
 */

import { CommandFailed } from "./common.ts";

const ENTER = new Set([10, 13]);
const CTRL_C = 3;
const CTRL_D = 4;
const ERASE = new Set([8, 127]);

/**
 * The line typed at the terminal after `prompt` (written to stderr),
 * without echo; null when stdin is not a terminal. Ctrl-C gives up (exit
 * 130); Ctrl-D on an empty line ends it empty.
 */
export async function promptSecret(prompt: string): Promise<string | null> {
  if (!Deno.stdin.isTerminal()) return null;
  const encoder = new TextEncoder();
  Deno.stderr.writeSync(encoder.encode(prompt));
  const bytes: number[] = [];
  const chunk = new Uint8Array(256);
  Deno.stdin.setRaw(true);
  try {
    read: for (;;) {
      const n = await Deno.stdin.read(chunk);
      if (n === null) break;
      for (const byte of chunk.subarray(0, n)) {
        if (ENTER.has(byte)) break read;
        if (byte === CTRL_C) throw new CommandFailed("", 130);
        if (byte === CTRL_D && bytes.length === 0) break read;
        if (ERASE.has(byte)) {
          // One character back: its UTF-8 continuation bytes and its first.
          while (bytes.length > 0 && (bytes.at(-1)! & 0xc0) === 0x80) bytes.pop();
          bytes.pop();
          continue;
        }
        bytes.push(byte);
      }
    }
  } finally {
    Deno.stdin.setRaw(false);
    Deno.stderr.writeSync(encoder.encode("\n"));
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}
