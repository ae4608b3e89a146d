import assert from "node:assert/strict";
import { pathToFileURL } from "node:url";
import {
  findOnPath,
  inNpxCache,
  invocation,
  type InvocationHost,
  launcherRuns,
  launcherScript,
  posixQuote,
} from "../../src/cli/invocation.ts";
import { tempDir } from "../support/stores.ts";

const DENO = "/opt/deno 2.9/deno";

function host(
  env: Record<string, string>,
  options: { standalone?: boolean; execPath?: string } = {},
): InvocationHost {
  return {
    env: (name) => env[name],
    execPath: () => options.execPath ?? DENO,
    standalone: options.standalone ?? false,
    denoVersion: "2.9.6",
  };
}

/** The command lines printed for pasting. */
function pasted(mainUrl: URL, host: InvocationHost): string {
  return invocation(mainUrl, host).program;
}

/** A checkout folder with a main.ts, and folders for PATH; all under a path with a space. */
async function fixture(): Promise<{
  main: string;
  mainUrl: URL;
  folder(name: string): Promise<string>;
  [Symbol.asyncDispose](): Promise<void>;
}> {
  const dir = await tempDir();
  const checkout = `${dir.path}/my checkout`;
  await Deno.mkdir(checkout);
  const main = `${checkout}/main.ts`;
  await Deno.writeTextFile(main, "");
  return {
    main,
    mainUrl: pathToFileURL(main),
    folder: async (name) => {
      const path = `${dir.path}/${name}`;
      await Deno.mkdir(path, { recursive: true });
      return path;
    },
    [Symbol.asyncDispose]: dir.cleanup,
  };
}

async function writeExecutable(path: string, text: string, mode = 0o755): Promise<void> {
  await Deno.writeTextFile(path, text);
  await Deno.chmod(path, mode);
}

Deno.test("invocation() answers JOBS_PROGRAM, which the launchers set, before anything else", async () => {
  await using f = await fixture();
  assert.equal(pasted(f.mainUrl, host({ JOBS_PROGRAM: "jobsctl", PATH: "" })), "jobsctl");
  assert.equal(
    pasted(f.mainUrl, host({ JOBS_PROGRAM: "/srv/bin/jobsctl" }, { standalone: true })),
    "/srv/bin/jobsctl",
  );
});

Deno.test("invocation() answers jobsctl when the first jobsctl on PATH launches this main.ts", async () => {
  await using f = await fixture();
  const bin = await f.folder("home dir/.local/bin");
  const script = launcherScript({ deno: DENO, config: "/x/deno.json", main: f.main });
  await writeExecutable(`${bin}/jobsctl`, script);
  assert.equal(pasted(f.mainUrl, host({ PATH: `/nonexistent:${bin}/` })), "jobsctl");
});

Deno.test("invocation() prints the whole quoted deno run line when no jobsctl on PATH runs this checkout", async () => {
  await using f = await fixture();
  const full = `'${DENO}' run -A '${f.main}'`;
  assert.equal(pasted(f.mainUrl, host({ PATH: "/nonexistent" })), full);
  assert.equal(pasted(f.mainUrl, host({})), full);

  // A launcher of another checkout.
  const other = await f.folder("other/bin");
  await writeExecutable(
    `${other}/jobsctl`,
    launcherScript({ deno: DENO, config: "/x/deno.json", main: "/elsewhere/main.ts" }),
  );
  assert.equal(pasted(f.mainUrl, host({ PATH: other })), full);

  // This checkout's launcher, shadowed by an unrelated jobsctl earlier on PATH.
  const ours = await f.folder("ours/bin");
  await writeExecutable(
    `${ours}/jobsctl`,
    launcherScript({ deno: DENO, config: "/x/deno.json", main: f.main }),
  );
  const shadow = await f.folder("shadow/bin");
  await writeExecutable(`${shadow}/jobsctl`, "#!/bin/sh\necho another program\n");
  assert.equal(pasted(f.mainUrl, host({ PATH: `${shadow}:${ours}` })), full);
  assert.equal(pasted(f.mainUrl, host({ PATH: `${ours}:${shadow}` })), "jobsctl");
});

Deno.test("invocation() answers a compiled binary's own quoted path", async () => {
  await using f = await fixture();
  assert.equal(pasted(f.mainUrl, host({ PATH: "" }, { standalone: true })), `'${DENO}'`);
});

Deno.test("invocation() answers jobsctl when the process may not read its environment", async () => {
  await using f = await fixture();
  const denied: InvocationHost = {
    env: () => {
      throw new Deno.errors.NotCapable("Requires env access");
    },
    execPath: () => DENO,
    standalone: false,
    denoVersion: "2.9.6",
  };
  assert.deepEqual(invocation(f.mainUrl, denied), { program: "jobsctl", name: "jobsctl" });
});

