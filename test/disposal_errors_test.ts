import assert from "node:assert/strict";
import { tempDir } from "./support/stores.ts";

const PRELOAD = new URL("./support/disposal_errors.ts", import.meta.url).pathname;
const DENO_JSON = new URL("../deno.json", import.meta.url).pathname;

/** The test task's own flags: the suite runs with exactly this preload. */
async function testTaskPreloads(): Promise<boolean> {
  const config = JSON.parse(await Deno.readTextFile(DENO_JSON));
  return String(config.tasks.test).includes("--preload=test/support/disposal_errors.ts");
}

Deno.test("a test whose body and a disposal both fail prints both causes, not a bare SuppressedError", async () => {
  assert.ok(await testTaskPreloads(), "deno task test preloads test/support/disposal_errors.ts");
  const dir = await tempDir();
  try {
    const file = `${dir.path}/fails_test.ts`;
    await Deno.writeTextFile(
      file,
      `Deno.test("fails twice", async () => {
  await using _schema = { async [Symbol.asyncDispose]() { throw new Error("DROP SCHEMA failed: lock timeout"); } };
  throw new Error("expected 3 runs, saw 2");
});
`,
    );
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["test", "--no-check", "--no-config", `--preload=${PRELOAD}`, file],
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
    assert.equal(output.success, false, text);
    assert.match(text, /expected 3 runs, saw 2/, text);
    assert.match(text, /DROP SCHEMA failed: lock timeout/, text);
  } finally {
    await dir.cleanup();
  }
});
