/**
 * `jobs sessions list | revoke`: the web console's sessions. `list` shows
 * each by its handle (the first hex digits of the hash of its id: neither
 * the id nor the hash is ever shown); `revoke` ends one by a prefix of its
 * handle, or every one of a person (`--user`), audited `session.revoke`
 * with the OS user (or `--actor`). Thin calls into `src/admin/sessions.ts`.
 *
 * @module
 */

import type { Command } from "commander";
import {
  listSessions,
  revokeSessions,
  sessionHandle,
  sessionJson,
  SessionRefused,
} from "../admin/sessions.ts";
import { type CliDeps, CommandFailed, dbPath, globalOptions, quiet, who } from "./common.ts";
import { principalGroup } from "./principals.ts";
import { withStore } from "./store/open.ts";
import { cell, commandLine, echo, iso, safeJson, table } from "./text.ts";

const SUBCOMMANDS = ["list", "revoke"] as const;

const NOT_CONFIG = "sessions are kept in the store, not in the schedules file";

/** Registers `sessions` and its commands on the program. */
export function registerSessionCommands(program: Command, deps: CliDeps): void {
  const group = principalGroup(
    program,
    deps,
    "sessions",
    "the web console's sessions: list, revoke (one, or every one of a person; audited)",
    SUBCOMMANDS,
  );
  listCommand(group, deps);
  revokeCommand(group, deps);
}

function listCommand(group: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      group.command("list").description(
        "every console session, newest first: handle, person, last seen, expiry, address",
      ),
      {
        db: { mode: "read" },
        config: { not: NOT_CONFIG },
        json: true,
        audit: { not: "it only reads: nothing to audit" },
      },
    ).action(async (options: { db?: string; json?: boolean }) => {
      await withStore("sessions list", dbPath(options.db, deps), "read", deps, async (store) => {
        const now = deps.clock.now();
        const sessions = (await listSessions(store)).filter((s) => s.expiresAt > now);
        if (options.json) return deps.out(safeJson(sessions.map(sessionJson)));
        if (sessions.length === 0) {
          deps.out("no console sessions: nobody is signed in");
          return;
        }
        const header = ["HANDLE", "PERSON", "SIGNED IN", "LAST SEEN", "EXPIRES", "ADDRESS"];
        const rows = sessions.map((s) => [
          sessionHandle(s),
          cell(s.person),
          iso(s.createdAt)!,
          iso(s.lastSeenAt)!,
          iso(s.expiresAt)!,
          s.address === null ? "-" : cell(s.address),
        ]);
        for (const line of table([header, ...rows])) deps.out(line);
      });
    }),
    deps,
    "sessions list",
  );
}

function revokeCommand(group: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      group.command("revoke")
        .description("end a console session now: one by its handle, or every one of --user")
        .argument("[handle]", "the session's handle, or its first 6 or more hex digits")
        .option("--user <name>", "end every session of this person"),
      {
        db: { mode: "write" },
        config: { not: NOT_CONFIG },
        json: true,
        audit: { reason: "optional" },
      },
    ).action(
      async (
        handle: string | undefined,
        options: { db?: string; json?: boolean; actor?: string; reason?: string; user?: string },
      ) => {
        const command = "sessions revoke";
        if ((handle === undefined) === (options.user === undefined)) {
          throw new CommandFailed(
            `jobs ${command}: give a session's handle or --user <name>, not both (${
              commandLine(deps.program, ["sessions", "list"])
            } shows the handles)`,
            2,
          );
        }
        await withStore(command, dbPath(options.db, deps), "write", deps, async (store) => {
          let handles: string[];
          try {
            handles = await revokeSessions(
              store,
              handle === undefined ? { person: options.user! } : { prefix: handle },
              who(options, deps),
            );
          } catch (error) {
            if (error instanceof SessionRefused) {
              throw new CommandFailed(
                `jobs ${command}: ${echo(error.message, 400)}`,
                error.why === "bad-prefix" ? 2 : 1,
              );
            }
            throw error;
          }
          if (options.json) return deps.out(JSON.stringify({ revoked: handles }));
          deps.out(
            handles.length === 0
              ? `no session of ${cell(options.user ?? "")} to revoke`
              : `revoked ${handles.length === 1 ? "session" : "sessions"} ${handles.join(", ")}`,
          );
        });
      },
    ),
    deps,
    "sessions revoke",
  );
}
