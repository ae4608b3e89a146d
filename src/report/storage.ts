/**
 * Where report outputs are kept once a run has written them: a folder or
 * an S3-compatible bucket, behind one {@linkcode OutputStorage} interface.
 * A run writes its output to a local temp file, {@linkcode OutputStorage.put}
 * stores it under {@linkcode outputKey}'s `<prefix>/<tenant>/<report>/<run>.<ext>`,
 * and a person later downloads it through the daemon (a folder) or a
 * pre-signed URL (a bucket).
 *
 * Keys are checked segment by segment before they touch a path or a URL,
 * so no tenant or report name (`../other`) can reach another tenant's
 * outputs or leave the folder.
 *
 * A bucket is spoken to over plain `fetch` signed by `aws4fetch`
 * (SigV4, path-style URLs). Deno's `fetch` drops a `Content-Length` given
 * with a streamed body and sends it chunked, which S3 refuses, so a file
 * larger than {@linkcode S3_PART_BYTES} is sent as a multipart upload, one
 * part in memory at a time: a 1 GB report costs one part's memory, never
 * the file's.
 *
 * @module
 */

import { AwsClient, AwsV4Signer } from "npm:aws4fetch@1.0.20";
import { dirname, join, resolve } from "node:path";
import { expandVariables, maskValues, referencedVariables } from "../process/env.ts";

/** A place report outputs are kept, keyed by {@linkcode outputKey}. */
export interface OutputStorage {
  readonly kind: "folder" | "s3";
  /** A human-readable place for errors and `jobs reports` (the folder path, or s3://bucket); never a secret. */
  readonly where: string;
  /**
   * Stores the local file `localPath` under `key` (the file is copied, not
   * moved); returns the location (absolute file path for a folder, the
   * bucket key for S3) and its size. Atomic for a folder: written to a
   * temp name in the same directory, then renamed. A folder keeps no
   * `contentType`; the daemon derives it from the extension.
   */
  put(
    key: string,
    localPath: string,
    contentType: string,
  ): Promise<{ location: string; bytes: number }>;
  /** Removes `key`; no error when it is absent. */
  delete(key: string): Promise<void>;
  /** True when `key` is stored. */
  exists(key: string): Promise<boolean>;
  /**
   * The object's bytes as a stream, or null when absent (the daemon's
   * download endpoint streams this). The caller must read or cancel `body`,
   * which holds a file or a connection until then.
   */
  read(key: string): Promise<{ body: ReadableStream<Uint8Array>; bytes: number } | null>;
  /**
   * S3: a pre-signed GET URL valid for `ttlMs` (whole seconds, 1 s to 7 days)
   * from `now` (injected clock, epoch ms; machine time is never read).
   * Folder: null (the daemon serves folder outputs).
   */
  presign(key: string, ttlMs: number, now: number): Promise<string | null>;
  /** Keys starting with `prefix` (a plain string prefix, as S3 has it), sorted; for the pruner's sweep of orphans. */
  list(prefix: string): Promise<string[]>;
}

/** Where a store is: a folder, or a bucket and its credentials (each of `endpoint`, `access_key`, `secret_key` may hold `${NAME}`). */
export type StorageSpec = { folder: string } | {
  s3: {
    endpoint: string;
    bucket: string;
    access_key: string;
    secret_key: string;
    /** @default "us-east-1" */
    region?: string;
    /** Prepended by the store to every key (keys given to and returned by the store never include it). */
    prefix?: string;
  };
};

/** The longest segment of a key in UTF-8 bytes: a file name's limit on most file systems. */
const MAX_SEGMENT_BYTES = 255;

// NUL, C0 controls, DEL and C1 controls: not in a file name, not readable in a URL.
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Why `value` cannot be one segment of a key, or undefined when it can. */
function segmentProblem(value: unknown): string | undefined {
  if (typeof value !== "string") return "is not text";
  if (value === "") return "is empty";
  if (value === "." || value === "..") return "is a relative path segment";
  if (value.includes("/")) return 'contains "/"';
  if (value.includes("\\")) return 'contains "\\"';
  if (CONTROL.test(value)) return "contains a control character";
  if (new TextEncoder().encode(value).length > MAX_SEGMENT_BYTES) {
    return `is longer than ${MAX_SEGMENT_BYTES} bytes`;
  }
  return undefined;
}

