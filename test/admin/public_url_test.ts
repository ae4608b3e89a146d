/**
 * The daemon's public base URL (issue 26.10): what `--public-url` accepts
 * and how it is written; the URL a bound address is reached at; and, on
 * both stores, how it is kept in the `settings` table: a derived URL is
 * stored and audited, stored again unchanged writes nothing, an explicit
 * one replaces it, a later derived one never replaces an explicit one, and
 * a link's base comes from `--base`, the stored explicit URL, the answering
 * daemon's own, the stored derived one, or else is refused in one line.
 */

import assert from "node:assert/strict";
import {
  derivedPublicUrl,
  linkBase,
  NoPublicUrl,
  parsePublicUrl,
  PUBLIC_URL_KEY,
  PublicUrlInvalid,
  readPublicUrl,
  recordPublicUrl,
} from "../../src/admin/public_url.ts";
import { BACKENDS, harnessTest } from "../support/backends.ts";

const NOW = Date.UTC(2026, 11, 3, 9);

Deno.test("parsePublicUrl() keeps http and https URLs canonical: lower-case host, no default port, no trailing slash", () => {
  const cases: [string, string][] = [
    ["https://jobs.example.com", "https://jobs.example.com"],
    ["https://Jobs.Example.COM/", "https://jobs.example.com"],
    ["HTTPS://jobs.example.com:443//", "https://jobs.example.com"],
    ["http://127.0.0.1:9464", "http://127.0.0.1:9464"],
    ["http://[::1]:9464/", "http://[::1]:9464"],
    ["https://example.com/ops/jobs/", "https://example.com/ops/jobs"],
    ["http://build-7:8080", "http://build-7:8080"],
  ];
  for (const [given, canonical] of cases) assert.equal(parsePublicUrl(given), canonical, given);
});

