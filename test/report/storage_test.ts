/**
 * Report output storage: the key that keeps a tenant in its segment, the
 * folder store (atomic puts, recursive lists), and the S3 store against a
 * real S3-compatible server on 127.0.0.1 (`@20minutes/s3rver`, which,
 * unlike `s3rver` 3.7.1, checks SigV4 signatures, so a wrong secret is
 * really refused): pre-signed GETs with plain `fetch`, expiry, delete,
 * list by tenant, multipart puts, and errors that carry no secret.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startS3 } from "../support/s3.ts";
import { MissingVariableError } from "../../src/process/env.ts";
import {
  openStorage,
  outputKey,
  type OutputStorage,
  S3_PART_BYTES,
  type StorageSpec,
} from "../../src/report/storage.ts";

const NOW = Date.UTC(2026, 0, 1);
const BUCKET = "reports";
/** s3rver's one account. */
const ACCESS_KEY = "S3RVER";
const SECRET_KEY = "S3RVER";

/** `n` bytes that differ from one offset to the next, so a misplaced part shows. */
function pattern(n: number, seed = 7): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    bytes[i] = x >>> 24;
  }
  return bytes;
}

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)).toHex();
}

/** The bytes of a stream, read to its end (which closes what it holds). */
async function drain(body: ReadableStream<Uint8Array>): Promise<Uint8Array<ArrayBuffer>> {
  return new Uint8Array(await new Response(body).arrayBuffer());
}

