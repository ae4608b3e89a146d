import assert from "node:assert/strict";
import {
  ago,
  DurationError,
  formatDuration,
  parseDuration,
  tryParseDuration,
} from "../../src/text/durations.ts";

const NOW = Date.UTC(2026, 5, 1, 9);
const MINUTE = 60_000;

Deno.test("parseDuration() reads each unit and combinations largest first", () => {
  assert.equal(parseDuration("250ms"), 250);
  assert.equal(parseDuration("90s"), 90_000);
  assert.equal(parseDuration("15m"), 900_000);
  assert.equal(parseDuration("1h30m"), 5_400_000);
  assert.equal(parseDuration("7d"), 604_800_000);
  assert.equal(parseDuration("2w"), 1_209_600_000);
  assert.equal(parseDuration("1d2h3m4s5ms"), 93_784_005);
  assert.equal(parseDuration(" 15m "), 900_000);
});

Deno.test("parseDuration() refuses zero and negative durations", () => {
  for (const text of ["0s", "0ms", "0h0m", "-5m", "-1s"]) {
    assert.deepEqual(tryParseDuration(text), { ok: false, reason: "must be more than zero" }, text);
  }
});

Deno.test("parseDuration() refuses garbage, bare numbers and decimals", () => {
  for (const text of ["", " ", "15", "abc", "15 m", "1.5h", "15min", "1h 30m", "5y", "m", "15mm"]) {
    const result = tryParseDuration(text);
    assert.equal(result.ok, false, text);
    assert.match(
      (result as { reason: string }).reason,
      /^must be a number with a unit, such as "250ms", "90s", "15m", "1h30m" or "7d"$/,
      text,
    );
  }
});

Deno.test("parseDuration() refuses units out of order or repeated", () => {
  for (const text of ["30m1h", "1m1m", "5s1d", "10ms1s"]) {
    assert.deepEqual(tryParseDuration(text), {
      ok: false,
      reason: "must give units from largest to smallest, each once",
    }, text);
  }
});

Deno.test("parseDuration() refuses a duration beyond safe integers", () => {
  assert.deepEqual(tryParseDuration("99999999999999999999d"), { ok: false, reason: "is too long" });
});

Deno.test("parseDuration() throws a DurationError naming the value", () => {
  assert.throws(() => parseDuration("0s"), (error) => {
    assert.ok(error instanceof DurationError);
    assert.equal(error.message, 'duration "0s" must be more than zero');
    return true;
  });
});

Deno.test("formatDuration() writes largest units first and round-trips", () => {
  assert.equal(formatDuration(5_400_000), "1h30m");
  assert.equal(formatDuration(250), "250ms");
  assert.equal(formatDuration(93_784_005), "1d2h3m4s5ms");
  for (const ms of [1, 999, 1000, 61_000, 86_400_000, 691_200_001]) {
    assert.equal(parseDuration(formatDuration(ms)), ms);
  }
  assert.throws(() => formatDuration(0), DurationError);
  assert.throws(() => formatDuration(1.5), DurationError);
});

Deno.test("ago() reads as 12s ago, in 3m, 1h5m ago and now", () => {
  assert.equal(ago(NOW - 12_000, NOW), "12s ago");
  assert.equal(ago(NOW + 3 * MINUTE, NOW), "in 3m");
  assert.equal(ago(NOW - 65 * MINUTE - 30_000, NOW), "1h5m ago");
  assert.equal(ago(NOW - 26 * 3_600_000, NOW), "1d2h ago");
  assert.equal(ago(NOW - 400, NOW), "now");
});