Deno.test("parsePublicUrl() refuses another scheme, no host, a user or password, a query and a fragment, saying which", () => {
  const cases: [string, RegExp][] = [
    ["ftp://jobs.example.com", /^is not an http:\/\/ or https:\/\/ URL such as https:\/\//],
    ["jobs.example.com", /^is not an http:\/\/ or https:\/\/ URL/],
    ["/downloads", /^is not an http:\/\/ or https:\/\/ URL/],
    ["", /^is not an http:\/\/ or https:\/\/ URL/],
    ["http://", /^is not an http:\/\/ or https:\/\/ URL/],
    ["http:jobs.example.com", /^is not an http:\/\/ or https:\/\/ URL/],
    ["https://jobs.example.com:99999", /^is not a URL such as https:\/\/jobs\.example\.com$/],
    ["https://ada:s3cret@jobs.example.com", /^holds a user or password/],
    ["https://ada@jobs.example.com", /^holds a user or password/],
    ["https://jobs.example.com/?tenant=acme", /^has a query \(\?\.\.\.\)/],
    ["https://jobs.example.com/?", /^has a query/],
    ["https://jobs.example.com/#top", /^has a fragment \(#\.\.\.\)/],
    ["https://jobs.example.com#", /^has a fragment/],
  ];
  for (const [given, why] of cases) {
    assert.throws(() => parsePublicUrl(given), (error: Error) => {
      assert.ok(error instanceof PublicUrlInvalid, `${given}: ${error}`);
      assert.match(error.message, why, given);
      return true;
    });
  }
});

Deno.test("derivedPublicUrl() is the bound address, or this host's name for a wildcard bind", () => {
  assert.equal(
    derivedPublicUrl({ hostname: "127.0.0.1", port: 9464 }, "h7"),
    "http://127.0.0.1:9464",
  );
  assert.equal(derivedPublicUrl({ hostname: "::1", port: 9464 }, "h7"), "http://[::1]:9464");
  assert.equal(derivedPublicUrl({ hostname: "10.1.2.3", port: 80 }, "h7"), "http://10.1.2.3");
  assert.equal(
    derivedPublicUrl({ hostname: "0.0.0.0", port: 9464 }, "Build-7"),
    "http://build-7:9464",
  );
  assert.equal(derivedPublicUrl({ hostname: "::", port: 9464 }, "build-7"), "http://build-7:9464");
});

for (const backend of BACKENDS) {
  const test = harnessTest(backend, NOW);

  test("the public URL: derived stored and audited, unchanged not written, explicit replaces, derived never replaces explicit", async ({ store }) => {
    const audits = () => store.auditList({ target: `setting:${PUBLIC_URL_KEY}` });
    assert.equal(await readPublicUrl(store), null);

    const first = await recordPublicUrl(store, {
      url: "http://127.0.0.1:9464",
      source: "derived",
      from: "listen 127.0.0.1:9464",
      node: "d1",
      now: NOW,
    });
    assert.equal(first.outcome, "stored");
    assert.equal(first.was, null);
    assert.deepEqual(await readPublicUrl(store), {
      url: "http://127.0.0.1:9464",
      source: "derived",
      from: "listen 127.0.0.1:9464",
      node: "d1",
      at: NOW,
    });
    const [derivedRow] = await audits();
    assert.equal(derivedRow?.action, "setting.set");
    assert.equal(derivedRow?.actor, "d1");
    assert.equal(
      derivedRow?.reason,
      "jobs daemon: the address it listens on (listen 127.0.0.1:9464)",
    );
    assert.deepEqual(derivedRow?.details, {
      old: null,
      oldSource: null,
      new: "http://127.0.0.1:9464",
      newSource: "derived",
    });

    // The same address again (a restart): nothing written, nothing audited.
    const again = await recordPublicUrl(store, {
      url: "http://127.0.0.1:9464",
      source: "derived",
      from: "listen 127.0.0.1:9464",
      node: "d2",
      now: NOW + 1000,
    });
    assert.equal(again.outcome, "unchanged");
    assert.equal((await readPublicUrl(store))?.node, "d1");
    assert.equal((await audits()).length, 1);

    // An explicit URL replaces the derived one, audited with both.
    const explicit = await recordPublicUrl(store, {
      url: "https://jobs.example.com/ops",
      source: "explicit",
      from: "--public-url",
      node: "d2",
      now: NOW + 2000,
    });
    assert.equal(explicit.outcome, "stored");
    assert.equal(explicit.was?.url, "http://127.0.0.1:9464");
    const rows = await audits();
    assert.equal(rows.length, 2);
    assert.equal(rows[1]?.reason, "jobs daemon --public-url");
    assert.deepEqual(rows[1]?.details, {
      old: "http://127.0.0.1:9464",
      oldSource: "derived",
      new: "https://jobs.example.com/ops",
      newSource: "explicit",
    });

    // A daemon started later without the flag keeps it: its listen address is not stored.
    const kept = await recordPublicUrl(store, {
      url: "http://127.0.0.1:40000",
      source: "derived",
      from: "listen 127.0.0.1:40000",
      node: "d3",
      now: NOW + 3000,
    });
    assert.equal(kept.outcome, "kept");
    assert.equal(kept.current.url, "https://jobs.example.com/ops");
    assert.equal(kept.current.node, "d2");
    assert.equal((await readPublicUrl(store))?.url, "https://jobs.example.com/ops");
    assert.equal((await audits()).length, 2);

    // Another explicit URL replaces the first.
    const moved = await recordPublicUrl(store, {
      url: "https://reports.example.com",
      source: "explicit",
      from: "JOBS_PUBLIC_URL",
      node: "d4",
      now: NOW + 4000,
    });
    assert.equal(moved.outcome, "stored");
    assert.equal((await readPublicUrl(store))?.url, "https://reports.example.com");
    assert.equal((await audits()).length, 3);
  });

  test("a link's base: --base, else the stored explicit URL, else the daemon's own, else the stored derived one, else refused", async ({ store }) => {
    await assert.rejects(linkBase(store), (error: Error) => {
      assert.ok(error instanceof NoPublicUrl);
      assert.equal(
        error.message,
        "no public URL known: start the daemon with --public-url https://... " +
          "or pass --base http://host:port",
      );
      return true;
    });
    assert.equal((await linkBase(store, { own: "http://127.0.0.1:1" })).url, "http://127.0.0.1:1");
    const derived = {
      url: "http://10.0.0.5:9464",
      source: "derived" as const,
      from: "listen 10.0.0.5:9464",
      node: "d1",
      now: NOW,
    };
    await recordPublicUrl(store, derived);
    assert.equal((await linkBase(store)).url, "http://10.0.0.5:9464");
    assert.equal((await linkBase(store)).stored?.node, "d1");
    assert.equal((await linkBase(store, { own: "http://127.0.0.1:1" })).url, "http://127.0.0.1:1");
    await recordPublicUrl(store, {
      url: "https://jobs.example.com",
      source: "explicit",
      from: "--public-url",
      node: "d2",
      now: NOW,
    });
    assert.equal(
      (await linkBase(store, { own: "http://127.0.0.1:1" })).url,
      "https://jobs.example.com",
    );
    assert.equal(
      (await linkBase(store, { given: "https://proxy.example.com/x" })).url,
      "https://proxy.example.com/x",
    );
    // Something stored that is not a public URL is none.
    await store.settingSet({ key: PUBLIC_URL_KEY, value: { url: "ftp://x" }, now: NOW });
    assert.equal(await readPublicUrl(store), null);
    await assert.rejects(linkBase(store), NoPublicUrl);
  });
}
