/**
 * `/readyz` over a PostgreSQL store whose server stops answering: a TCP
 * proxy in front of the shared server stalls (connections stay open,
 * nothing goes through), so the store's reads hang as on a paused server or
 * a network that drops every packet. The endpoint's deadline runs on a
 * FakeClock: an answer that comes without the clock moving waited for
 * nothing.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { startHttpServer } from "../../src/http/server.ts";
import { openPostgresStore } from "../../src/store/postgres/postgres_store.ts";
import { waitUntil } from "../../src/testing.ts";
import { dropTestSchema, POSTGRES_TEST_URL, testSchema } from "../support/backends.ts";
import { startTcpProxy } from "../support/tcp_proxy.ts";

/** GET `path`, failing with a message naming it when no answer comes within 10 s of real time. */
async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      signal: AbortSignal.timeout(10_000),
    });
    return { status: response.status, body: await response.text() };
  } catch (error) {
    throw new Error(`${path} got no answer within 10 s (${error})`);
  }
}

Deno.test({
  name: "/readyz on a PostgreSQL server that stopped answering: 503 at its deadline, then at once",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const schema = testSchema();
    await using proxy = startTcpProxy();
    const clock = new FakeClock();
    const store = await openPostgresStore(proxy.url(`${POSTGRES_TEST_URL}?schema=${schema}`), {
      now: clock.now(),
      max: 2,
    });
    const server = await startHttpServer({
      store,
      listen: "127.0.0.1:0",
      logger: () => {},
      clock,
      readyTimeoutMs: 500,
    });
    const port = server.addr!.port;
    try {
      assert.equal((await get(port, "/readyz")).status, 200);

      proxy.stall();
      const first = get(port, "/readyz");
      await waitUntil("the probe waits for its deadline", () => clock.sleepers === 1);
      clock.advance(500);
      assert.deepEqual(await first, {
        status: 503,
        body: "store did not answer within 500 ms\n",
      });
      // The read still hangs: the next probes answer without waiting for anything.
      for (let probe = 0; probe < 3; probe++) {
        const answer = await get(port, "/readyz");
        assert.equal(answer.status, 503);
        assert.match(
          answer.body,
          /^store did not answer: a read sent 500 ms ago is still waiting\n$/,
        );
      }

      // The server answers again: so does the hung read, and the node is ready.
      proxy.resume();
      await waitUntil("/readyz ready again", async () => {
        const answer = await get(port, "/readyz");
        if (answer.status === 503 && clock.sleepers > 0) clock.advance(500);
        return answer.status === 200;
      }, { timeoutMs: 20_000, intervalMs: 50 });
    } finally {
      proxy.resume();
      await server.close();
      await store.close();
      await proxy.close();
      await dropTestSchema(schema);
    }
  },
});
