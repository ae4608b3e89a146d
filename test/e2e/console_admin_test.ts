/**
 * The console's Audit, People, Tokens and Sessions pages in a real browser
 * (Debian's Chromium, driven by playwright-core) against a real
 * `jobs daemon`, on SQLite and on PostgreSQL: an admin adds a person (a
 * hostile display name rendering inert), who can then sign in; creates a
 * token whose secret is shown once, works against `/api/v1/me` and is not
 * on the tokens page afterwards, then revokes it (401 afterwards); revokes
 * another person's session (that browser is sent to `/login` on its next
 * page); the audit page filters by actor and action and shows these rows
 * with the admin's name (a hostile reason, bidi overrides included, rendering
 * inert); an operator
 * sees no admin link and is refused the pages and a hand-made POST (403);
 * a tenant's admin sees a note and nobody. No page reports a console
 * error, a page error, a dialog or a CSP violation. Screenshots `audit`,
 * `people`, `tokens` and `sessions` are written under
 * `test/e2e/output/console/<backend>/`.
 */

import assert from "node:assert/strict";
import { escapeControl } from "../../src/text/escape.ts";
import { consoleFixture } from "./console_support.ts";

const HOSTILE = `<script>alert(1)</script>"onmouseover=alert(2) <img src=x onerror=alert(3)>`;
const REASON = `rotated \u202Eevil\u202C <b onmouseover=alert(4)>x</b>`;