/** A temp directory for the length of `fn`. */
async function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "jobs-storage-" });
  try {
    return await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A local file holding `bytes`, in `dir`. */
async function localFile(dir: string, bytes: Uint8Array, name = "out.tmp"): Promise<string> {
  const path = join(dir, name);
  await Deno.writeFile(path, bytes);
  return path;
}

Deno.test("outputKey() is <prefix>/<tenant>/<report>/<run>.<ext>", () => {
  assert.equal(
    outputKey({ tenant: "acme", report: "invoices", run: 12, ext: "csv" }),
    "acme/invoices/12.csv",
  );
  assert.equal(
    outputKey({
      prefix: "/exports/2026/",
      tenant: "Zoë & Co",
      report: "daily",
      run: 0,
      ext: "ndjson",
    }),
    "exports/2026/Zoë & Co/daily/0.ndjson",
  );
});

Deno.test("outputKey() refuses a tenant or report that could leave its segment, naming it", () => {
  const unsafe = [
    "../other",
    "..",
    ".",
    "",
    "a/b",
    "a\\b",
    "a\0b",
    "line\nbreak",
    "\u007f",
    "é".repeat(128),
  ];
  for (const field of ["tenant", "report"] as const) {
    for (const value of unsafe) {
      const p = { tenant: "acme", report: "daily", run: 1, ext: "csv" as const, [field]: value };
      assert.throws(
        () => outputKey(p),
        (error: Error) =>
          error.message.startsWith(`output key: ${field} ${JSON.stringify(value)} `),
        `${field} ${JSON.stringify(value)}`,
      );
    }
  }
  assert.throws(
    () => outputKey({ prefix: "a/../b", tenant: "t", report: "r", run: 1, ext: "csv" }),
    /prefix "a\/..\/b"/,
  );
  assert.throws(() => outputKey({ tenant: "t", report: "r", run: -1, ext: "csv" }), /run -1/);
  assert.throws(() => outputKey({ tenant: "t", report: "r", run: 1.5, ext: "csv" }), /run 1.5/);
  assert.throws(
    () => outputKey({ tenant: "t", report: "r", run: 1, ext: "exe" as "csv" }),
    /ext "exe"/,
  );
});

Deno.test("outputKey() never lets tenant ../other produce a key outside <prefix>/<tenant>/", () => {
  for (const tenant of ["../other", "..", "x/../../other", "..\\other"]) {
    assert.throws(() =>
      outputKey({ prefix: "exports", tenant, report: "daily", run: 1, ext: "csv" })
    );
  }
});

// --- folder -------------------------------------------------------------

Deno.test("folder store: put, exists, read, list and delete a key", async () => {
  await withDir(async (dir) => {
    const store = openStorage({ folder: join(dir, "outputs") });
    assert.equal(store.kind, "folder");
    assert.equal(store.where, join(dir, "outputs"));
    const bytes = pattern(70_000);
    const key = outputKey({
      prefix: "exports",
      tenant: "acme",
      report: "daily",
      run: 7,
      ext: "csv",
    });
    assert.equal(await store.exists(key), false);
    assert.equal(await store.read(key), null);

    const stored = await store.put(key, await localFile(dir, bytes), "text/csv");
    assert.deepEqual(stored, {
      location: join(dir, "outputs", "exports", "acme", "daily", "7.csv"),
      bytes: bytes.length,
    });
    assert.deepEqual(await Deno.readFile(stored.location), bytes);
    assert.equal(await store.exists(key), true);
    const read = await store.read(key);
    assert.equal(read?.bytes, bytes.length);
    assert.deepEqual(await drain(read!.body), bytes);
    assert.deepEqual(await store.list(""), [key]);
    assert.equal(await store.presign(key, 60_000, NOW), null);

    await store.delete(key);
    assert.equal(await store.exists(key), false);
    assert.deepEqual(await store.list(""), []);
    await store.delete(key); // absent: no error
  });
});

Deno.test("folder store: put leaves no temp file, replaces a key whole and keeps the source", async () => {
  await withDir(async (dir) => {
    const store = openStorage({ folder: join(dir, "outputs") });
    const key = "acme/daily/1.csv";
    const source = await localFile(dir, pattern(1000, 1));
    await store.put(key, source, "text/csv");
    await store.put(key, await localFile(dir, pattern(500, 2), "second.tmp"), "text/csv");
    const entries = await Array.fromAsync(Deno.readDir(join(dir, "outputs", "acme", "daily")));
    assert.deepEqual(entries.map((e) => e.name), ["1.csv"]);
    assert.deepEqual(await Deno.readFile(join(dir, "outputs", key)), pattern(500, 2));
    assert.deepEqual(await Deno.readFile(source), pattern(1000, 1));

    // A source that cannot be read: the error names the key, and nothing is left behind.
    await assert.rejects(
      store.put("acme/daily/2.csv", join(dir, "missing"), "text/csv"),
      /"acme\/daily\/2.csv"/,
    );
    const after = await Array.fromAsync(Deno.readDir(join(dir, "outputs", "acme", "daily")));
    assert.deepEqual(after.map((e) => e.name), ["1.csv"]);
  });
});

Deno.test("folder store: list walks every level and keeps to its prefix", async () => {
  await withDir(async (dir) => {
    const store = openStorage({ folder: join(dir, "outputs") });
    const source = await localFile(dir, pattern(10));
    const keys = [
      "acme/daily/1.csv",
      "acme/daily/2.ndjson",
      "acme/weekly/3.csv",
      "acme2/daily/4.csv",
      "globex/daily/5.csv",
    ];
    for (const key of keys) await store.put(key, source, "text/csv");
    // An unfinished put of another process: not a key.
    await Deno.writeTextFile(
      join(dir, "outputs", "acme", "daily", ".9.csv.0b6f3a0e-6c1e-4d0c-9d0e-2f1a3b4c5d6e.partial"),
      "x",
    );
    assert.deepEqual(await store.list(""), keys);
    assert.deepEqual(await store.list("acme/"), keys.slice(0, 3));
    assert.deepEqual(await store.list("acme"), keys.slice(0, 4));
    assert.deepEqual(await store.list("acme/daily/"), keys.slice(0, 2));
    assert.deepEqual(await store.list("nobody/"), []);
  });
});

Deno.test("folder store: a key with a .. segment is refused before it touches the disk", async () => {
  await withDir(async (dir) => {
    const store = openStorage({ folder: join(dir, "outputs") });
    const source = await localFile(dir, pattern(10));
    for (
      const key of [
        "../x/daily/1.csv",
        "acme/../../1.csv",
        "/etc/passwd",
        "acme//1.csv",
        "a\\b/1.csv",
      ]
    ) {
      await assert.rejects(store.put(key, source, "text/csv"), /output key .*: a segment/, key);
      await assert.rejects(store.read(key), /output key/, key);
      await assert.rejects(store.delete(key), /output key/, key);
      await assert.rejects(store.exists(key), /output key/, key);
    }
    await assert.rejects(store.list("../"), /output key/);
    assert.deepEqual((await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name), ["out.tmp"]);
  });
});

// --- S3 -----------------------------------------------------------------

/** An s3rver on 127.0.0.1 with an empty bucket {@linkcode BUCKET}, for the length of `fn`. */
async function withS3(fn: (endpoint: string) => Promise<void>): Promise<void> {
  await withDir(async (dir) => {
    const server = await startS3(dir, [BUCKET]);
    try {
      await fn(server.endpoint);
    } finally {
      await server.close();
    }
  });
}

/** An S3 store whose endpoint and keys come from `${NAME}`, as schedules.yaml writes them. */
function s3Store(
  endpoint: string,
  options: { secret?: string; prefix?: string } = {},
): OutputStorage {
  const env: Record<string, string> = {
    S3_ENDPOINT: endpoint,
    S3_ACCESS_KEY: ACCESS_KEY,
    S3_SECRET_KEY: options.secret ?? SECRET_KEY,
  };
  const spec: StorageSpec = {
    s3: {
      endpoint: "${S3_ENDPOINT}",
      bucket: BUCKET,
      access_key: "${S3_ACCESS_KEY}",
      secret_key: "${S3_SECRET_KEY}",
      ...(options.prefix ? { prefix: options.prefix } : {}),
    },
  };
  return openStorage(spec, (name) => env[name]);
}

Deno.test("s3 store: put, then a pre-signed URL serves the same bytes to plain fetch", async () => {
  await withS3(async (endpoint) => {
    await withDir(async (dir) => {
      const store = s3Store(endpoint);
      assert.equal(store.kind, "s3");
      assert.equal(store.where, "s3://reports");
      const bytes = pattern(70_000);
      const key = outputKey({ tenant: "acme", report: "daily", run: 7, ext: "csv" });
      const stored = await store.put(key, await localFile(dir, bytes), "text/csv; charset=utf-8");
      assert.deepEqual(stored, { location: key, bytes: bytes.length });
      assert.equal(await store.exists(key), true);

      const url = await store.presign(key, 15 * 60_000, Date.now());
      assert.ok(url?.startsWith(`${endpoint}/reports/acme/daily/7.csv?`), url ?? "null");
      assert.match(url!, /X-Amz-Expires=900&/);
      const response = await fetch(url!);
      assert.equal(response.status, 200);
      assert.equal(response.headers.get("Content-Type"), "text/csv; charset=utf-8");
      assert.deepEqual(new Uint8Array(await response.arrayBuffer()), bytes);

      const read = await store.read(key);
      assert.equal(read?.bytes, bytes.length);
      assert.deepEqual(await drain(read!.body), bytes);
    });
  });
});

Deno.test("s3 store: a URL pre-signed at a now long past is refused as expired", async () => {
  await withS3(async (endpoint) => {
    await withDir(async (dir) => {
      const store = s3Store(endpoint);
      const key = "acme/daily/1.csv";
      await store.put(key, await localFile(dir, pattern(100)), "text/csv");
      const url = await store.presign(key, 60_000, Date.UTC(2020, 0, 1));
      assert.match(url!, /X-Amz-Date=20200101T000000Z/);
      const response = await fetch(url!);
      assert.equal(response.status, 403);
      assert.match(await response.text(), /Request has expired/);
      await assert.rejects(store.presign(key, 8 * 86_400_000, NOW), /1 s to 7 days/);
      await assert.rejects(store.presign(key, 999, NOW), /1 s to 7 days/);
    });
  });
});

Deno.test("s3 store: delete removes the object; an absent key reads null and deletes quietly", async () => {
  await withS3(async (endpoint) => {
    await withDir(async (dir) => {
      const store = s3Store(endpoint);
      const key = "acme/daily/1.csv";
      await store.put(key, await localFile(dir, pattern(100)), "text/csv");
      await store.delete(key);
      assert.equal(await store.exists(key), false);
      assert.equal(await store.read(key), null);
      assert.deepEqual(await store.list(""), []);
      const gone = await fetch((await store.presign(key, 60_000, Date.now()))!);
      assert.equal(gone.status, 404);
      await gone.body?.cancel();
      await store.delete(key);
    });
  });
});

Deno.test("s3 store: list by tenant prefix finds only that tenant's keys, under the store's prefix", async () => {
  await withS3(async (endpoint) => {
    await withDir(async (dir) => {
      const store = s3Store(endpoint, { prefix: "exports/" });
      const source = await localFile(dir, pattern(10));
      const keys = [
        "acme/daily/1.csv",
        "acme/weekly/2.ndjson",
        "acme2/daily/3.csv",
        "globex/daily/4.csv",
      ];
      for (const key of keys) {
        assert.equal((await store.put(key, source, "text/csv")).location, `exports/${key}`);
      }
      assert.deepEqual(await store.list("acme/"), keys.slice(0, 2));
      assert.deepEqual(await store.list("globex/"), keys.slice(3));
      assert.deepEqual(await store.list(""), keys);
      // The store's prefix is where it keeps its keys: a store without it sees them all beneath it.
      assert.deepEqual(await s3Store(endpoint).list(""), keys.map((k) => `exports/${k}`));
    });
  });
});

Deno.test("s3 store: list follows continuation tokens from page to page", async () => {
  // s3rver cannot make a continuation token under Deno (it ciphers them with DES, which
  // node:crypto here lacks: "Unknown cipher", a 500), so a stand-in serves the pages.
  const pages = [
    { keys: ["acme/daily/1.csv", "acme/daily/Tom &amp; Jerry.csv"], next: "page+2/=" },
    { keys: ["acme/weekly/3.csv"], next: undefined },
  ];
  const asked: URLSearchParams[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const url = new URL(request.url);
    assert.equal(url.pathname, "/reports");
    assert.match(
      request.headers.get("Authorization") ?? "",
      /^AWS4-HMAC-SHA256 Credential=S3RVER\//,
    );
    asked.push(url.searchParams);
    const page = pages[url.searchParams.has("continuation-token") ? 1 : 0]!;
    const xml = `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>reports</Name>` +
      page.keys.map((key) => `<Contents><Key>${key}</Key><Size>1</Size></Contents>`).join("") +
      `<IsTruncated>${page.next !== undefined}</IsTruncated>` +
      (page.next ? `<NextContinuationToken>${page.next}</NextContinuationToken>` : "") +
      `</ListBucketResult>`;
    return new Response(xml, { headers: { "Content-Type": "application/xml" } });
  });
  try {
    const store = s3Store(`http://127.0.0.1:${server.addr.port}`);
    assert.deepEqual(await store.list("acme/"), [
      "acme/daily/1.csv",
      "acme/daily/Tom & Jerry.csv",
      "acme/weekly/3.csv",
    ]);
    assert.deepEqual(asked.map((q) => Object.fromEntries(q)), [
      { "list-type": "2", prefix: "acme/" },
      { "list-type": "2", prefix: "acme/", "continuation-token": "page+2/=" },
    ]);
  } finally {
    await server.shutdown();
  }
});

