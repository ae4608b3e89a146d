/**
 * `jobs users add` at a real terminal (tmux): the password is asked twice
 * and never echoed, two that differ are refused with nothing stored, and the
 * stored hash checks the typed password.
 */

import assert from "node:assert/strict";
import { verifyPassword } from "../../src/admin/secrets.ts";
import { openSqliteStore } from "../../src/store/sqlite/sqlite_store.ts";
import { MAIN } from "../support/daemon_process.ts";
import { tempDir } from "../support/stores.ts";
import { FIRST_FRAME_MS, FRAME_MS, openTerminal } from "./tui_terminal.ts";

const PASSWORD = "c0rrect-h0rse-battery";

async function addAt(terminal: { cwd: string }, db: string, second: string): Promise<string> {
  await using term = await openTerminal({
    argv: [
      Deno.execPath(),
      "run",
      "-A",
      MAIN,
      "users",
      "add",
      "ada",
      "--role",
      "admin",
      "--db",
      db,
    ],
    width: 100,
    height: 20,
    cwd: terminal.cwd,
    title: "users-add",
  });
  await term.waitForScreen("the first prompt", (s) => /password:\s*$/m.test(s), FIRST_FRAME_MS);
  await term.press(PASSWORD, "Enter");
  await term.waitForScreen("the second prompt", (s) => /again:\s*$/m.test(s), FRAME_MS);
  await term.press(second, "Enter");
  const screen = await term.waitForScreen(
    "the answer",
    (s) => /user ada added|differ/.test(s),
    FRAME_MS,
  );
  assert.ok(!screen.includes(PASSWORD), `the password was echoed:\n${screen}`);
  assert.ok(!screen.includes(second), `the password was echoed:\n${screen}`);
  return screen;
}

Deno.test("jobs users add asks for the password twice at a real terminal, without echo", async () => {
  const dir = await tempDir();
  try {
    const db = `${dir.path}/jobs.db`;
    const refused = await addAt({ cwd: dir.path }, db, "another-password");
    assert.match(refused, /differ/, refused);
    {
      const store = await openSqliteStore(db);
      try {
        assert.equal(await store.principalSecretHash({ kind: "person", name: "ada" }), null);
      } finally {
        await store.close();
      }
    }
    const added = await addAt({ cwd: dir.path }, db, PASSWORD);
    assert.match(added, /user ada added: admin/, added);
    const store = await openSqliteStore(db);
    try {
      const held = await store.principalSecretHash({ kind: "person", name: "ada" });
      assert.ok(held, "ada is stored");
      assert.ok(await verifyPassword(PASSWORD, held.secretHash), "the typed password checks");
      assert.ok(!(await verifyPassword("another-password", held.secretHash)));
    } finally {
      await store.close();
    }
  } finally {
    await dir.cleanup();
  }
});