for (const backend of ["sqlite", "postgres"] as const) {
  Deno.test({
    name: `${backend}: the console's audit and admin pages in Chromium`,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async (t) => {
      await using c = await consoleFixture(backend);
      await c.addPerson("ada", ["admin"], "correct horse");
      await c.addPerson("tina", ["admin"], "tenant horse", "acme");
      const problems: string[] = [];
      const admin = await c.signedIn("ada", "correct horse");
      const { page } = admin;
      let bob: Awaited<ReturnType<typeof c.signedIn>> | null = null;
      let secret = "";

      await t.step("an admin adds a person, who can then sign in", async () => {
        await page.goto(`${c.url}/people`);
        assert.equal(await page.textContent("h1"), "People");
        await page.fill("#new-name", "bob");
        await page.fill("#new-display-name", HOSTILE);
        await page.check("#new-role-operator");
        await page.fill("#new-password", "bob horse");
        await page.fill("#new-password-again", "bob horse");
        await Promise.all([
          page.waitForURL(/\/people\?done=added/),
          page.click("form[data-form=add-person] button[type=submit]"),
        ]);
        assert.match(await page.textContent("[role=status]") ?? "", /Added bob\./);
        const row = page.locator("tr[data-person-row=bob]");
        assert.equal(await row.locator("[data-display-name]").textContent(), HOSTILE);
        assert.equal(await page.locator("tr[data-person-row=bob] script").count(), 0);
        assert.match(await row.textContent() ?? "", /operator/);
        await c.screenshot(admin, "people");
        bob = await c.signedIn("bob", "bob horse");
        assert.equal(await bob.page.textContent("[data-person]"), "bob");
      });

      await t.step("a token's secret is shown once, works, and is revoked", async () => {
        await page.goto(`${c.url}/tokens`);
        await page.fill("#token-name", "ci");
        await page.check("#token-role-operator");
        await page.fill("#token-expires", "30d");
        const [answer] = await Promise.all([
          page.waitForResponse((r) =>
            r.request().method() === "POST" && r.url().endsWith("/tokens")
          ),
          page.click("form[data-form=create-token] button[type=submit]"),
        ]);
        assert.equal(answer.status(), 200);
        assert.equal(await answer.headerValue("cache-control"), "no-store");
        await page.waitForSelector("[data-secret]");
        secret = (await page.textContent("[data-secret]"))!.trim();
        assert.match(await page.textContent("section.secret") ?? "", /shown this once/);
        const me = await fetch(`${c.url}/api/v1/me`, {
          headers: { authorization: `Bearer ${secret}` },
        });
        assert.equal(me.status, 200);
        assert.equal((await me.json()).name, "ci");
        await page.goto(`${c.url}/tokens`);
        assert.equal(await page.locator("tr[data-token-row=ci]").count(), 1);
        assert.ok(!(await page.content()).includes(secret), "the secret is never shown again");
        await c.screenshot(admin, "tokens");
        await page.fill("tr[data-token-row=ci] input[name=reason]", REASON);
        await Promise.all([
          page.waitForURL(/\/tokens\?done=revoked/),
          page.click("tr[data-token-row=ci] button[type=submit]"),
        ]);
        assert.equal(await page.locator("tr[data-token-row=ci]").count(), 0);
        const after = await fetch(`${c.url}/api/v1/me`, {
          headers: { authorization: `Bearer ${secret}` },
        });
        assert.equal(after.status, 401);
        await after.body?.cancel();
      });

      await t.step("an admin revokes another person's session", async () => {
        await page.goto(`${c.url}/sessions`);
        const mine = page.locator("tr[data-session-person=ada] [data-current]");
        assert.equal(await mine.count(), 1, "the admin's own session is marked");
        const theirs = page.locator("tr[data-session-person=bob]");
        assert.equal(await theirs.count(), 1);
        assert.equal(await theirs.locator("[data-current]").count(), 0);
        await c.screenshot(admin, "sessions");
        await Promise.all([
          page.waitForURL(/\/sessions\?done=revoked/),
          theirs.locator("button[type=submit]").click(),
        ]);
        assert.equal(await page.locator("tr[data-session-person=bob]").count(), 0);
        await bob!.page.goto(`${c.url}/`);
        assert.equal(new URL(bob!.page.url()).pathname, "/login");
        problems.push(...bob!.problems());
        await bob!.context.close();
      });

      await t.step("the audit page filters by actor and action, naming the admin", async () => {
        await page.goto(`${c.url}/audit`);
        await page.fill("input[name=actor]", "ada");
        await page.selectOption("select[name=action]", "token.revoke");
        await Promise.all([
          page.waitForURL(/\/audit\?/),
          page.click("form.filters button[type=submit]"),
        ]);
        const query = new URL(page.url()).searchParams;
        assert.deepEqual([query.get("actor"), query.get("action")], ["ada", "token.revoke"]);
        const rows = page.locator("table[data-table=audit] tbody tr");
        assert.equal(await rows.count(), 1);
        assert.equal(await rows.locator("[data-actor]").textContent(), "ada");
        assert.equal(await rows.locator("[data-target]").textContent(), "token:ci");
        assert.equal(
          await rows.locator("[data-reason]").textContent(),
          escapeControl(REASON),
          "the bidi overrides show as escapes",
        );
        assert.equal(await page.locator("table[data-table=audit] b").count(), 0);
        const expected: [string, string][] = [
          ["user.add", "user:bob"],
          ["token.create", "token:ci"],
          ["session.revoke", "session:"],
        ];
        for (const [action, target] of expected) {
          await page.goto(`${c.url}/audit?${new URLSearchParams({ actor: "ada", action })}`);
          const found = await page.locator("table[data-table=audit] tbody tr").allTextContents();
          assert.equal(found.length, 1, `${action}: ${found.join(" | ")}`);
          assert.ok(found[0]!.includes(target), found[0]);
        }
        await page.goto(`${c.url}/audit?actor=ada`);
        await c.screenshot(admin, "audit");
        const actors = await page.locator("table[data-table=audit] [data-actor]").allTextContents();
        assert.ok(actors.length >= 5 && actors.every((a) => a === "ada"), actors.join(", "));
      });

      await t.step("an operator sees no admin page and is refused its actions", async () => {
        const w = await c.signedIn("bob", "bob horse");
        const nav = await w.page.locator("nav.pages a").allTextContents();
        assert.ok(nav.includes("Audit"), nav.join(", "));
        for (const label of ["People", "Tokens", "Sessions"]) assert.ok(!nav.includes(label));
        const people = await w.page.goto(`${c.url}/people`);
        assert.equal(people?.status(), 403);
        const byHand = await w.context.request.post(`${c.url}/tokens`, {
          headers: { origin: c.url },
          form: { name: "stolen", role: "admin" },
          maxRedirects: 0,
        });
        assert.equal(byHand.status(), 403);
        assert.equal(await c.store.principalGet({ kind: "token", name: "stolen" }), null);
        // The one 403 the browser was sent to on purpose, which Chromium logs as an error.
        const refusedLoad = "console error: Failed to load resource: the server responded with " +
          "a status of 403 (Forbidden)";
        const seen = w.problems();
        assert.equal(seen.filter((p) => p === refusedLoad).length, 1, seen.join("\n"));
        problems.push(...seen.filter((p) => p !== refusedLoad));
        await w.context.close();
      });

      await t.step("a tenant's admin sees a note and nobody", async () => {
        const w = await c.signedIn("tina", "tenant horse");
        for (const path of ["/people", "/tokens", "/sessions"]) {
          await w.page.goto(`${c.url}${path}`);
          assert.equal(await w.page.locator("[data-tenant-note]").count(), 1, path);
          assert.equal(await w.page.locator("table").count(), 0, path);
          assert.ok(!(await w.page.content()).includes("bob"), path);
        }
        problems.push(...w.problems());
        await w.context.close();
      });

      await t.step(
        "no page reported a console error, a page error, a dialog or a CSP violation",
        () => {
          problems.push(...admin.problems());
          assert.deepEqual(problems, []);
        },
      );
      await admin.context.close();
    },
  });
}
