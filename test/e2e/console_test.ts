/**
 * The web console in a real browser (Debian's Chromium, driven by
 * playwright-core) against a real `jobs daemon`, on SQLite and on
 * PostgreSQL: sign-in leads to the overview with the store's queues and
 * nodes (a hostile queue name rendering inert); a wrong password stays on
 * `/login` with one message; a POST from another origin is refused and
 * `/api/v1` does not take the cookie; the CSP header is exact; sign-out
 * ends the session (its old cookie no longer works); a session past its
 * idle timeout is sent to sign-in; and no page reports a console error, a
 * page error, a dialog or a CSP violation. Screenshots are written under
 * `test/e2e/output/console/<backend>/`.
 *
 * The `__Host-` cookie is `Secure`: Chromium keeps it over
 * `http://127.0.0.1` because loopback is a secure context, which the
 * sign-in steps prove.
 */

import assert from "node:assert/strict";
import { sessionHash } from "../../src/admin/sessions.ts";
import { CONTENT_SECURITY_POLICY, SESSION_COOKIE } from "../../src/console/security.ts";
import { waitUntil } from "../../src/testing.ts";
import { newJob } from "../support/backends.ts";
import { consoleFixture } from "./console_support.ts";

/** The idle timeout of these daemons: short enough to wait out, long enough for each step. */
const IDLE_MS = 10_000;
const HOSTILE_QUEUE = `<img src=x onerror=alert(1)>"onmouseover=alert(2)`;