/** `key` if every one of its segments is safe; throws naming the key otherwise. */
function checkKey(key: string): string {
  for (const segment of String(key).split("/")) {
    const problem = segmentProblem(segment);
    if (problem) throw new Error(`output key ${JSON.stringify(key)}: a segment ${problem}`);
  }
  return key;
}

/**
 * The key of a run's output: `<prefix>/<tenant>/<report>/<run>.<ext>`
 * (no prefix: `<tenant>/<report>/<run>.<ext>`). Unsafe values are refused,
 * never rewritten, so a key always names its tenant as the tenant is.
 *
 * @throws Error naming the field and its value when `tenant` or `report`
 * is empty, `.` or `..`, holds `/`, `\`, NUL or a control character, or is
 * longer than 255 bytes; when a `prefix` segment is such; when `run` is not
 * a non-negative integer or `ext` not `csv` or `ndjson`
 */
export function outputKey(
  p: { prefix?: string; tenant: string; report: string; run: number; ext: "csv" | "ndjson" },
): string {
  for (const field of ["tenant", "report"] as const) {
    const problem = segmentProblem(p[field]);
    if (problem) throw new Error(`output key: ${field} ${JSON.stringify(p[field])} ${problem}`);
  }
  if (!Number.isSafeInteger(p.run) || p.run < 0) {
    throw new Error(`output key: run ${JSON.stringify(p.run)} is not a non-negative integer`);
  }
  if (p.ext !== "csv" && p.ext !== "ndjson") {
    throw new Error(`output key: ext ${JSON.stringify(p.ext)} is not "csv" or "ndjson"`);
  }
  const prefix = (p.prefix ?? "").replace(/^\/+|\/+$/g, "");
  for (const segment of prefix === "" ? [] : prefix.split("/")) {
    const problem = segmentProblem(segment);
    if (problem) {
      throw new Error(`output key: prefix ${JSON.stringify(p.prefix)}: a segment ${problem}`);
    }
  }
  const tail = `${p.tenant}/${p.report}/${p.run}.${p.ext}`;
  return prefix === "" ? tail : `${prefix}/${tail}`;
}

/**
 * The store `spec` names. For S3, `${NAME}` in `endpoint`, `access_key`
 * and `secret_key` is filled from `env` now, so a missing variable fails
 * here, naming it.
 *
 * @param env where `${NAME}` is looked up @default Deno.env.get
 * @throws MissingVariableError naming the field and the variable when one is unset
 */
export function openStorage(
  spec: StorageSpec,
  env: (name: string) => string | undefined = (name) => Deno.env.get(name),
): OutputStorage {
  if ("folder" in spec) return new FolderStorage(spec.folder);
  return new S3Storage(spec.s3, env);
}

// --- folder -------------------------------------------------------------

/** A temp file of an unfinished put: `.<name>.<uuid>.partial`, beside its key's file. */
const PARTIAL = /^\..+\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.partial$/;

/** Outputs as files under one folder, a key's segments its directories. */
class FolderStorage implements OutputStorage {
  readonly kind = "folder";
  readonly where: string;

  constructor(folder: string) {
    this.where = resolve(folder);
  }

