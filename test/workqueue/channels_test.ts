/**
 * The channels of confirmation codes (src/workqueue/channels.ts) when they
 * fail: a webhook that answers 500 or is not there, a command that overruns
 * its time on the injected clock (its group killed), an argv that cannot
 * start; each a DeliveryError naming the channel, never the code, and URL
 * credentials redacted. And the SMTP settings read from the environment.
 */

import assert from "node:assert/strict";
import { FakeClock } from "../../src/clock.ts";
import { waitUntil } from "../../src/testing.ts";
import {
  type CodeSummary,
  deliverCode,
  DeliveryError,
  mailText,
  smtpSettingsFromEnv,
} from "../../src/workqueue/channels.ts";

const CODE = "493817";
const SUMMARY: CodeSummary = {
  request: 7,
  manifest: "a".repeat(64),
  queue: "disputes",
  bulk: "release",
  count: 1,
  totals: { EUR: "1900" },
  requester: "ann",
  expiresAt: "2026-03-08T12:10:00.000Z",
};

async function failure(promise: Promise<unknown>): Promise<DeliveryError> {
  const error = await promise.then(() => null, (e: unknown) => e);
  assert.ok(error instanceof DeliveryError, `a DeliveryError, not ${error}`);
  assert.ok(!error.message.includes(CODE), error.message);
  return error;
}

Deno.test("a webhook answering 500 is not delivered: the status named, the URL's password redacted", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    await req.body?.cancel();
    return new Response("no", { status: 500 });
  });
  try {
    const url = `http://hook:s3cret@127.0.0.1:${server.addr.port}/codes`;
    const error = await failure(
      deliverCode({ kind: "webhook", url }, CODE, SUMMARY, { clock: new FakeClock() }),
    );
    assert.equal(error.channel, "webhook");
    assert.match(error.message, /answered 500/);
    assert.ok(!error.message.includes("s3cret"), error.message);
  } finally {
    await server.shutdown();
  }
  const gone = await failure(
    deliverCode(
      { kind: "webhook", url: `http://127.0.0.1:${server.addr.port}/codes` },
      CODE,
      SUMMARY,
      { clock: new FakeClock() },
    ),
  );
  assert.match(gone.message, /^webhook http:\/\/127\.0\.0\.1:\d+\/codes failed: /);
});

Deno.test("a command that overruns its time on the clock is killed and not delivered", async () => {
  const clock = new FakeClock();
  const sent = deliverCode(
    { kind: "command", argv: ["sleep", "30"], timeoutMs: 5_000 },
    CODE,
    SUMMARY,
    { clock },
  );
  await waitUntil("the command's timeout to be waited on", () => clock.sleepers > 0);
  clock.advance(5_000);
  const error = await failure(sent);
  assert.equal(error.message, `command channel "sleep" did not finish within 5000 ms`);
});

Deno.test("a command that cannot start, or an empty argv, is not delivered", async () => {
  const missing = await failure(
    deliverCode({ kind: "command", argv: ["/no/such/program"] }, CODE, SUMMARY, {
      clock: new FakeClock(),
    }),
  );
  assert.match(missing.message, /^command channel "\/no\/such\/program" cannot start: /);
  const empty = await failure(
    deliverCode({ kind: "command", argv: [] }, CODE, SUMMARY, { clock: new FakeClock() }),
  );
  assert.equal(empty.message, "command channel: the argv is empty");
});

Deno.test("a TOTP channel sends nothing", async () => {
  await deliverCode({ kind: "totp", role: "approver" }, CODE, SUMMARY, { clock: new FakeClock() });
});

Deno.test("smtpSettingsFromEnv() reads JOBS_SMTP_URL and JOBS_SMTP_FROM, refusing a bad URL or no sender", () => {
  assert.equal(smtpSettingsFromEnv({}), null);
  assert.equal(smtpSettingsFromEnv({ JOBS_SMTP_URL: " " }), null);
  assert.deepEqual(
    smtpSettingsFromEnv({
      JOBS_SMTP_URL: "smtps://mailer:pw@mail.example.com:465",
      JOBS_SMTP_FROM: "jobs@example.com",
    }),
    { url: "smtps://mailer:pw@mail.example.com:465", from: "jobs@example.com" },
  );
  assert.throws(
    () => smtpSettingsFromEnv({ JOBS_SMTP_URL: "http://u:pw@mail.example.com" }),
    (e: Error) =>
      /is not an smtp:\/\/ or smtps:\/\/ URL/.test(e.message) && !e.message.includes("pw@"),
  );
  assert.throws(
    () => smtpSettingsFromEnv({ JOBS_SMTP_URL: "smtp://mail.example.com" }),
    /JOBS_SMTP_FROM is not set/,
  );
});

Deno.test("mailText() says who asks, what and how much, then the code and its expiry", () => {
  assert.equal(
    mailText(CODE, SUMMARY),
    [
      'ann asks to confirm bulk action "release" of queue "disputes": 1 item totalling EUR 1900.',
      "",
      `Confirmation code: ${CODE}`,
      "",
      "It works once, until 2026-03-08T12:10:00.000Z.",
      `Manifest: ${"a".repeat(64)}`,
      "",
      "If you did not expect this, do not pass the code on.",
    ].join("\n"),
  );
});