for (const backend of ["sqlite", "postgres"] as const) {
  Deno.test({
    name:
      `${backend}: the web console in Chromium: sign-in, overview, refusals, sign-out, idle end`,
    sanitizeOps: false,
    sanitizeResources: false,
    fn: async (t) => {
      await using c = await consoleFixture(backend, {
        env: { JOBS_CONSOLE_SESSION_IDLE: `${IDLE_MS / 1000}s` },
      });
      await c.addPerson("ada", ["admin"], "correct horse");
      const now = Date.now();
      await c.store.jobsInsert({
        jobs: [
          newJob({ queue: "mail", scheduledAt: now + 3_600_000 }),
          newJob({ queue: "mail", scheduledAt: now + 3_600_000 }),
          newJob({ queue: HOSTILE_QUEUE, scheduledAt: now + 3_600_000 }),
        ],
        now,
      });
      // The last hour's throughput: two jobs of mail completed, one discarded (the daemon
      // serves other queues, so these are claimed and recorded here).
      await c.store.jobsInsert({
        jobs: [0, 1, 2].map(() => newJob({ queue: "mail", scheduledAt: now, maxAttempts: 1 })),
        now,
      });
      const { jobs: claimed } = await c.store.jobsClaim({
        queue: "mail",
        node: "e2e",
        limit: 3,
        now,
        leaseMs: 60_000,
      });
      assert.equal(claimed.length, 3);
      await c.store.jobsRecord({
        node: "e2e",
        now,
        results: claimed.map((j, i) => ({
          id: j.id,
          fence: j.fence,
          attempt: j.attempt,
          startedAt: j.attemptedAt,
          ...(i < 2 ? { outcome: "completed" as const } : {
            outcome: "discarded" as const,
            error: "boom",
          }),
        })),
      });
      const problems: string[] = [];

      await t.step("sign-in leads to the overview with the store's queues and nodes", async () => {
        const w = await c.signedIn("ada", "correct horse");
        const { page } = w;
        assert.equal(await page.textContent("h1"), "Overview");
        assert.equal(await page.textContent("[data-person]"), "ada");
        const queues = await page.locator("table[data-table=queues] tbody th").allTextContents();
        assert.ok(queues.includes("mail"), queues.join(", "));
        assert.ok(queues.includes(HOSTILE_QUEUE), "the hostile name shows as text");
        await waitUntil("the daemon's node on the overview", async () => {
          await page.reload();
          return (await page.locator("table[data-table=nodes] tbody th").allTextContents())
            .includes("console-1");
        }, { timeoutMs: 30_000, intervalMs: 500 });
        const cookies = await w.context.cookies();
        const cookie = cookies.find((k) => k.name === SESSION_COOKIE);
        assert.ok(cookie, "Chromium kept the __Host- Secure cookie over http://127.0.0.1");
        assert.deepEqual([cookie.httpOnly, cookie.secure, cookie.sameSite, cookie.path], [
          true,
          true,
          "Strict",
          "/",
        ]);
        // The last hour's charts are inline SVG with classes (no CSP violation below).
        assert.match(
          await page.locator("svg[data-chart=throughput]").getAttribute("aria-label") ?? "",
          /^Every queue, per minute: 2 completed, 1 failed attempt in the last hour$/,
        );
        assert.equal(
          await page.locator("svg[data-sparkline=mail]").getAttribute("aria-label"),
          "mail: 2 completed, 1 failed attempt in the last hour",
        );
        assert.equal(await page.textContent("[data-failed-today=mail]"), "1");
        await c.screenshot(w, "overview");
        problems.push(...w.problems());
        await w.context.close();
      });

      await t.step("a wrong password stays on /login with one message", async () => {
        const w = await c.open();
        await w.page.goto(`${c.url}/`);
        assert.equal(new URL(w.page.url()).pathname, "/login");
        await c.screenshot(w, "login");
        await w.page.fill("input[name=name]", "ada");
        await w.page.fill("input[name=password]", "wrong");
        await Promise.all([w.page.waitForLoadState(), w.page.click("button[type=submit]")]);
        assert.equal(new URL(w.page.url()).pathname, "/login");
        assert.equal(await w.page.locator("[role=alert]").count(), 1);
        assert.match(
          await w.page.textContent("[role=alert]") ?? "",
          /name or the password is wrong/,
        );
        await c.screenshot(w, "login-wrong-password");
        problems.push(...w.problems());
        await w.context.close();
      });

      await t.step(
        "another origin's POST is refused; /api/v1 does not take the cookie; the CSP is exact",
        async () => {
          const w = await c.signedIn("ada", "correct horse");
          const foreign = await w.context.request.post(`${c.url}/logout`, {
            headers: { origin: "http://evil.example" },
            maxRedirects: 0,
          });
          assert.equal(foreign.status(), 403);
          const crossSite = await w.context.request.post(`${c.url}/logout`, {
            headers: { "sec-fetch-site": "cross-site" },
            maxRedirects: 0,
          });
          assert.equal(crossSite.status(), 403);
          const api = await w.context.request.get(`${c.url}/api/v1/me`);
          assert.equal(api.status(), 401, "the API takes a bearer token, never the cookie");
          const page = await w.page.goto(`${c.url}/`);
          assert.equal(page?.status(), 200, "still signed in: the refused POSTs ended nothing");
          assert.equal(await page?.headerValue("content-security-policy"), CONTENT_SECURITY_POLICY);
          assert.equal(await page?.headerValue("cache-control"), "no-store");
          problems.push(...w.problems());
          await w.context.close();
        },
      );

      await t.step("sign-out ends the session: its old cookie no longer works", async () => {
        const w = await c.signedIn("ada", "correct horse");
        const cookie = (await w.context.cookies()).find((k) => k.name === SESSION_COOKIE)!;
        await Promise.all([w.page.waitForURL(`${c.url}/login`), w.page.click("text=Sign out")]);
        assert.equal(await c.store.sessionGet({ idHash: sessionHash(cookie.value) }), null);
        const again = await c.open();
        await again.context.addCookies([cookie]);
        await again.page.goto(`${c.url}/`);
        assert.equal(new URL(again.page.url()).pathname, "/login");
        problems.push(...w.problems(), ...again.problems());
        await w.context.close();
        await again.context.close();
      });

      await t.step("a session idle past its timeout is sent to sign-in", async () => {
        const w = await c.signedIn("ada", "correct horse");
        const cookie = (await w.context.cookies()).find((k) => k.name === SESSION_COOKIE)!;
        // Leave the overview, whose live stream touched the session when it connected (maybe
        // after this test first looked): from here nothing touches it.
        await w.page.goto("about:blank");
        const session = await c.store.sessionGet({ idHash: sessionHash(cookie.value) });
        assert.ok(session);
        // Wait for the daemon's clock to pass its end, reading when it was last seen each time.
        await waitUntil("the session's idle timeout to pass", async () => {
          const now = await c.store.sessionGet({ idHash: session.idHash });
          return now !== null && Date.now() > now.lastSeenAt + IDLE_MS + 200;
        }, { timeoutMs: IDLE_MS * 4, intervalMs: 250 });
        await w.page.goto(`${c.url}/`);
        assert.equal(new URL(w.page.url()).pathname, "/login");
        assert.match(await w.page.textContent("[role=alert]") ?? "", /session ended/);
        assert.equal(await c.store.sessionGet({ idHash: session.idHash }), null);
        await c.screenshot(w, "login-session-ended");
        problems.push(...w.problems());
        await w.context.close();
      });

      await t.step(
        "the watcher itself sees a CSP violation: an inline style added by hand",
        async () => {
          const w = await c.open();
          await w.page.goto(`${c.url}/login`);
          await w.page.evaluate(`document.head.append(Object.assign(document.createElement("style"),
          { textContent: "body { color: red }" }))`);
          await waitUntil(
            "the violation to be reported",
            () => w.problems().some((p) => p.startsWith("CSP violation: style-src")),
            { timeoutMs: 10_000, intervalMs: 100 },
          );
          await w.context.close();
        },
      );

      await t.step(
        "no page reported a console error, a page error, a dialog or a CSP violation",
        () => {
          assert.deepEqual(problems, []);
        },
      );
    },
  });
}