Deno.test("s3 store: a file over one part goes up in parts and reads back whole", async () => {
  await withS3(async (endpoint) => {
    await withDir(async (dir) => {
      const store = s3Store(endpoint);
      const bytes = pattern(S3_PART_BYTES * 2 + 12_345);
      const key = "acme/daily/9.ndjson";
      const stored = await store.put(key, await localFile(dir, bytes), "application/x-ndjson");
      assert.deepEqual(stored, { location: key, bytes: bytes.length });
      const read = await store.read(key);
      assert.equal(read?.bytes, bytes.length);
      assert.equal(await sha256(await drain(read!.body)), await sha256(bytes));
    });
  });
});

Deno.test("s3 store: a wrong secret key fails with the status, method and key, never the secret", async () => {
  await withS3(async (endpoint) => {
    await withDir(async (dir) => {
      const secret = "wrong-secret-f00dfeed";
      const store = s3Store(endpoint, { secret });
      assert.ok(!store.where.includes(secret));
      const source = await localFile(dir, pattern(10));
      const attempts: [string, () => Promise<unknown>][] = [
        ["PUT", () => store.put("acme/daily/1.csv", source, "text/csv")],
        ["GET", () => store.read("acme/daily/1.csv")],
        ["DELETE", () => store.delete("acme/daily/1.csv")],
        ["GET", () => store.list("acme/")],
      ];
      for (const [method, attempt] of attempts) {
        await assert.rejects(attempt, (error: Error) => {
          assert.match(
            error.message,
            new RegExp(`^s3://reports: ${method} "acme/.*" answered 403 SignatureDoesNotMatch$`),
          );
          assert.ok(!error.message.includes(secret), error.message);
          assert.ok(!String(error.stack).includes(secret));
          return true;
        });
      }
      await assert.rejects(
        store.exists("acme/daily/1.csv"),
        /HEAD "acme\/daily\/1.csv" answered 403$/,
      );
    });
  });
});

