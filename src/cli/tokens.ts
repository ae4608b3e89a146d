/**
 * `jobs tokens create | list | revoke`: the credentials of programs. A new
 * token's secret (`jobs_...`) is printed once, by `create`, and stored only
 * as a hash: lost, it is revoked and made again. `list` never shows a
 * secret or a hash. Each change is a thin call into `src/admin/tokens.ts`,
 * audited with the OS user (or `--actor`).
 *
 * @module
 */

import type { Command } from "commander";
import { checkPrincipalName, checkRoles, checkTenant } from "../admin/roles.ts";
import { createToken, listTokens, revokeToken, tokenJson } from "../admin/tokens.ts";
import {
  type CliDeps,
  collect,
  dbPath,
  globalOptions,
  parseDuration,
  quiet,
  who,
} from "./common.ts";
import { orRefused, principalGroup, rolesText, scopeText, when } from "./principals.ts";
import { withStore } from "./store/open.ts";
import { cell, commandLine, iso, safeJson, table } from "./text.ts";

const SUBCOMMANDS = ["create", "list", "revoke"] as const;

const NOT_CONFIG = "tokens are kept in the store, not in the schedules file";

interface WriteOptions {
  db?: string;
  json?: boolean;
  actor?: string;
  reason?: string;
}

/** Registers `tokens` and its commands on the program. */
export function registerTokenCommands(program: Command, deps: CliDeps): void {
  const group = principalGroup(
    program,
    deps,
    "tokens",
    "the tokens programs use: create (the secret printed once), list, revoke (audited)",
    SUBCOMMANDS,
  );
  createCommand(group, deps);
  listCommand(group, deps);
  revokeCommand(group, deps);
}

function createCommand(group: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      group.command("create")
        .description("create a token; its secret is printed this once and stored only hashed")
        .requiredOption("--name <name>", "the token's name: letters, digits, _ . : / -")
        .requiredOption("--role <role>", "a role it holds (repeat for several)", collect)
        .option("--tenant <tenant>", "the one tenant it sees and acts on (default: every one)")
        .option(
          "--expires <duration>",
          "it stops working after this long: 30d, 12h (default: never)",
          parseDuration,
        ),
      {
        db: { mode: "create" },
        config: { not: NOT_CONFIG },
        json: true,
        audit: { reason: "optional" },
      },
    ).action(
      async (
        options: WriteOptions & { name: string; role: string[]; tenant?: string; expires?: number },
      ) => {
        const command = "tokens create";
        await orRefused(command, () => {
          checkPrincipalName("token", options.name);
          checkRoles(options.role);
          checkTenant(options.tenant);
        });
        await withStore(command, dbPath(options.db, deps), "create", deps, async (store) => {
          const { token, secret } = await orRefused(command, () =>
            createToken(
              store,
              {
                name: options.name,
                roles: options.role,
                tenant: options.tenant ?? null,
                expiresInMs: options.expires ?? null,
              },
              who(options, deps),
              "host",
            ));
          if (options.json) {
            deps.out(JSON.stringify({
              name: token.name,
              token: secret,
              roles: token.roles,
              tenant: token.tenant,
              expiresAt: iso(token.expiresAt),
            }));
            return;
          }
          deps.out(
            `token ${cell(token.name)} created: ${rolesText(token)}; ${scopeText(token)}; ` +
              (token.expiresAt === null ? "never expires" : `expires ${iso(token.expiresAt)}`),
          );
          deps.out(secret);
          deps.out(
            `this is the only time the secret is shown (it is stored hashed): keep it now; ` +
              `${commandLine(deps.program, ["tokens", "revoke", token.name])} ends it`,
          );
        });
      },
    ),
    deps,
    "tokens create",
  );
}

function listCommand(group: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      group.command("list").description("every token: roles, tenant, expiry, last use (no secret)"),
      {
        db: { mode: "read" },
        config: { not: NOT_CONFIG },
        json: true,
        audit: { not: "it only reads: nothing to audit" },
      },
    ).action(async (options: { db?: string; json?: boolean }) => {
      await withStore("tokens list", dbPath(options.db, deps), "read", deps, async (store) => {
        const tokens = await listTokens(store, deps.clock.now());
        if (options.json) return deps.out(safeJson(tokens.map(tokenJson)));
        if (tokens.length === 0) {
          deps.out(
            `no tokens yet: ${
              commandLine(deps.program, ["tokens", "create"])
            } --name <name> --role <role> makes one`,
          );
          return;
        }
        const header = ["NAME", "ROLES", "TENANT", "EXPIRES", "LAST USED", "CREATED"];
        const rows = tokens.map((t) => [
          cell(t.name),
          rolesText(t),
          t.tenant === null ? "-" : cell(t.tenant),
          t.expired ? `expired ${iso(t.expiresAt)}` : when(t.expiresAt, "never"),
          when(t.lastUsedAt, "never"),
          `${iso(t.createdAt)} by ${cell(t.createdBy)}`,
        ]);
        for (const line of table([header, ...rows])) deps.out(line);
      });
    }),
    deps,
    "tokens list",
  );
}

function revokeCommand(group: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      group.command("revoke")
        .description("revoke a token: it stops working at once and is removed")
        .argument("<name>", "the token"),
      {
        db: { mode: "write" },
        config: { not: NOT_CONFIG },
        json: true,
        audit: { reason: "optional" },
      },
    ).action(async (name: string, options: WriteOptions) => {
      await withStore("tokens revoke", dbPath(options.db, deps), "write", deps, async (store) => {
        await orRefused("tokens revoke", () => revokeToken(store, name, who(options, deps)));
        if (options.json) return deps.out(JSON.stringify({ name, revoked: true }));
        deps.out(`token ${cell(name)} revoked`);
      });
    }),
    deps,
    "tokens revoke",
  );
}
