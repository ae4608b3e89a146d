/**
 * `jobs sessions` and `jobs console`: the console's sessions listed by
 * handle (never an id or a hash) and revoked by a handle's prefix or per
 * person, audited with the OS user; `jobs console` prints where to open
 * the console and, on a store with nobody in it, how to add the first
 * admin.
 */

import assert from "node:assert/strict";
import { addPerson } from "../../src/admin/people.ts";
import {
  DEFAULT_TIMEOUTS,
  resolveSession,
  sessionHandle,
  signIn,
} from "../../src/admin/sessions.ts";
import { consoleTimeouts } from "../../src/cli/daemon.ts";
import { CommandFailed } from "../../src/cli/program.ts";
import { runJobs, withFiles } from "../support/cli.ts";
import { withStore } from "../support/stores.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const ENV = { USER: "root" };

Deno.test("jobs sessions list shows handles; revoke ends one by prefix or every one of --user", async () => {
  await withFiles("version: 1\nschedules: []\n", async ({ db }) => {
    const run = (args: string[]) => runJobs([...args, "--db", db], { now: NOW, env: ENV });
    assert.equal((await run(["migrate"])).code, 0);
    const empty = await runJobs(["console", "--db", db], { now: NOW, env: ENV });
    assert.equal(empty.code, 0, empty.err);
    assert.match(empty.out, /^http:\/\/127\.0\.0\.1:9464\/$/m);
    assert.match(empty.out, /users add <name> --role admin adds the first admin/);
    const ids = await withStore(db, async (store) => {
      const root = { actor: "root", reason: null, now: NOW };
      await addPerson(store, { name: "ada", roles: ["admin"], password: "pw" }, root, "host");
      const a = (await signIn(store, "ada", "pw", { now: NOW, address: "127.0.0.1" }))!;
      const b = (await signIn(store, "ada", "pw", { now: NOW + 1 }))!;
      return [a, b];
    });
    const none = await runJobs(["console", "--db", db], { now: NOW, env: ENV });
    assert.ok(!none.out.includes("first admin"), none.out);

    const listed = await run(["sessions", "list", "--json"]);
    assert.equal(listed.code, 0, listed.err);
    const rows = JSON.parse(listed.out) as { handle: string; person: string }[];
    assert.deepEqual(rows.map((r) => r.handle), ids.reverse().map((s) => sessionHandle(s.session)));
    for (const s of ids) {
      assert.ok(!listed.out.includes(s.id) && !listed.out.includes(s.session.idHash));
    }
    const table = await run(["sessions", "list"]);
    assert.match(table.out, /^HANDLE +PERSON/);

    const bad = await run(["sessions", "revoke", "xyz"]);
    assert.equal(bad.code, 2);
    const both = await run(["sessions", "revoke"]);
    assert.equal(both.code, 2);
    const one = await run(["sessions", "revoke", rows[0]!.handle.slice(0, 8)]);
    assert.equal(one.code, 0, one.err);
    assert.equal(one.out, `revoked session ${rows[0]!.handle}`);
    const all = await run(["sessions", "revoke", "--user", "ada", "--reason", "laptop lost"]);
    assert.equal(all.code, 0, all.err);
    assert.equal(all.out, `revoked session ${rows[1]!.handle}`);
    await withStore(db, async (store) => {
      for (const s of ids) assert.equal(await resolveSession(store, s.id, NOW + 2), null);
      const audit = await store.auditList({ target: "user:ada" });
      const revoke = audit.find((a) => a.action === "session.revoke");
      assert.deepEqual([revoke?.actor, revoke?.reason], ["root", "laptop lost"]);
    });
  });
});

Deno.test("a daemon's console timeouts come from JOBS_CONSOLE_SESSION_IDLE and _ABSOLUTE, else the defaults", () => {
  const env = (values: Record<string, string>) => (name: string) => values[name];
  assert.deepEqual(consoleTimeouts(env({})), DEFAULT_TIMEOUTS);
  assert.deepEqual(
    consoleTimeouts(env({ JOBS_CONSOLE_SESSION_IDLE: "2s", JOBS_CONSOLE_SESSION_ABSOLUTE: "8h" })),
    { idleMs: 2000, absoluteMs: 8 * 3_600_000 },
  );
  for (const bad of ["soon", "10ms"]) {
    assert.throws(
      () => consoleTimeouts(env({ JOBS_CONSOLE_SESSION_IDLE: bad })),
      (e) =>
        e instanceof CommandFailed && e.exitCode === 2 &&
        e.message.includes(`JOBS_CONSOLE_SESSION_IDLE "${bad}"`),
    );
  }
});
