/**
 * What the web console's browser tests share: a real `jobs daemon` on a
 * SQLite file or a fresh PostgreSQL schema, listening on a free loopback
 * port (read from its `http.listening` event); people added with
 * `jobs users add` (the password on stdin); Debian's Chromium driven by
 * playwright-core with a fresh profile; every page watched for console
 * errors, page errors, dialogs and CSP violations (`securitypolicyviolation`
 * events, reported through a binding, which the page's CSP cannot block);
 * and screenshots at 1280x800 under `test/e2e/output/console/<backend>/`
 * (ignored by git) for review.
 *
 * A page author's browser test: `await using c = await consoleFixture("sqlite")`,
 * `await c.addPerson(...)`, `const w = await c.signedIn(name, password)`,
 * `await w.page.goto(c.url + "/queues")`, assertions, `await c.screenshot(w, "queues")`,
 * and `w.problems()` empty at the end.
 */

import { fileURLToPath } from "node:url";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { openStore } from "../../src/store/open.ts";
import type { Store } from "../../src/store/store.ts";
import { type DaemonProcess, MAIN, spawnDaemon } from "../support/daemon_process.ts";
import { postgresLocation } from "../support/pg_schema.ts";
import { tempDir } from "../support/stores.ts";

/** Where Debian's Chromium is (`.ci/run` installs the `chromium` package when missing). */
export const CHROMIUM = "/usr/bin/chromium";

/** The flags Chromium runs with: headless, no sandbox (containers), nothing phoning home. */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Where screenshots go: one folder per backend. */
export const OUTPUT = fileURLToPath(new URL("./output/console/", import.meta.url));

/** The viewport every page is shown and shot at. */
export const VIEWPORT = { width: 1280, height: 800 };

/** A browser context and its page, with what went wrong on it so far. */
export interface Watched {
  context: BrowserContext;
  page: Page;
  /** Console errors, page errors, dialogs and CSP violations, one line each. */
  problems(): string[];
}

/** Options of {@linkcode consoleFixture}. */
export interface FixtureOptions {
  /** More environment for the daemon (`JOBS_CONSOLE_SESSION_IDLE`). */
  env?: Record<string, string>;
  /**
   * The daemon's schedules file: its text, or a function that writes it (and
   * what it names) under `dir`, the fixture's temp folder, and returns its
   * path. @default no schedule
   */
  config?: string | ((dir: string) => Promise<string>);
  /** More arguments of `jobs daemon` (`--environment staging`). */
  args?: string[];
}

/** A daemon serving the console, a browser, and the helpers of the tests. */
export interface ConsoleFixture {
  backend: "sqlite" | "postgres";
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  url: string;
  /** The store's location (`--db`). */
  db: string;
  /** The daemon's schedules file (`--config`). */
  config: string;
  daemon: DaemonProcess;
  browser: Browser;
  /** A connection to the daemon's store, for seeding and checking rows. */
  store: Store;
  /** Adds a person with `jobs users add`, the password on stdin. */
  addPerson(name: string, roles: string[], password: string, tenant?: string): Promise<void>;
  /** A fresh browser context (no cookie) and page, watched. */
  open(): Promise<Watched>;
  /** A fresh context signed in as `name` through the form; on the overview. */
  signedIn(name: string, password: string): Promise<Watched>;
  /** Writes `<name>.png` of the page under the backend's output folder. */
  screenshot(w: Watched, name: string): Promise<string>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Starts a daemon on `backend` and a browser; everything is stopped and removed on dispose. */
export async function consoleFixture(
  backend: "sqlite" | "postgres",
  options: FixtureOptions = {},
): Promise<ConsoleFixture> {
  const stack = new AsyncDisposableStack();
  try {
    const dir = await tempDir();
    stack.defer(dir.cleanup);
    let db = `${dir.path}/jobs.db`;
    if (backend === "postgres") {
      const pg = postgresLocation();
      stack.defer(() => pg[Symbol.asyncDispose]());
      db = pg.url;
    }
    let config = `${dir.path}/schedules.yaml`;
    if (typeof options.config === "function") config = await options.config(dir.path);
    else await Deno.writeTextFile(config, options.config ?? "version: 1\nschedules: []\n");
    const daemon = spawnDaemon(
      [
        "--db",
        db,
        "--config",
        config,
        "--node",
        "console-1",
        "--listen",
        "127.0.0.1:0",
        ...(options.args ?? []),
      ],
      { name: "console daemon", ...(options.env ? { env: options.env } : {}) },
    );
    stack.defer(() => daemon[Symbol.asyncDispose]());
    const listening = await daemon.waitFor("http.listening", () => true, 60_000);
    const url = `http://127.0.0.1:${listening.port}`;
    const opened = await openStore(db, { mode: "write" });
    stack.defer(() => opened.store.close());
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    stack.defer(() => browser.close());
    const out = `${OUTPUT}${backend}/`;
    await Deno.mkdir(out, { recursive: true });

    const open = async (): Promise<Watched> => {
      const context = await browser.newContext({ viewport: VIEWPORT });
      const found: string[] = [];
      await context.exposeBinding("__reportViolation", (_source, text: string) => {
        found.push(`CSP violation: ${text}`);
      });
      // A string, run in the page (whose types are not Deno's), before any of its scripts.
      await context.addInitScript({
        content: `document.addEventListener("securitypolicyviolation", (e) =>
          globalThis.__reportViolation(e.violatedDirective + " " + e.blockedURI));`,
      });
      const page = await context.newPage();
      page.on("console", (m) => {
        if (m.type() === "error") found.push(`console error: ${m.text()}`);
      });
      page.on("pageerror", (e) => found.push(`page error: ${e.message}`));
      page.on("dialog", (d) => {
        found.push(`dialog: ${d.message()}`);
        d.dismiss().catch(() => {});
      });
      return { context, page, problems: () => [...found] };
    };

    return {
      backend,
      url,
      db,
      config,
      daemon,
      browser,
      store: opened.store,
      async addPerson(name, roles, password, tenant) {
        const args = ["run", "--allow-all", MAIN, "users", "add", name, "--db", db];
        for (const role of roles) args.push("--role", role);
        if (tenant !== undefined) args.push("--tenant", tenant);
        const child = new Deno.Command(Deno.execPath(), {
          args,
          stdin: "piped",
          stdout: "piped",
          stderr: "piped",
          env: { NO_COLOR: "1", USER: "e2e-operator" },
          signal: AbortSignal.timeout(60_000),
        }).spawn();
        const writer = child.stdin.getWriter();
        await writer.write(new TextEncoder().encode(`${password}\n`));
        await writer.close();
        const done = await child.output();
        if (done.code !== 0) {
          throw new Error(`jobs users add ${name}: ${new TextDecoder().decode(done.stderr)}`);
        }
      },
      open,
      async signedIn(name, password) {
        const w = await open();
        await w.page.goto(`${url}/login`);
        await w.page.fill("input[name=name]", name);
        await w.page.fill("input[name=password]", password);
        await Promise.all([
          w.page.waitForURL(`${url}/`),
          w.page.click("button[type=submit]"),
        ]);
        return w;
      },
      async screenshot(w, name) {
        const path = `${out}${name}.png`;
        await w.page.screenshot({ path, fullPage: false });
        return path;
      },
      async [Symbol.asyncDispose]() {
        await stack.disposeAsync();
      },
    };
  } catch (error) {
    await stack.disposeAsync();
    throw error;
  }
}
