/**
 * A command for the end-to-end tests: appends its arguments after the first
 * as one JSON line to the file named by the first.
 *
 * Usage: echo_argv.ts <ledger> [args...]
 */

const [ledger, ...args] = Deno.args;
if (!ledger) {
  console.error("usage: echo_argv.ts <ledger> [args...]");
  Deno.exit(2);
}
Deno.writeTextFileSync(ledger, JSON.stringify(args) + "\n", { append: true });