Deno.test("s3 store: a network failure names the request and masks what came from the environment", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close(); // a port nobody listens on
  const store = s3Store(`http://127.0.0.1:${port}`, { secret: "a-secret-never-shown" });
  await assert.rejects(store.exists("acme/daily/1.csv"), (error: Error) => {
    assert.match(error.message, /^s3:\/\/reports: HEAD "acme\/daily\/1.csv" failed: /);
    assert.ok(!error.message.includes(`127.0.0.1:${port}`), error.message);
    assert.ok(!error.message.includes("a-secret-never-shown"));
    return true;
  });
});

Deno.test("s3 store: an unset ${NAME} fails naming the variable and the field", () => {
  assert.throws(
    () =>
      openStorage(
        {
          s3: {
            endpoint: "http://127.0.0.1:9",
            bucket: BUCKET,
            access_key: "${S3_ACCESS_KEY}",
            secret_key: "${S3_SECRET_KEY}",
          },
        },
        (name) => (name === "S3_ACCESS_KEY" ? "AKIA-EXAMPLE" : undefined),
      ),
    (error: Error) => {
      assert.ok(error instanceof MissingVariableError);
      assert.equal(error.variable, "S3_SECRET_KEY");
      assert.equal(
        error.message,
        'storage s3://reports secret_key: environment variable "S3_SECRET_KEY" is not set',
      );
      return true;
    },
  );
  assert.throws(
    () =>
      openStorage({
        s3: { endpoint: "not a url", bucket: BUCKET, access_key: "a", secret_key: "b" },
      }),
    /endpoint "not a url" is not a URL/,
  );
});