Deno.test("invocation() names a Deno that npx fetched as npx --yes deno@<version>, never by its path in npm's cache", async () => {
  await using f = await fixture();
  const cached = "/home/ada/.npm/_npx/7a40be787520bede/node_modules/deno/deno";
  assert.deepEqual(invocation(f.mainUrl, host({ PATH: "/usr/bin" }, { execPath: cached })), {
    program: `npx --yes deno@2.9.6 run -A '${f.main}'`,
    name: "jobs",
  });
  // A Deno in a project's own node_modules stays where it is: its path is printed.
  const local = "/srv/app/node_modules/deno/deno";
  assert.equal(
    invocation(f.mainUrl, host({}, { execPath: local })).program,
    `${local} run -A '${f.main}'`,
  );
  assert.equal(inNpxCache(cached), true);
  assert.equal(inNpxCache("/root/.npm/_npx-notes/deno"), false);
});

Deno.test("invocation() names the errors after the launcher or binary a person typed, else jobs", async () => {
  await using f = await fixture();
  const name = (h: InvocationHost) => invocation(f.mainUrl, h).name;
  assert.equal(name(host({ JOBS_PROGRAM: "jobsctl" })), "jobsctl");
  assert.equal(name(host({ JOBS_PROGRAM: "/srv/bin/jobsctl" })), "jobsctl");
  assert.equal(name(host({ JOBS_PROGRAM: "docker exec app jobsctl" })), "jobs");
  assert.equal(name(host({ PATH: "" }, { standalone: true, execPath: "/opt/dist/jobs" })), "jobs");
  assert.equal(name(host({ PATH: "" }, { standalone: true, execPath: "/opt/dist/jq2" })), "jq2");
  const bin = await f.folder("bin");
  await writeExecutable(
    `${bin}/jobsctl`,
    launcherScript({ deno: DENO, config: "/x/deno.json", main: f.main }),
  );
  assert.equal(name(host({ PATH: bin })), "jobsctl");
  assert.equal(name(host({ PATH: "/nonexistent" })), "jobs");
});

Deno.test("findOnPath() skips folders without the name and files that are not executable", async () => {
  await using f = await fixture();
  const plain = await f.folder("plain");
  const exec = await f.folder("exec");
  await writeExecutable(`${plain}/jobsctl`, "#!/bin/sh\n", 0o644);
  await writeExecutable(`${exec}/jobsctl`, "#!/bin/sh\n");
  await Deno.mkdir(`${plain}/jobs`);
  assert.equal(findOnPath("jobsctl", `/nonexistent:${plain}:${exec}`), `${exec}/jobsctl`);
  assert.equal(findOnPath("jobs", plain), null);
  assert.equal(findOnPath("jobsctl", ""), null);
});

Deno.test("launcherRuns() tells this checkout's launcher from another's and from other scripts", () => {
  const main = "/src/it's here/main.ts";
  const script = launcherScript({ deno: DENO, config: "/src/it's here/deno.json", main });
  assert.equal(launcherRuns(script, main), true);
  assert.equal(launcherRuns(script, "/src/it/main.ts"), false);
  assert.equal(launcherRuns(`#!/bin/sh\nexec deno run ${posixQuote(main)} "$@"\n`, main), false);
});

Deno.test({
  name:
    "the launcher passes its arguments through and exports JOBS_PROGRAM=jobsctl with spaces, quotes and $ in every path",
  sanitizeResources: false,
  fn: async () => {
    await using f = await fixture();
    const odd = await f.folder(`it's "odd" $HOME \`x\``);
    // A stand-in for Deno that prints what it was given, one word a line.
    const deno = `${odd}/deno`;
    await writeExecutable(
      deno,
      `#!/bin/sh\nprintf '%s\\n' "JOBS_PROGRAM=$JOBS_PROGRAM" "$@"\n`,
    );
    const launcher = `${odd}/jobsctl`;
    const config = `${odd}/deno.json`;
    const main = `${odd}/main.ts`;
    await writeExecutable(launcher, launcherScript({ deno, config, main }));
    const args = ["ls", "--search", "a b", "$(touch pwned)", "'", ""];
    for (const sh of ["/bin/sh", "bash", "dash"]) {
      if (sh === "dash" && findOnPath("dash", Deno.env.get("PATH") ?? "") === null) continue;
      const out = await new Deno.Command(sh, {
        args: [launcher, ...args],
        cwd: odd,
        env: { JOBS_PROGRAM: "something else" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(out.code, 0, `${sh}: ${new TextDecoder().decode(out.stderr)}`);
      assert.deepEqual(new TextDecoder().decode(out.stdout).split("\n").slice(0, -1), [
        "JOBS_PROGRAM=jobsctl",
        "run",
        "--allow-all",
        "--config",
        config,
        main,
        ...args,
      ], sh);
    }
    await assert.rejects(Deno.stat(`${odd}/pwned`), Deno.errors.NotFound);
  },
});
