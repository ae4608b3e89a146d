/**
 * `jobs users add | list | set | disable | enable | remove | totp`: the people who
 * sign in, managed from the host, where the command line with store access
 * is the root of trust and needs no sign-in (it bootstraps the first admin:
 * `jobs users add ada --role admin`). A password is asked twice at a
 * terminal without echo, or read once from stdin; it is never printed,
 * logged or audited. Each change is a thin call into `src/admin/people.ts`,
 * audited with the OS user (or `--actor`).
 *
 * @module
 */

import type { Command } from "commander";
import {
  addPerson,
  enrolTotp,
  listPeople,
  MAX_PASSWORD_LENGTH,
  personJson,
  removePerson,
  setPerson,
  setPersonDisabled,
} from "../admin/people.ts";
import { checkPrincipalName, checkRoles, checkTenant } from "../admin/roles.ts";
import {
  type CliDeps,
  collect,
  CommandFailed,
  dbPath,
  globalOptions,
  quiet,
  who,
} from "./common.ts";
import { orRefused, principalGroup, rolesText, scopeText, when } from "./principals.ts";
import { withStore } from "./store/open.ts";
import { totpQrTerminal } from "../workqueue/totp.ts";
import { cell, commandLine, iso, safeJson, table } from "./text.ts";

const SUBCOMMANDS = ["add", "list", "set", "disable", "enable", "remove", "totp"] as const;

const ROLES_HELP = `
Roles (several may be held):
  viewer    reads everything in its scope
  operator  acts on jobs, queues, schedules, workflows, pipelines and reports
  approver  confirms what needs a second person
  admin     people, tokens and settings
  <other>   a work queue's role (support): works the queues whose roles: name it,
            and nothing else (a lowercase letter, then a-z 0-9 _ -, up to 40)

The password is asked twice at a terminal (not shown), else read from stdin:
  printf '%s\\n' "$PASSWORD" | jobsctl users add ada --role admin`;

interface WriteOptions {
  db?: string;
  json?: boolean;
  actor?: string;
  reason?: string;
}

/** Registers `users` and its commands on the program. */
export function registerUserCommands(program: Command, deps: CliDeps): void {
  const group = principalGroup(
    program,
    deps,
    "users",
    "the people who sign in: add, list, set, disable, enable, remove, totp (audited)",
    SUBCOMMANDS,
  );
  addCommand(group, deps);
  listCommand(group, deps);
  setCommand(group, deps);
  for (const disabled of [true, false]) disableCommand(group, deps, disabled);
  removeCommand(group, deps);
  totpCommand(group, deps);
}

function write(command: Command): Command {
  return globalOptions(command, {
    db: { mode: "write" },
    config: { not: "people are kept in the store, not in the schedules file" },
    json: true,
    audit: { reason: "optional" },
  });
}

function addCommand(group: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      group.command("add")
        .description("add a person who signs in with a password (asked twice, or read from stdin)")
        .argument("<name>", "their name: letters, digits, _ . : / @ -")
        .requiredOption("--role <role>", "a role they hold (repeat for several)", collect)
        .option("--tenant <tenant>", "the one tenant they see and act on (default: every one)")
        .option("--display-name <text>", "their name as shown")
        .addHelpText("after", ROLES_HELP),
      {
        db: { mode: "create" },
        config: { not: "people are kept in the store, not in the schedules file" },
        json: true,
        audit: { reason: "optional" },
      },
    ).action(
      async (
        name: string,
        options: WriteOptions & { role: string[]; tenant?: string; displayName?: string },
      ) => {
        const command = "users add";
        // Checked before the password is asked, so a typo costs no typing.
        await orRefused(command, () => {
          checkPrincipalName("person", name);
          checkRoles(options.role);
          checkTenant(options.tenant);
        });
        const password = await readPassword(command, deps);
        await withStore(command, dbPath(options.db, deps), "create", deps, async (store) => {
          const person = await orRefused(command, () =>
            addPerson(
              store,
              {
                name,
                roles: options.role,
                tenant: options.tenant ?? null,
                displayName: options.displayName ?? null,
                password,
              },
              who(options, deps),
              "host",
            ));
          if (options.json) return deps.out(safeJson(personJson(person)));
          deps.out(`user ${cell(name)} added: ${rolesText(person)}; ${scopeText(person)}`);
        });
      },
    ),
    deps,
    "users add",
  );
}

