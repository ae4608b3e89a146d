/**
 * How a bulk money action's confirmation code leaves the session
 * (`confirm_by:`): run by a command, posted to a webhook, mailed, or not
 * sent at all (`totp`: the approver reads their enrolled authenticator).
 *
 * - `command`: the argv runs (no shell) with the code in the environment
 *   variable `JOBS_CONFIRM_CODE` and a JSON summary of the manifest
 *   ({@linkcode CodeSummary}: count, totals, requester, manifest, ...) on
 *   stdin; exit 0 is delivered. It gets {@linkcode DEFAULT_DELIVERY_TIMEOUT_MS}
 *   unless its `timeoutMs` says otherwise, then its process group is killed.
 * - `webhook`: one POST of `{ "code": ..., ...summary }` as JSON; a 2xx is delivered.
 * - `email`: one message through a real SMTP server (nodemailer), set by
 *   `JOBS_SMTP_URL` (`smtp://user:pass@host:587`, or `smtps://` for TLS
 *   from the start) and `JOBS_SMTP_FROM` (the sender's address).
 * - `totp`: nothing is sent.
 *
 * The code is never logged nor put in an error: a failure's message (a
 * command's stderr included) has the code masked, and names the channel
 * with any credentials in a URL redacted.
 *
 * @module
 */

// @ts-types="@types/nodemailer"
import nodemailer from "nodemailer";
import type { Clock } from "../clock.ts";
import type { ConfirmChannelKind } from "../store/bulk_request_types.ts";
import { redact } from "../kernel/redact.ts";
import { maskValues } from "../process/env.ts";
import { ERROR_STDERR_BYTES, OutputTail } from "../process/output.ts";
import { ProcessGroup, within } from "../process/process_group.ts";
import { spawnCommand } from "../process/spawn.ts";

/** Where a code goes: one entry of `confirm_by:`, compiled. */
export type ChannelSpec =
  | {
    kind: "command";
    /** The program and its arguments (no shell). */
    argv: readonly string[];
    cwd?: string;
    /** @default DEFAULT_DELIVERY_TIMEOUT_MS */
    timeoutMs?: number;
  }
  | {
    kind: "webhook";
    url: string;
    /** Extra request headers (an `Authorization`, say). */
    headers?: Record<string, string>;
    /** @default DEFAULT_DELIVERY_TIMEOUT_MS */
    timeoutMs?: number;
  }
  | {
    kind: "email";
    /** The recipients' addresses. */
    to: readonly string[];
  }
  | {
    kind: "totp";
    /** The role whose members' authenticators confirm (`confirm_by: { totp: approver }`). */
    role: string;
  };

/** What a channel is told besides the code: enough for a person to know what they approve. */
export interface CodeSummary {
  /** The request's id. */
  request: number;
  /** The manifest's hash. */
  manifest: string;
  queue: string;
  bulk: string;
  /** How many items. */
  count: number;
  /** The total per currency. */
  totals: Record<string, string>;
  requester: string;
  /** When the code stops working, ISO-8601 UTC. */
  expiresAt: string;
}

/** The SMTP server a mailed code goes through. */
export interface SmtpSettings {
  /** `smtp://[user:pass@]host[:port]` or `smtps://...` (nodemailer's connection URL). */
  url: string;
  /** The sender's address. */
  from: string;
}

/** What the channels need from the program. */
export interface ChannelDeps {
  /** Times the command's and the webhook's timeouts, and the kill grace. */
  clock: Clock;
  /** The SMTP server for `email` (see {@linkcode smtpSettingsFromEnv}); null when none is set. */
  smtp?: SmtpSettings | null;
}

/** How long a command or a webhook may take to deliver a code, by default: 30 s. */
export const DEFAULT_DELIVERY_TIMEOUT_MS = 30_000;

/** Between SIGTERM and SIGKILL to a delivery command that overran its time. */
const KILL_GRACE_MS = 2_000;

/** A code could not be delivered: the message names the channel and why, never the code. */
export class DeliveryError extends Error {
  constructor(readonly channel: ConfirmChannelKind, message: string) {
    super(message);
    this.name = "DeliveryError";
  }
}

/**
 * The SMTP settings from the environment: `JOBS_SMTP_URL` and
 * `JOBS_SMTP_FROM`; null when `JOBS_SMTP_URL` is unset or empty.
 *
 * @throws {TypeError} when the URL is set and is not smtp:// or smtps://, or the sender is missing
 */
export function smtpSettingsFromEnv(env: Record<string, string | undefined>): SmtpSettings | null {
  const url = env.JOBS_SMTP_URL?.trim() ?? "";
  if (url === "") return null;
  let scheme: string;
  try {
    scheme = new URL(url).protocol;
  } catch {
    throw new TypeError(`JOBS_SMTP_URL ${JSON.stringify(redact(url))} is not a URL`);
  }
  if (scheme !== "smtp:" && scheme !== "smtps:") {
    throw new TypeError(
      `JOBS_SMTP_URL ${JSON.stringify(redact(url))} is not an smtp:// or smtps:// URL`,
    );
  }
  const from = env.JOBS_SMTP_FROM?.trim() ?? "";
  if (from === "") {
    throw new TypeError("JOBS_SMTP_FROM is not set: the sender's address of mailed codes");
  }
  return { url, from };
}

/**
 * Sends `code` with its `summary` through `spec`. Resolves once delivered
 * (a `totp` channel sends nothing and resolves at once).
 *
 * @throws {DeliveryError} when the channel did not take it; its message never holds the code
 */
