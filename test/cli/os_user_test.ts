/**
 * The audit actor when `--actor` is not given: the OS user, found by uid when
 * the environment names nobody (a systemd unit, cron, a container), never
 * "unknown".
 */

import assert from "node:assert/strict";
import { userInfo } from "node:os";
import { osUserName, type UserHost } from "../../src/cli/os_user.ts";
import { withStore } from "../support/stores.ts";
import { withFiles } from "../support/cli.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

function host(fields: Partial<UserHost> & { vars?: Record<string, string> }): UserHost {
  return {
    env: (name) => fields.vars?.[name],
    uid: fields.uid ?? (() => 1000),
    lookup: fields.lookup ?? (() => {
      throw new Error("no user database");
    }),
    passwd: fields.passwd ?? (() => {
      throw new Error("no /etc/passwd");
    }),
  };
}

Deno.test("osUserName() prefers $USER, then $LOGNAME, then the uid's user", () => {
  assert.equal(osUserName(host({ vars: { USER: "ada", LOGNAME: "lo" } })), "ada");
  assert.equal(osUserName(host({ vars: { LOGNAME: "lo" } })), "lo");
  assert.equal(osUserName(host({ vars: { USER: "" }, lookup: () => "svc-jobs" })), "svc-jobs");
});

Deno.test("osUserName() reads /etc/passwd by uid when getpwuid answers nothing", () => {
  const passwd = "root:x:0:0:root:/root:/bin/sh\njobs:x:1000:1000::/srv/jobs:/bin/sh\n";
  assert.equal(osUserName(host({ passwd: () => passwd })), "jobs");
  assert.equal(osUserName(host({ uid: () => 4242, passwd: () => passwd })), "uid 4242");
  assert.equal(osUserName(host({})), "uid 1000");
});

Deno.test("jobs records the OS user as the actor with $USER and $LOGNAME unset", async () => {
  await withFiles("version: 1\nschedules: []\n", async ({ db, config }) => {
    const env = Deno.env.toObject();
    delete env.USER;
    delete env.LOGNAME;
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        MAIN,
        "enqueue",
        "jobs.command",
        "--args",
        '{"kind":"command","argv":["true"]}',
        "--db",
        db,
        "--config",
        config,
        "--create",
      ],
      clearEnv: true,
      env,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    await withStore(db, async (store) => {
      const [job] = await store.jobsList({});
      const audit = await store.auditList({ target: `job:${job!.id}` });
      assert.deepEqual(audit.map((a) => a.actor), [userInfo().username]);
    });
  });
});