function listCommand(group: Command, deps: CliDeps): void {
  quiet(
    globalOptions(
      group.command("list").description("every person: roles, tenant, state, last sign-in"),
      {
        db: { mode: "read" },
        config: { not: "people are kept in the store, not in the schedules file" },
        json: true,
        audit: { not: "it only reads: nothing to audit" },
      },
    ).action(async (options: { db?: string; json?: boolean }) => {
      await withStore("users list", dbPath(options.db, deps), "read", deps, async (store) => {
        const people = await listPeople(store);
        if (options.json) return deps.out(safeJson(people.map(personJson)));
        if (people.length === 0) {
          deps.out(
            `no people yet: ${
              commandLine(deps.program, ["users", "add"])
            } <name> --role admin adds the first`,
          );
          return;
        }
        const header = [
          "NAME",
          "DISPLAY NAME",
          "ROLES",
          "TENANT",
          "STATE",
          "LAST SIGN-IN",
          "CREATED",
        ];
        const rows = people.map((p) => [
          cell(p.name),
          p.displayName === null ? "-" : cell(p.displayName),
          rolesText(p),
          p.tenant === null ? "-" : cell(p.tenant),
          p.disabled ? "disabled" : "enabled",
          when(p.lastUsedAt, "never"),
          `${iso(p.createdAt)} by ${cell(p.createdBy)}`,
        ]);
        for (const line of table([header, ...rows])) deps.out(line);
      });
    }),
    deps,
    "users list",
  );
}

function setCommand(group: Command, deps: CliDeps): void {
  quiet(
    write(
      group.command("set")
        .description("change a person's roles, tenant, display name or password")
        .argument("<name>", "the person")
        .option("--role <role>", "the roles they hold from now on (repeat for several)", collect)
        .option("--tenant <tenant>", "the one tenant they see and act on from now on")
        .option("--no-tenant", "every tenant from now on (installation-wide)")
        .option("--display-name <text>", "their name as shown")
        .option("--password", "set a new password (asked twice, or read from stdin)")
        .addHelpText("after", ROLES_HELP),
    ).action(
      async (
        name: string,
        options: WriteOptions & {
          role?: string[];
          tenant?: string | false;
          displayName?: string;
          password?: boolean;
        },
      ) => {
        const command = "users set";
        const tenant = options.tenant === false ? null : options.tenant;
        const change = {
          ...(options.role === undefined ? {} : { roles: options.role }),
          ...(tenant === undefined ? {} : { tenant }),
          ...(options.displayName === undefined ? {} : { displayName: options.displayName }),
        };
        await orRefused(command, () => {
          if (change.roles) checkRoles(change.roles);
          checkTenant(change.tenant);
        });
        const password = options.password ? await readPassword(command, deps) : undefined;
        await withStore(command, dbPath(options.db, deps), "write", deps, async (store) => {
          const person = await orRefused(command, () =>
            setPerson(
              store,
              name,
              { ...change, ...(password === undefined ? {} : { password }) },
              who(options, deps),
            ));
          if (options.json) return deps.out(safeJson(personJson(person)));
          deps.out(
            `user ${cell(name)}: ${rolesText(person)}; ${scopeText(person)}` +
              (person.displayName === null ? "" : `; shown as ${cell(person.displayName)}`) +
              (password === undefined ? "" : "; password changed"),
          );
        });
      },
    ),
    deps,
    "users set",
  );
}

