/**
 * `jobs users` and `jobs tokens`: the bootstrap of the first admin on a
 * store that does not exist yet, the password asked twice at a terminal or
 * read once from stdin (refused empty, different or on several lines),
 * every change audited with the OS user, the listing as a table and as
 * JSON with no hash, and a token's secret printed once and never again.
 */

import assert from "node:assert/strict";
import { authenticatePerson } from "../../src/admin/people.ts";
import { authenticateToken } from "../../src/admin/tokens.ts";
import { runJobs, withFiles } from "../support/cli.ts";
import { withStore } from "../support/stores.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const ENV = { USER: "root" };
const DAY = 86_400_000;

Deno.test("jobs users add bootstraps the first admin on a new store; the password is read once from stdin", async () => {
  await withFiles("version: 1\nschedules: []\n", async ({ db }) => {
    const added = await runJobs(["users", "add", "ada", "--role", "admin", "--db", db], {
      now: NOW,
      env: ENV,
      stdin: "correct horse\n",
    });
    assert.equal(added.code, 0, added.err);
    assert.equal(added.out, "user ada added: admin; installation-wide");
    assert.ok(!added.out.includes("correct horse") && !added.err.includes("correct horse"));

    const listed = await runJobs(["users", "list", "--db", db, "--json"], { now: NOW, env: ENV });
    assert.equal(listed.code, 0, listed.err);
    assert.deepEqual(JSON.parse(listed.out), [{
      name: "ada",
      displayName: null,
      roles: ["admin"],
      tenant: null,
      disabled: false,
      lastSignInAt: null,
      createdBy: "root",
      createdAt: "2026-06-01T09:00:00.000Z",
      updatedAt: "2026-06-01T09:00:00.000Z",
    }]);
    await withStore(db, async (store) => {
      assert.equal((await authenticatePerson(store, "ada", "correct horse", NOW))?.name, "ada");
      const [row] = await store.auditList({ target: "user:ada" });
      assert.deepEqual([row?.action, row?.actor], ["user.add", "root"]);
      assert.ok(!JSON.stringify(row).includes("correct horse"));
    });
  });
});

Deno.test("jobs users add asks twice at a terminal and refuses two different or empty passwords", async () => {
  await withFiles("version: 1\nschedules: []\n", async ({ db }) => {
    const run = (args: string[], typed?: string[], stdin?: string) =>
      runJobs([...args, "--db", db], {
        now: NOW,
        env: ENV,
        ...(typed ? { typed } : {}),
        ...(stdin === undefined ? {} : { stdin }),
      });
    const differ = await run(["users", "add", "ada", "--role", "admin"], ["one pass", "one pasz"]);
    assert.equal(differ.code, 1);
    assert.equal(
      differ.err.split("\n").at(-1),
      "jobs users add: the two passwords differ; nothing was changed",
    );
    const empty = await run(["users", "add", "ada", "--role", "admin"], ["", ""]);
    assert.equal(empty.code, 1);
    assert.match(empty.err, /jobs users add: the password is empty/);
    const lines = await run(["users", "add", "ada", "--role", "admin"], undefined, "a\nb\n");
    assert.equal(lines.code, 1);
    assert.match(lines.err, /holds more than one line; nothing was changed/);
    const none = await run(["users", "add", "ada", "--role", "admin"], undefined, "");
    assert.equal(none.code, 1);
    assert.match(none.err, /the password is empty/);

    const typed = await run(
      ["users", "add", "grace", "--role", "operator", "--role", "approver", "--tenant", "acme"],
      ["same pass", "same pass"],
    );
    assert.equal(typed.code, 0, typed.err);
    assert.equal(typed.err, "password: \nthe same password again: ");
    assert.equal(typed.out, "user grace added: operator, approver; tenant acme");
    await withStore(db, async (store) => {
      assert.deepEqual((await store.principalsList({})).map((p) => p.name), ["grace"]);
    });
  });
});