  #path(key: string): string {
    return join(this.where, ...checkKey(key).split("/"));
  }

  async put(key: string, localPath: string): Promise<{ location: string; bytes: number }> {
    const path = this.#path(key);
    const dir = dirname(path);
    await Deno.mkdir(dir, { recursive: true });
    const temp = join(dir, `.${key.split("/").pop()}.${crypto.randomUUID()}.partial`);
    try {
      await Deno.copyFile(localPath, temp);
      // On disk before it has its name: a crash never leaves a torn output under the key.
      using file = await Deno.open(temp, { read: true });
      await file.syncData();
      await Deno.rename(temp, path);
    } catch (error) {
      await Deno.remove(temp).catch(() => {});
      throw new Error(
        `${this.where}: cannot store ${JSON.stringify(key)}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    return { location: path, bytes: (await Deno.stat(path)).size };
  }

  async delete(key: string): Promise<void> {
    try {
      await Deno.remove(this.#path(key));
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
  }

  async exists(key: string): Promise<boolean> {
    try {
      return (await Deno.stat(this.#path(key))).isFile;
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return false;
      throw error;
    }
  }

  async read(key: string): Promise<{ body: ReadableStream<Uint8Array>; bytes: number } | null> {
    let file: Deno.FsFile;
    try {
      file = await Deno.open(this.#path(key), { read: true });
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return null;
      throw error;
    }
    try {
      const { size } = await file.stat();
      // The stream closes the file once read to the end or cancelled.
      return { body: file.readable, bytes: size };
    } catch (error) {
      file.close();
      throw error;
    }
  }

  presign(): Promise<null> {
    return Promise.resolve(null);
  }

  async list(prefix: string): Promise<string[]> {
    // Walk only the deepest directory the prefix names whole, then filter as S3 would.
    const cut = prefix.lastIndexOf("/");
    const base = cut < 0 ? "" : prefix.slice(0, cut);
    const start = base === "" ? this.where : this.#path(base);
    const keys: string[] = [];
    const walk = async (dir: string, at: string) => {
      let entries: Deno.DirEntry[];
      try {
        entries = await Array.fromAsync(Deno.readDir(dir));
      } catch (error) {
        if (error instanceof Deno.errors.NotFound) return;
        if (error instanceof Deno.errors.NotADirectory) return;
        throw error;
      }
      for (const entry of entries) {
        const key = at === "" ? entry.name : `${at}/${entry.name}`;
        if (entry.isDirectory) await walk(join(dir, entry.name), key);
        else if (entry.isFile && !PARTIAL.test(entry.name) && key.startsWith(prefix)) {
          keys.push(key);
        }
      }
    };
    await walk(start, base);
    return keys.sort();
  }
}

// --- S3 -----------------------------------------------------------------

/**
 * The size of one part of a multipart upload, and the largest file sent in
 * one PUT. S3 wants parts of 5 MiB or more (the last excepted) and at most
 * 10,000 of them: 16 MiB parts carry up to 160 GiB.
 */
export const S3_PART_BYTES = 16 * 1024 * 1024;

/** The longest `X-Amz-Expires` S3 accepts: 7 days, in seconds. */
const MAX_PRESIGN_SECONDS = 7 * 24 * 60 * 60;

/** How many times a request answered 5xx or 429 is tried again (aws4fetch's backoff). */
const RETRIES = 3;

/** `s` with XML's five named entities and numeric references decoded. */
function xmlText(s: string): string {
  return s.replace(/&(?:#x([0-9a-fA-F]+)|#(\d+)|(amp|lt|gt|quot|apos));/g, (_, hex, dec, name) => {
    if (hex !== undefined) return String.fromCodePoint(parseInt(hex, 16));
    if (dec !== undefined) return String.fromCodePoint(parseInt(dec, 10));
    return { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" }[name as string]!;
  });
}

/** The decoded text of every `<tag>` element in `xml`. */
function xmlAll(xml: string, tag: string): string[] {
  return [...xml.matchAll(new RegExp(`<${tag}>([^<]*)</${tag}>`, "g"))].map((m) => xmlText(m[1]!));
}

/** The hex SHA-256 of `bytes`, which S3 checks the body against. */
async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)).toHex();
}

/** Reads up to `buffer.length` bytes, fewer only at the end of the file. */
async function readFull(file: Deno.FsFile, buffer: Uint8Array): Promise<number> {
  let filled = 0;
  while (filled < buffer.length) {
    const n = await file.read(buffer.subarray(filled));
    if (n === null) break;
    filled += n;
  }
  return filled;
}

/** Outputs as objects of one bucket, path-style URLs, signed with SigV4. */
class S3Storage implements OutputStorage {
  readonly kind = "s3";
  readonly where: string;
  readonly #client: AwsClient;
  readonly #credentials: { accessKeyId: string; secretAccessKey: string; region: string };
  readonly #base: string;
  readonly #prefix: string;
  readonly #secrets: string[];

  constructor(
    spec: Extract<StorageSpec, { s3: unknown }>["s3"],
    env: (name: string) => string | undefined,
  ) {
    this.where = `s3://${spec.bucket}`;
    const field = (name: "endpoint" | "access_key" | "secret_key") =>
      expandVariables(spec[name], env, `storage ${this.where} ${name}`);
    const endpoint = field("endpoint");
    const accessKeyId = field("access_key");
    const secretAccessKey = field("secret_key");
    // What came from the environment is masked out of any message that might echo it.
    this.#secrets = [
      accessKeyId,
      secretAccessKey,
      ...referencedVariables(spec.endpoint).map((name) => env(name) ?? ""),
    ];
    let url: URL;
    try {
      url = new URL(endpoint);
    } catch {
      throw new Error(
        `storage ${this.where}: endpoint ${JSON.stringify(spec.endpoint)} is not a URL`,
      );
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new Error(
        `storage ${this.where}: endpoint ${JSON.stringify(spec.endpoint)} is not http or https`,
      );
    }
    if (spec.bucket === "" || /[/\\?#]/.test(spec.bucket)) {
      throw new Error(`storage s3: bucket ${JSON.stringify(spec.bucket)} is not a bucket name`);
    }
    this.#base = `${url.origin}${url.pathname.replace(/\/+$/, "")}/${
      encodeURIComponent(spec.bucket)
    }`;
    this.#prefix = (spec.prefix ?? "").replace(/^\/+|\/+$/g, "");
    if (this.#prefix !== "") checkKey(this.#prefix);
    this.#credentials = { accessKeyId, secretAccessKey, region: spec.region ?? "us-east-1" };
    this.#client = new AwsClient({ ...this.#credentials, service: "s3", retries: RETRIES });
  }

  /** The bucket key of a store key: the store's prefix, then the key. */
  #full(key: string): string {
    checkKey(key);
    return this.#prefix === "" ? key : `${this.#prefix}/${key}`;
  }

  /** The object URL of a bucket key, each segment percent-encoded. */
  #url(full: string, query = ""): string {
    return `${this.#base}/${full.split("/").map(encodeURIComponent).join("/")}${query}`;
  }

  /** `fetch`, signed; a network failure is an error naming the request, with no secret in it. */
  async #send(method: string, key: string, url: string, init: RequestInit = {}): Promise<Response> {
    try {
      return await this.#client.fetch(url, { ...init, method });
    } catch (error) {
      const reason = maskValues((error as Error).message, this.#secrets);
      throw new Error(`${this.where}: ${method} ${JSON.stringify(key)} failed: ${reason}`);
    }
  }

  /** Throws for a non-2xx answer: the status, the method, the key and S3's error code (never the signature). */
  async #ok(response: Response, method: string, key: string): Promise<Response> {
    if (response.ok) return response;
    const text = await response.text().catch(() => "");
    const code = xmlAll(text, "Code")[0];
    throw new Error(
      `${this.where}: ${method} ${JSON.stringify(key)} answered ${response.status}` +
        (code ? ` ${code}` : ""),
    );
  }

  async put(
    key: string,
    localPath: string,
    contentType: string,
  ): Promise<{ location: string; bytes: number }> {
    const full = this.#full(key);
    using file = await Deno.open(localPath, { read: true });
    const { size } = await file.stat();
    if (size <= S3_PART_BYTES) {
      const body = new Uint8Array(size);
      const n = await readFull(file, body);
      if (n !== size) throw new Error(`${localPath}: changed size while being stored`);
      const response = await this.#send("PUT", full, this.#url(full), {
        body,
        headers: { "Content-Type": contentType, "X-Amz-Content-Sha256": await sha256Hex(body) },
      });
      await (await this.#ok(response, "PUT", full)).body?.cancel();
      return { location: full, bytes: size };
    }
    return { location: full, bytes: await this.#putParts(full, file, contentType) };
  }

  /** A multipart upload of `file`, one part in memory at a time, aborted when any step fails; the bytes sent. */
  async #putParts(full: string, file: Deno.FsFile, contentType: string): Promise<number> {
    const started = await this.#ok(
      await this.#send("POST", full, this.#url(full, "?uploads"), {
        headers: { "Content-Type": contentType },
      }),
      "POST",
      full,
    );
    const uploadId = xmlAll(await started.text(), "UploadId")[0];
    if (!uploadId) throw new Error(`${this.where}: POST ${JSON.stringify(full)} gave no UploadId`);
    const upload = `uploadId=${encodeURIComponent(uploadId)}`;
    try {
      const etags: string[] = [];
      let sent = 0;
      const buffer = new Uint8Array(S3_PART_BYTES);
      for (let part = 1;; part++) {
        const n = await readFull(file, buffer);
        if (n === 0) break;
        // Sent (and any retry of it sent) before the next read refills the buffer.
        const body = buffer.subarray(0, n);
        const response = await this.#ok(
          await this.#send("PUT", full, this.#url(full, `?partNumber=${part}&${upload}`), {
            body,
            headers: { "X-Amz-Content-Sha256": await sha256Hex(body) },
          }),
          "PUT",
          full,
        );
        await response.body?.cancel();
        const etag = response.headers.get("ETag");
        if (!etag) {
          throw new Error(`${this.where}: part ${part} of ${JSON.stringify(full)} has no ETag`);
        }
        etags.push(etag);
        sent += n;
        if (n < buffer.length) break;
      }
      const xml = `<CompleteMultipartUpload>${
        etags.map((etag, i) =>
          `<Part><PartNumber>${i + 1}</PartNumber><ETag>${
            etag.replaceAll("&", "&amp;").replaceAll("<", "&lt;")
          }</ETag></Part>`
        ).join("")
      }</CompleteMultipartUpload>`;
      const done = await this.#ok(
        await this.#send("POST", full, this.#url(full, `?${upload}`), {
          body: new TextEncoder().encode(xml),
          headers: { "Content-Type": "application/xml" },
        }),
        "POST",
        full,
      );
      // S3 may answer 200 and still fail the upload, in the body.
      const answer = await done.text();
      const code = xmlAll(answer, "Code")[0];
      if (answer.includes("<Error>")) {
        throw new Error(
          `${this.where}: POST ${JSON.stringify(full)} answered 200 ${code ?? "Error"}`,
        );
      }
      return sent;
    } catch (error) {
      // Best effort: parts of an upload never completed are billed until aborted.
      await this.#send("DELETE", full, this.#url(full, `?${upload}`))
        .then((r) => r.body?.cancel(), () => {});
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    const full = this.#full(key);
    const response = await this.#send("DELETE", full, this.#url(full));
    // S3 answers 204 for an absent key; some servers say 404.
    if (response.status !== 404) await this.#ok(response, "DELETE", full);
    await response.body?.cancel();
  }

  async exists(key: string): Promise<boolean> {
    const full = this.#full(key);
    const response = await this.#send("HEAD", full, this.#url(full));
    await response.body?.cancel();
    if (response.status === 404) return false;
    if (!response.ok) {
      throw new Error(`${this.where}: HEAD ${JSON.stringify(full)} answered ${response.status}`);
    }
    return true;
  }

  async read(key: string): Promise<{ body: ReadableStream<Uint8Array>; bytes: number } | null> {
    const full = this.#full(key);
    const response = await this.#send("GET", full, this.#url(full));
    if (response.status === 404) {
      await response.body?.cancel();
      return null;
    }
    await this.#ok(response, "GET", full);
    const bytes = Number(response.headers.get("Content-Length"));
    if (!response.body || !Number.isSafeInteger(bytes)) {
      await response.body?.cancel();
      throw new Error(`${this.where}: GET ${JSON.stringify(full)} answered with no Content-Length`);
    }
    return { body: response.body, bytes };
  }

  async presign(key: string, ttlMs: number, now: number): Promise<string> {
    const full = this.#full(key);
    const seconds = Math.floor(ttlMs / 1000);
    if (!(seconds >= 1 && seconds <= MAX_PRESIGN_SECONDS)) {
      throw new RangeError(
        `${this.where}: a pre-signed URL lives 1 s to 7 days, not ${JSON.stringify(ttlMs)} ms`,
      );
    }
    if (!Number.isFinite(now)) {
      throw new RangeError(`presign: now ${JSON.stringify(now)} is not an instant`);
    }
    // `now` as SigV4's basic ISO 8601 (20260101T000000Z), so no machine time is read.
    const datetime = new Date(now).toISOString().replace(/[:-]|\.\d{3}/g, "");
    const signer = new AwsV4Signer({
      url: this.#url(full, `?X-Amz-Expires=${seconds}`),
      method: "GET",
      ...this.#credentials,
      service: "s3",
      signQuery: true,
      datetime,
    });
    return (await signer.sign()).url.toString();
  }

  async list(prefix: string): Promise<string[]> {
    const strip = this.#prefix === "" ? 0 : this.#prefix.length + 1;
    const wanted = this.#prefix === "" ? prefix : `${this.#prefix}/${prefix}`;
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const query = new URLSearchParams({ "list-type": "2", prefix: wanted });
      if (token !== undefined) query.set("continuation-token", token);
      const response = await this.#ok(
        await this.#send("GET", wanted, `${this.#base}?${query}`),
        "GET",
        wanted,
      );
      const xml = await response.text();
      // <Key> appears only in <Contents>, one per object.
      keys.push(...xmlAll(xml, "Key").map((key) => key.slice(strip)));
      token = /<IsTruncated>true<\/IsTruncated>/.test(xml)
        ? xmlAll(xml, "NextContinuationToken")[0]
        : undefined;
    } while (token !== undefined);
    return keys.sort();
  }
}