function disableCommand(group: Command, deps: CliDeps, disabled: boolean): void {
  const name = disabled ? "disable" : "enable";
  quiet(
    write(
      group.command(name)
        .description(
          disabled
            ? "stop a person signing in, keeping them (enable undoes it)"
            : "let a disabled person sign in again",
        )
        .argument("<name>", "the person"),
    ).action(async (person: string, options: WriteOptions) => {
      const command = `users ${name}`;
      await withStore(command, dbPath(options.db, deps), "write", deps, async (store) => {
        const r = await orRefused(
          command,
          () => setPersonDisabled(store, person, disabled, who(options, deps)),
        );
        if (options.json) {
          return deps.out(JSON.stringify({ name: person, disabled, was: r.was }));
        }
        deps.out(
          r.was === disabled
            ? `user ${cell(person)} was already ${name}d; recorded`
            : `user ${cell(person)} ${name}d`,
        );
      });
    }),
    deps,
    `users ${name}`,
  );
}

function removeCommand(group: Command, deps: CliDeps): void {
  quiet(
    write(
      group.command("remove")
        .description("remove a person for good (the audit trail keeps what they did)")
        .argument("<name>", "the person"),
    ).action(async (name: string, options: WriteOptions) => {
      await withStore("users remove", dbPath(options.db, deps), "write", deps, async (store) => {
        await orRefused("users remove", () => removePerson(store, name, who(options, deps)));
        if (options.json) return deps.out(JSON.stringify({ name, removed: true }));
        deps.out(`user ${cell(name)} removed`);
      });
    }),
    deps,
    "users remove",
  );
}

function totpCommand(group: Command, deps: CliDeps): void {
  quiet(
    write(
      group.command("totp")
        .description(
          "enrol a person's authenticator app for confirmation codes (shown once; " +
            "enrolling again replaces it)",
        )
        .argument("<name>", "the person"),
    ).action(async (name: string, options: WriteOptions) => {
      await withStore("users totp", dbPath(options.db, deps), "write", deps, async (store) => {
        const enrolled = await orRefused(
          "users totp",
          () => enrolTotp(store, name, who(options, deps)),
        );
        if (options.json) {
          return deps.out(JSON.stringify({ name, uri: enrolled.uri, replaced: enrolled.replaced }));
        }
        deps.out(
          `user ${cell(name)}: scan this with an authenticator app, now: it is shown once` +
            (enrolled.replaced ? " (the authenticator enrolled before stops working)" : ""),
        );
        for (const line of (await totpQrTerminal(enrolled.uri)).trimEnd().split("\n")) {
          deps.out(line);
        }
        deps.out(enrolled.uri);
      });
    }),
    deps,
    "users totp",
  );
}

/**
 * The password of `users add` or `users set --password`: asked twice at a
 * terminal (not shown), else read once from stdin (one line, its newline
 * dropped). Empty, different twice, or several lines: the command fails and
 * nothing is changed.
 */
async function readPassword(command: string, deps: CliDeps): Promise<string> {
  const first = deps.readSecret ? await deps.readSecret("password: ") : null;
  let password: string;
  if (first === null) {
    password = (await deps.readStdin()).replace(/\r?\n$/, "");
    if (/[\r\n]/.test(password)) {
      throw new CommandFailed(
        `jobs ${command}: the password read from stdin holds more than one line; nothing was changed`,
      );
    }
  } else {
    const again = await deps.readSecret!("the same password again: ");
    if (again !== first) {
      throw new CommandFailed(`jobs ${command}: the two passwords differ; nothing was changed`);
    }
    password = first;
  }
  if (password === "") {
    throw new CommandFailed(
      `jobs ${command}: the password is empty (type it twice at a terminal, or give it on ` +
        `stdin); nothing was changed`,
    );
  }
  if (password.length > MAX_PASSWORD_LENGTH) {
    throw new CommandFailed(
      `jobs ${command}: the password is longer than ${MAX_PASSWORD_LENGTH} characters; ` +
        `nothing was changed`,
    );
  }
  return password;
}