Deno.test("jobs users refuses a bad role, name or tenant before asking, and a taken or unknown name", async () => {
  await withFiles("version: 1\nschedules: []\n", async ({ db }) => {
    const run = (args: string[]) =>
      runJobs([...args, "--db", db], { now: NOW, env: ENV, stdin: "pw\n", typed: [] });
    const role = await run(["users", "add", "ada", "--role", "admn"]);
    assert.equal(role.code, 2);
    assert.equal(
      role.err,
      `jobs users add: "admn" is not a role (viewer, operator, approver, admin); did you mean "admin"?`,
    );
    const tenant = await run(["users", "add", "ada", "--role", "admin", "--tenant", "a b"]);
    assert.equal(tenant.code, 2);
    assert.match(tenant.err, /^jobs users add: "a b" is not a tenant's name/);
    const noRole = await run(["users", "add", "ada"]);
    assert.equal(noRole.code, 2);
    assert.match(noRole.err, /--role <role>/);
    const bare = await runJobs(["users"], { now: NOW, env: ENV });
    assert.equal(bare.code, 2);
    assert.match(bare.err, /^jobs users: name a command: add, list, set, disable, enable, remove/);
    const typo = await runJobs(["users", "lsit"], { now: NOW, env: ENV });
    assert.match(typo.err, /unknown command "lsit"; did you mean "list"\?/);

    const ok = await runJobs(["users", "add", "ada", "--role", "admin", "--db", db], {
      now: NOW,
      env: ENV,
      stdin: "pw\n",
    });
    assert.equal(ok.code, 0, ok.err);
    const again = await runJobs(["users", "add", "ada", "--role", "viewer", "--db", db], {
      now: NOW,
      env: ENV,
      stdin: "pw\n",
    });
    assert.equal(again.code, 1);
    assert.equal(again.err, `jobs users add: a person "ada" exists already`);
    const unknown = await run(["users", "disable", "bob"]);
    assert.equal(unknown.code, 1);
    assert.equal(unknown.err, `jobs users disable: no person "bob"`);
  });
});

Deno.test("jobs users set, disable, enable and remove change the person and are audited", async () => {
  await withFiles("version: 1\nschedules: []\n", async ({ db }) => {
    const run = (args: string[], now: number, stdin = "") =>
      runJobs([...args, "--db", db], { now, env: ENV, stdin });
    assert.equal(
      (await run(["users", "add", "ada", "--role", "admin"], NOW, "old pass\n")).code,
      0,
    );
    const set = await run(
      ["users", "set", "ada", "--role", "operator", "--tenant", "acme", "--display-name", "Ada L."],
      NOW + 1,
    );
    assert.equal(set.code, 0, set.err);
    assert.equal(set.out, "user ada: operator; tenant acme; shown as Ada L.");
    const widen = await run(
      ["users", "set", "ada", "--no-tenant", "--password"],
      NOW + 2,
      "new pass\n",
    );
    assert.equal(widen.code, 0, widen.err);
    assert.equal(
      widen.out,
      "user ada: operator; installation-wide; shown as Ada L.; password changed",
    );
    const nothing = await run(["users", "set", "ada"], NOW + 3);
    assert.equal(nothing.code, 2);
    assert.match(nothing.err, /^jobs users set: nothing to change/);

    const disabled = await run(["users", "disable", "ada", "--reason", "on leave"], NOW + 4);
    assert.equal(disabled.out, "user ada disabled");
    const table = await run(["users", "list"], NOW + 5);
    assert.deepEqual(table.out.split("\n"), [
      "NAME  DISPLAY NAME  ROLES     TENANT  STATE     LAST SIGN-IN  CREATED",
      "ada   Ada L.        operator  -       disabled  never         2026-06-01T09:00:00.000Z by root",
    ]);
    await withStore(db, async (store) => {
      assert.equal(await authenticatePerson(store, "ada", "new pass", NOW), null, "disabled");
    });
    const enabled = await run(["users", "enable", "ada", "--json"], NOW + 6);
    assert.deepEqual(JSON.parse(enabled.out), { name: "ada", disabled: false, was: true });
    await withStore(db, async (store) => {
      assert.equal(await authenticatePerson(store, "ada", "old pass", NOW), null);
      assert.equal((await authenticatePerson(store, "ada", "new pass", NOW))?.name, "ada");
    });
    const removed = await run(["users", "remove", "ada", "--actor", "grace"], NOW + 7);
    assert.equal(removed.out, "user ada removed");
    const empty = await run(["users", "list"], NOW + 8);
    assert.equal(empty.out, "no people yet: jobsctl users add <name> --role admin adds the first");
    await withStore(db, async (store) => {
      const trail = await store.auditList({ target: "user:ada" });
      assert.deepEqual(trail.map((a) => [a.action, a.actor, a.reason]), [
        ["user.add", "root", null],
        ["user.set", "root", null],
        ["user.set", "root", null],
        ["user.disable", "root", "on leave"],
        ["user.enable", "root", null],
        ["user.remove", "grace", null],
      ]);
      assert.deepEqual(trail[2]?.details, { tenant: null, password: "changed" });
    });
  });
});

Deno.test("jobs users totp enrols an authenticator: the URI and a QR code shown once, never listed; again replaces it; remove forgets it", async () => {
  await withFiles("version: 1\nschedules: []\n", async ({ db }) => {
    const run = (args: string[], now: number, stdin = "") =>
      runJobs([...args, "--db", db], { now, env: ENV, stdin });
    assert.equal((await run(["users", "add", "bob", "--role", "approver"], NOW, "pw\n")).code, 0);
    const enrolled = await run(["users", "totp", "bob"], NOW + 1);
    assert.equal(enrolled.code, 0, enrolled.err);
    const lines = enrolled.out.split("\n");
    assert.equal(
      lines[0],
      "user bob: scan this with an authenticator app, now: it is shown once",
    );
    assert.ok(lines.length > 12, "a QR code of several lines");
    const uri = lines.at(-1)!;
    assert.match(uri, /^otpauth:\/\/totp\/jobs:bob\?/);
    const secret = new URL(uri).searchParams.get("secret")!;
    await withStore(db, async (store) => {
      assert.equal((await store.totpSecret({ person: "bob" }))?.secret, secret);
      const [, row] = await store.auditList({ target: "user:bob" });
      assert.deepEqual([row?.action, row?.actor, row?.details], ["user.totp", "root", {
        replaced: false,
      }]);
    });
    const listed = await run(["users", "list", "--json"], NOW + 2);
    assert.ok(!listed.out.includes(secret), "no listing shows the seed");

    const again = await run(["users", "totp", "bob", "--json"], NOW + 3);
    assert.equal(again.code, 0, again.err);
    const answer = JSON.parse(again.out);
    assert.equal(answer.replaced, true);
    assert.notEqual(new URL(answer.uri).searchParams.get("secret"), secret);
    const nobody = await run(["users", "totp", "nobody"], NOW + 4);
    assert.equal(nobody.code, 1);
    assert.equal(nobody.err, `jobs users totp: no person "nobody"`);

    assert.equal((await run(["users", "remove", "bob"], NOW + 5)).code, 0);
    await withStore(db, async (store) => {
      assert.equal(await store.totpEnrolment({ person: "bob" }), null);
    });
  });
});

Deno.test("jobs tokens create prints the secret once; list never shows it; revoke ends it", async () => {
  await withFiles("version: 1\nschedules: []\n", async ({ db }) => {
    const run = (args: string[], now = NOW) => runJobs([...args, "--db", db], { now, env: ENV });
    const created = await run([
      "tokens",
      "create",
      "--name",
      "ci",
      "--role",
      "operator",
      "--tenant",
      "acme",
      "--expires",
      "30d",
      "--json",
    ]);
    assert.equal(created.code, 0, created.err);
    const json = JSON.parse(created.out);
    assert.deepEqual({ ...json, token: "..." }, {
      name: "ci",
      token: "...",
      roles: ["operator"],
      tenant: "acme",
      expiresAt: "2026-07-01T09:00:00.000Z",
    });
    assert.match(json.token, /^jobs_[\w-]{43}$/);

    const text = await run(["tokens", "create", "--name", "cron", "--role", "viewer"]);
    assert.equal(text.code, 0, text.err);
    const [head, secret, note] = text.out.split("\n");
    assert.equal(head, "token cron created: viewer; installation-wide; never expires");
    assert.match(secret!, /^jobs_[\w-]{43}$/);
    assert.equal(
      note,
      "this is the only time the secret is shown (it is stored hashed): keep it now; " +
        "jobsctl tokens revoke cron ends it",
    );

    await withStore(db, async (store) => {
      assert.equal((await authenticateToken(store, json.token, NOW + DAY))?.name, "ci");
    });
    const listed = await run(["tokens", "list", "--json"], NOW + 2 * DAY);
    assert.ok(!listed.out.includes(json.token) && !listed.out.includes(secret!));
    assert.ok(!listed.out.includes("sha256"));
    assert.deepEqual(JSON.parse(listed.out).map((t: { name: string }) => t.name), ["ci", "cron"]);
    assert.equal(JSON.parse(listed.out)[0].lastUsedAt, "2026-06-02T09:00:00.000Z");
    const table = await run(["tokens", "list"], NOW + 31 * DAY);
    assert.deepEqual(table.out.split("\n"), [
      "NAME  ROLES     TENANT  EXPIRES                           LAST USED                 CREATED",
      "ci    operator  acme    expired 2026-07-01T09:00:00.000Z  2026-06-02T09:00:00.000Z  2026-06-01T09:00:00.000Z by root",
      "cron  viewer    -       never                             never                     2026-06-01T09:00:00.000Z by root",
    ]);

    const taken = await run(["tokens", "create", "--name", "ci", "--role", "viewer"]);
    assert.equal(taken.code, 1);
    assert.equal(taken.err, `jobs tokens create: a token "ci" exists already`);
    const badExpiry = await run([
      "tokens",
      "create",
      "--name",
      "x",
      "--role",
      "viewer",
      "--expires",
      "soon",
    ]);
    assert.equal(badExpiry.code, 2);
    assert.match(badExpiry.err, /^jobs tokens create: option "--expires <duration>"/);

    const revoked = await run(["tokens", "revoke", "ci", "--reason", "rotated"]);
    assert.equal(revoked.code, 0, revoked.err);
    assert.equal(revoked.out, "token ci revoked");
    const gone = await run(["tokens", "revoke", "ci"]);
    assert.equal(gone.code, 1);
    assert.equal(gone.err, `jobs tokens revoke: no token "ci"`);
    await withStore(db, async (store) => {
      assert.equal(await authenticateToken(store, json.token, NOW + DAY), null);
      const trail = await store.auditList({ target: "token:ci" });
      assert.deepEqual(trail.map((a) => [a.action, a.actor, a.reason]), [
        ["token.create", "root", null],
        ["token.revoke", "root", "rotated"],
      ]);
      assert.ok(!JSON.stringify(trail).includes(json.token));
    });
  });
});
