/**
 * The operating-system user, for the audit trail when `--actor` is not
 * given: `$USER`, else `$LOGNAME` (`%USERNAME%` on Windows), else the user of this process's uid,
 * looked up as the C library would (`node:os` userInfo, which asks
 * getpwuid), else in `/etc/passwd`. A service started without a login
 * environment (systemd, cron, a container) has neither variable, and its
 * actions must still name someone: never "unknown".
 *
 * @module
 */

import { userInfo } from "node:os";

/** What {@linkcode osUserName} reads of the running process. */
export interface UserHost {
  env(name: string): string | undefined;
  /** The process's uid, or null where there is none (Windows). */
  uid(): number | null;
  /** The user database's name for the process's uid (getpwuid); throws when it has none. */
  lookup(): string;
  /** The text of `/etc/passwd`; throws when it cannot be read. */
  passwd(): string;
}

/** The running Deno process, as {@linkcode osUserName} reads it. */
export function denoUserHost(): UserHost {
  return {
    env: (name) => Deno.env.get(name),
    uid: () => Deno.uid(),
    lookup: () => userInfo().username,
    passwd: () => Deno.readTextFileSync("/etc/passwd"),
  };
}

/** The OS user's name (see the module's documentation); `uid <n>` when no database names it. */
export function osUserName(host: UserHost = denoUserHost()): string {
  const fromEnv = attempt(() => host.env("USER")) || attempt(() => host.env("LOGNAME")) ||
    attempt(() => host.env("USERNAME"));
  if (fromEnv) return fromEnv;
  const looked = attempt(() => host.lookup());
  if (looked) return looked;
  const uid = attempt(() => host.uid());
  if (uid === null || uid === undefined) return "uid unknown";
  const text = attempt(() => host.passwd()) ?? "";
  for (const line of text.split("\n")) {
    const [name, , id] = line.split(":");
    if (name && id !== undefined && Number(id) === uid) return name;
  }
  return `uid ${uid}`;
}

function attempt<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}