export async function deliverCode(
  spec: ChannelSpec,
  code: string,
  summary: CodeSummary,
  deps: ChannelDeps,
): Promise<void> {
  try {
    switch (spec.kind) {
      case "command":
        return await runCommand(spec, code, summary, deps.clock);
      case "webhook":
        return await postWebhook(spec, code, summary, deps.clock);
      case "email":
        return await sendMail(spec, code, summary, deps.smtp ?? null);
      case "totp":
        return;
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const safe = redact(maskValues(message, [code]));
    throw new DeliveryError(
      spec.kind,
      error instanceof DeliveryError ? safe : `${spec.kind} channel: ${safe}`,
    );
  }
}

async function runCommand(
  spec: Extract<ChannelSpec, { kind: "command" }>,
  code: string,
  summary: CodeSummary,
  clock: Clock,
): Promise<void> {
  const program = spec.argv[0] ?? "";
  const label = `command channel ${JSON.stringify(program)}`;
  if (program === "") throw new DeliveryError("command", "command channel: the argv is empty");
  let child: Deno.ChildProcess;
  try {
    child = spawnCommand(
      { kind: "command", argv: [...spec.argv], shell: false, cwd: spec.cwd },
      { JOBS_CONFIRM_CODE: code },
      { stdin: "piped" },
    );
  } catch (error) {
    throw new DeliveryError("command", `${label} cannot start: ${(error as Error).message}`);
  }
  const stderr = new OutputTail(ERROR_STDERR_BYTES);
  const group = new ProcessGroup(child, { clock, killGraceMs: KILL_GRACE_MS }, {
    stdout: () => {},
    stderr: (chunk) => stderr.push(chunk),
  });
  const timeoutMs = spec.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS;
  try {
    const writer = child.stdin.getWriter();
    // A command that does not read its stdin may close it: what it was told is then moot.
    await writer.write(new TextEncoder().encode(JSON.stringify(summary) + "\n"))
      .then(() => writer.close()).catch(() => {});
    const end = await group.wait(new AbortController().signal, timeoutMs);
    await group.finish(end.kind !== "exited");
    const said = stderr.text([code]).trim();
    const tail = said === "" ? "" : `: ${said}`;
    if (end.kind === "timeout") {
      throw new DeliveryError("command", `${label} did not finish within ${timeoutMs} ms${tail}`);
    }
    if (end.kind === "exited" && !end.status.success) {
      throw new DeliveryError(
        "command",
        `${label} exited with ${
          end.status.signal ? `signal ${end.status.signal}` : `status ${end.status.code}`
        }${tail}`,
      );
    }
  } finally {
    group.release();
  }
}

async function postWebhook(
  spec: Extract<ChannelSpec, { kind: "webhook" }>,
  code: string,
  summary: CodeSummary,
  clock: Clock,
): Promise<void> {
  const label = `webhook ${redact(spec.url)}`;
  const timeoutMs = spec.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS;
  const abort = new AbortController();
  const sent = fetch(spec.url, {
    method: "POST",
    headers: { ...spec.headers, "content-type": "application/json" },
    body: JSON.stringify({ code, ...summary }),
    signal: abort.signal,
  });
  try {
    if (!(await within(sent, timeoutMs, clock))) {
      abort.abort();
      throw new DeliveryError("webhook", `${label} did not answer within ${timeoutMs} ms`);
    }
    const response = await sent;
    await response.body?.cancel();
    if (!response.ok) {
      throw new DeliveryError("webhook", `${label} answered ${response.status}`);
    }
  } catch (error) {
    if (error instanceof DeliveryError) throw error;
    throw new DeliveryError("webhook", `${label} failed: ${(error as Error).message}`);
  } finally {
    sent.catch(() => {});
  }
}

/** The text of a mailed code: what it approves, then the code. */
export function mailText(code: string, summary: CodeSummary): string {
  const totals = Object.entries(summary.totals).map(([c, amount]) => `${c} ${amount}`)
    .join(", ");
  return [
    `${summary.requester} asks to confirm bulk action "${summary.bulk}" of queue ` +
    `"${summary.queue}": ${summary.count} item${summary.count === 1 ? "" : "s"} totalling ` +
    `${totals === "" ? "nothing" : totals}.`,
    "",
    `Confirmation code: ${code}`,
    "",
    `It works once, until ${summary.expiresAt}.`,
    `Manifest: ${summary.manifest}`,
    "",
    "If you did not expect this, do not pass the code on.",
  ].join("\n");
}

async function sendMail(
  spec: Extract<ChannelSpec, { kind: "email" }>,
  code: string,
  summary: CodeSummary,
  smtp: SmtpSettings | null,
): Promise<void> {
  if (!smtp) {
    throw new DeliveryError(
      "email",
      "email channel: JOBS_SMTP_URL is not set, so there is no SMTP server to send the code through",
    );
  }
  if (spec.to.length === 0) throw new DeliveryError("email", "email channel: no recipient");
  const transport = nodemailer.createTransport(smtp.url);
  try {
    await transport.sendMail({
      from: smtp.from,
      to: [...spec.to],
      subject:
        `jobs: confirmation code for ${summary.queue}/${summary.bulk} (${summary.count} items)`,
      text: mailText(code, summary),
    });
  } catch (error) {
    throw new DeliveryError(
      "email",
      `email channel: the SMTP server at ${redact(smtp.url)} refused the message: ${
        (error as Error).message
      }`,
    );
  } finally {
    transport.close();
  }
}
