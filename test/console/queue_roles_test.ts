/**
 * A work queue's role opens no page of the console outside the work queues:
 * a person holding only `support` signs in (their session carries the
 * role), and every route behind a session but those of work queues refuses
 * them (403), pages and actions alike.
 */

import assert from "node:assert/strict";
import { addPerson } from "../../src/admin/people.ts";
import { FakeClock } from "../../src/clock.ts";
import { consoleApp, consoleRoutes } from "../../src/console/app.ts";
import { SESSION_COOKIE } from "../../src/console/security.ts";
import { BACKENDS } from "../support/backends.ts";
import { resolveSession } from "../../src/admin/sessions.ts";

const ORIGIN = "http://127.0.0.1:9464";

/**
 * Work queues' pages decide by the queue's roles, not by the route table
 * alone: those of `/work`, and a manifest's code request and its page (the
 * door finds the queue by the manifest). Confirming stays the approver's.
 */
const WORK_ROUTES = /^\S+ \/(?:work(?:[/-]|$)|bulk-money\/:manifest(?:\/request)?$)/;

for (const backend of BACKENDS) {
  Deno.test(`${backend.name}: a support person gets 403 on every console route outside work queues`, async () => {
    const clock = new FakeClock();
    const h = await backend.open(clock.now());
    try {
      const app = consoleApp({
        store: h.store,
        clock,
        logger: () => {},
        timeouts: { idleMs: 60_000, absoluteMs: 3_600_000 },
      });
      const root = { actor: "root", reason: null, now: clock.now() };
      for (const [name, roles] of [["sam", ["support"]], ["val", ["viewer"]]] as const) {
        await addPerson(h.store, { name, roles: [...roles], password: "pw" }, root, "host");
      }
      const call = async (method: string, path: string, cookie?: string, body?: string) => {
        const headers: Record<string, string> = { "sec-fetch-site": "same-origin" };
        if (cookie) headers.cookie = `${SESSION_COOKIE}=${cookie}`;
        if (body !== undefined) headers["content-type"] = "application/x-www-form-urlencoded";
        const response = await app.fetch(
          new Request(`${ORIGIN}${path}`, {
            method,
            headers,
            redirect: "manual",
            ...(body === undefined ? {} : { body }),
          }),
          { remote: "127.0.0.1" },
        );
        return { status: response.status, headers: response.headers, text: await response.text() };
      };
      const signIn = async (name: string) => {
        const answer = await call("POST", "/login", undefined, `name=${name}&password=pw`);
        assert.equal(answer.status, 303, answer.text);
        return /^__Host-jobs_session=([\w-]+);/.exec(answer.headers.get("set-cookie") ?? "")![1]!;
      };
      const sam = await signIn("sam");
      const person = await resolveSession(h.store, sam, clock.now());
      assert.deepEqual(person?.roles, ["support"], "the session carries the queue's role");

      const routes = consoleRoutes(app).filter((r) => !r.isPublic && !WORK_ROUTES.test(r.key));
      assert.ok(routes.length > 20, `only ${routes.length} routes`);
      for (const { key } of routes) {
        const [method, pattern] = key.split(" ") as [string, string];
        const path = pattern.replaceAll(/:(\w+)/g, "x1");
        const answer = await call(method, path, sam, method === "POST" ? "reason=r" : undefined);
        assert.equal(answer.status, 403, `${key}: ${answer.status}`);
        assert.match(answer.text, /needs (the role|one of the roles)|no role may use/, key);
      }
      // A viewer's session opens the overview: the refusals above are the role's.
      assert.equal((await call("GET", "/", await signIn("val"))).status, 200);
    } finally {
      await h.close();
    }
  });
}
