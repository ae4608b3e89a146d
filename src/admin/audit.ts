/**
 * What every operator action shares: who acts, why and when
 * ({@linkcode Actor}), and the `audit` row it writes ({@linkcode audit}), in
 * the same store transaction as its change, so an action is never left
 * without its audit row nor an audit row without its action.
 *
 * The reason an operator gives for an audited action, and what is not one.
 * A reason is read months later by someone who was not there; a line pasted
 * from the runbook as printed, or a reflexive `...` or `TODO`, says nothing
 * and stays in the audit trail for good. So a placeholder is refused, with
 * a request to write why, and the runbook prints its placeholders in a form
 * that is refused if pasted unedited (`--reason '<why you are disabling it>'`).
 *
 * What counts as a placeholder ({@linkcode placeholderReason}):
 * - nothing, or only spaces;
 * - only punctuation: `...`, `…`, `-`, `?`, `""`;
 * - anything in angle brackets: `<reason>`, `<...>`, `<why you are disabling it>`;
 * - one of {@linkcode PLACEHOLDER_WORDS} (any case, trailing punctuation
 *   ignored): `TODO`, `reason`, `xxx`, ...
 *
 * A short real reason (`typo`, `outage`) passes: this catches text that is
 * certainly not a reason, not text that is merely terse.
 *
 * @module
 */

import { redact } from "../kernel/redact.ts";
import type { StoreTx } from "../store/store.ts";
import type { AdminAction } from "./actions.ts";

/** Who acts, why, and when (from the caller's clock). */
export interface Actor {
  actor: string;
  reason: string | null;
  now: number;
}

/**
 * One `audit` row for an action `who` took on `target`; the reason is stored
 * redacted. Written by `store`, or inside a transaction by its `tx`. The
 * action is one of the role table's (`actions.ts`), so none goes unlisted.
 */
export function audit(
  store: Pick<StoreTx, "auditRecord">,
  who: Actor,
  action: AdminAction,
  target: string,
  details: Record<string, unknown>,
): Promise<void> {
  return store.auditRecord({
    at: who.now,
    actor: who.actor,
    action,
    target,
    reason: who.reason === null ? null : redact(who.reason),
    details,
  });
}

/**
 * Words that are placeholders, not reasons (compared in lower case, with
 * surrounding punctuation and spaces removed). `x` repeated two or more
 * times (`xx`, `xxx`) is one too.
 */
export const PLACEHOLDER_WORDS: readonly string[] = [
  "todo",
  "tbd",
  "fixme",
  "reason",
  "why",
  "because",
  "placeholder",
  "your reason",
  "your reason here",
  "reason here",
  "text",
  "foo",
  "n/a",
  "na",
];

/**
 * Why `reason` is a placeholder rather than a reason (a phrase, such as
 * `it is only punctuation`), or null when it reads as a reason.
 */
export function placeholderReason(reason: string): string | null {
  const text = reason.trim();
  if (text === "") return "it is empty";
  if (/^[\p{P}\p{S}\s]*$/u.test(text)) return "it is only punctuation";
  if (text.startsWith("<") && text.endsWith(">")) {
    return "it is a placeholder in angle brackets, as the runbook prints it";
  }
  const word = text.toLowerCase().replace(/^[\p{P}\s]+|[\p{P}\s]+$/gu, "");
  if (PLACEHOLDER_WORDS.includes(word) || /^x{2,}$/.test(word)) {
    return `"${word}" is a placeholder word`;
  }
  return null;
}

/**
 * The refusal of a placeholder reason given to `--reason` (or a prompt):
 * one sentence naming the value and asking for the why.
 */
export function placeholderMessage(reason: string, why: string): string {
  return `${JSON.stringify(reason)} is not a reason (${why}): write why, in a few words, ` +
    `for the audit trail, such as "vendor API down until 14:00"`;
}

/**
 * The placeholder the runbook prints where a person writes the reason,
 * such as `<why you are disabling it>`: plainly unfinished to a reader,
 * and refused by {@linkcode placeholderReason} if pasted as it is.
 *
 * @param doing what the command does, as `disabling it`
 */
export function reasonPlaceholder(doing: string): string {
  return `<why you are ${doing}>`;
}
