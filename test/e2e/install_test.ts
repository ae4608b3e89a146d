/**
 * `deno task install` on a machine where Deno is not on PATH (what
 * `npx --yes deno@2.9.6 task install` meets): the launchers it writes run the
 * program with PATH still without Deno, from a checkout and a HOME whose paths
 * hold spaces and a quote; it says what to add to PATH; running it again
 * replaces what it wrote; it does not overwrite a stranger's `jobs`.
 */

import assert from "node:assert/strict";
import { findOnPath, launcherRuns } from "../../src/cli/invocation.ts";
import {
  BARE_PATH,
  CHECKOUT,
  cleanHome,
  copyCheckout,
  runIn,
  runInstall,
} from "../support/install.ts";

const VERSION_LINE = /^jobs \d+\.\d+\.\d+ \(deno \d+\.\d+\.\d+\)$/;

Deno.test({
  name: "deno task install with no Deno on PATH writes jobs and jobsctl that run the program " +
    "from a checkout path with spaces and a quote, and says what to add to PATH",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    assert.equal(
      findOnPath("deno", BARE_PATH),
      null,
      `a deno on ${BARE_PATH} would hide the point`,
    );
    await using home = await cleanHome();
    const checkout = `${home.root}/the team's jobs checkout`;
    await copyCheckout(checkout);
    const env = home.env();

    const expected = await runIn(checkout, env, Deno.execPath(), [
      "run",
      "-A",
      "main.ts",
      "version",
    ]);
    assert.equal(expected.code, 0, expected.stderr);
    assert.match(expected.stdout.trim(), VERSION_LINE);

    const installed = await runInstall(checkout, env);
    assert.equal(installed.code, 0, `${installed.stdout}\n${installed.stderr}`);
    const out = installed.stdout;
    const kept = `${home.home}/.local/share/jobs/deno-${Deno.version.deno}/deno`;
    assert.ok(out.includes(`kept Deno ${Deno.version.deno}: ${kept}`), out);
    for (const name of ["jobs", "jobsctl"]) {
      assert.ok(out.includes(`wrote ${home.bin}/${name}\n`), `no "wrote .../${name}" in:\n${out}`);
    }
    assert.ok(out.includes(`${home.bin} is not on PATH.`), out);
    assert.ok(out.includes(`  export PATH="${home.bin}:$PATH"\n`), out);
    assert.ok(out.includes(`  fish_add_path '${home.bin}'\n`), out);

    // The launchers run with PATH still without Deno, from anywhere.
    for (const name of ["jobsctl", "jobs"]) {
      const ran = await runIn(home.root, env, `${home.bin}/${name}`, ["--version"]);
      assert.equal(ran.code, 0, `${name} --version: ${ran.stderr}`);
      assert.equal(ran.stdout, expected.stdout, `${name} --version`);
      const text = await Deno.readTextFile(`${home.bin}/${name}`);
      assert.ok(launcherRuns(text, `${await Deno.realPath(checkout)}/main.ts`), text);
      assert.ok(text.includes(`'${kept}'`), `${name} does not exec the kept Deno:\n${text}`);
    }

    // The PATH line it printed, pasted into bash, makes `jobsctl` reach the program.
    const line = out.split("\n").find((l) => l.startsWith("  export PATH="))!.trim();
    const pasted = await runIn(home.root, env, "bash", ["-c", `${line}; jobsctl --version`]);
    assert.equal(pasted.code, 0, pasted.stderr);
    assert.equal(pasted.stdout, expected.stdout);
  },
});

Deno.test({
  name: "deno task install run again replaces its launchers and its Deno, and never overwrites " +
    "a jobs that is not its launcher unless --force",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using home = await cleanHome();
    const env = home.env();
    const first = await runInstall(CHECKOUT, env);
    assert.equal(first.code, 0, `${first.stdout}\n${first.stderr}`);
    const script = await Deno.readTextFile(`${home.bin}/jobsctl`);

    const again = await runInstall(CHECKOUT, env);
    assert.equal(again.code, 0, `${again.stdout}\n${again.stderr}`);
    assert.match(again.stdout, new RegExp(`replaced ${escape(home.bin)}/jobs\n`));
    assert.match(again.stdout, new RegExp(`replaced ${escape(home.bin)}/jobsctl\n`));
    assert.equal(await Deno.readTextFile(`${home.bin}/jobsctl`), script);
    assert.deepEqual(
      (await Array.fromAsync(Deno.readDir(home.bin))).map((e) => e.name).sort(),
      ["jobs", "jobsctl"],
      "a temporary file was left behind",
    );

    // Someone else's `jobs` in another bin folder given with --bin (relative to the task's start).
    const other = `${home.root}/other bin`;
    await Deno.mkdir(other);
    const stranger = "#!/bin/sh\necho someone else's jobs\n";
    await Deno.writeTextFile(`${other}/jobs`, stranger, { mode: 0o755 });
    const refused = await runInstall(CHECKOUT, { ...env, INIT_CWD: home.root }, [
      "--bin",
      "other bin",
    ]);
    assert.equal(refused.code, 1, refused.stdout);
    assert.match(
      refused.stderr,
      new RegExp(`jobs install: "${escape(other)}/jobs" exists and is not a jobs launcher`),
    );
    assert.equal(await Deno.readTextFile(`${other}/jobs`), stranger);
    assert.deepEqual(
      (await Array.fromAsync(Deno.readDir(other))).map((e) => e.name),
      ["jobs"],
      "a refused install wrote a launcher",
    );

    const forced = await runInstall(CHECKOUT, { ...env, INIT_CWD: home.root }, [
      "--bin",
      "other bin",
      "--force",
    ]);
    assert.equal(forced.code, 0, forced.stderr);
    const ran = await runIn(home.root, env, `${other}/jobs`, ["version"]);
    assert.equal(ran.code, 0, ran.stderr);
    assert.match(ran.stdout.trim(), VERSION_LINE);

    const wrong = await runInstall(CHECKOUT, env, ["--bim", "x"]);
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /jobs install: unknown argument "--bim"; run with --help/);
  },
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

Deno.test({
  name: "after deno task install into an empty Deno cache, the first commands download nothing",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    await using home = await cleanHome({ freshCache: true });
    const checkout = `${home.root}/checkout`;
    await copyCheckout(checkout);
    const env = home.env();
    const installed = await runInstall(checkout, env);
    assert.equal(installed.code, 0, `${installed.stdout}\n${installed.stderr}`);
    for (const args of [["status", "--db", `${home.root}/none.db`], ["check"], ["runbook"]]) {
      const ran = await runIn(checkout, env, `${home.bin}/jobsctl`, args);
      const downloads = ran.stderr.split("\n").filter((line) => /Download/.test(line));
      assert.deepEqual(downloads, [], `jobsctl ${args.join(" ")} downloaded`);
      assert.match(ran.stdout, /\S/, `jobsctl ${args.join(" ")} printed nothing: ${ran.stderr}`);
    }
  },
});
