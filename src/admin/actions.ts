/**
 * Who may take each action: the one table ({@linkcode ACTIONS}) of every
 * action a door of `src/admin/` audits, and the roles a principal needs to
 * take it. An action the table does not name cannot be audited (`audit`
 * takes an {@linkcode AdminAction}, so the type check fails), and one whose
 * roles are empty is the host's alone: only the command line run with
 * direct access to the store takes it (`jobs migrate`, `jobs prune`,
 * `jobs migrate-store`), as `psql` as the database owner would.
 *
 * The HTTP routes that act name their action in `API_ROUTES`
 * (`src/http/access.ts`) and take its roles from here; the console draws a
 * button only for a principal {@linkcode mayTake} allows.
 *
 * @module
 */

import type { Role } from "./roles.ts";

/** Every role: reading what is in scope. */
export const READ: readonly Role[] = ["viewer", "operator", "approver", "admin"];
/** Acting on jobs, queues, schedules, workflows, pipelines and reports. */
export const ACT: readonly Role[] = ["operator", "admin"];
/**
 * Bulk money (src/workqueue/confirm.ts): asking for a confirmation code and
 * confirming with it. Who may confirm a given request is narrowed further by
 * the request itself: with `second_person`, another person than the
 * requester, holding `approver`; on a TOTP channel, a holder of its role.
 */
export const MONEY: readonly Role[] = ["operator", "approver", "admin"];
/** People, tokens and settings. */
export const ADMIN: readonly Role[] = ["admin"];
/** No principal: the command line on the host only. */
export const HOST_ONLY: readonly Role[] = [];

/** The roles of every audited action, denying by default whatever it does not name. */
export const ACTIONS = {
  "job.enqueue": ACT,
  "job.retry": ACT,
  "job.cancel": ACT,
  "job.discard": ACT,
  "job.replay": ACT,
  /** Retry, cancel or discard everything a filter matched, as a background run (`bulk.ts`). */
  "bulk.start": ACT,
  "bulk.abort": ACT,
  "queue.pause": ACT,
  "queue.resume": ACT,
  /** Flow limits stored for a queue (`jobs queues set`), overriding the file's on every node. */
  "queue.limits": ACT,
  "schedule.disable": ACT,
  "schedule.enable": ACT,
  "schedule.run": ACT,
  "workflow.start": ACT,
  "workflow.cancel": ACT,
  "workflow.retry": ACT,
  "ingest.run": ACT,
  "ingest.replay": ACT,
  "report.run": ACT,
  "report.link": ACT,
  /** A download's credential is its signed link (minted by `report.link`), not a role. */
  "report.download": READ,
  /** A bulk money action's preview: the exact set, its amounts and totals, its manifest. */
  "bulk.preview": MONEY,
  /** A confirmation code bound to a manifest, sent out of band. */
  "bulk.request": MONEY,
  "bulk.confirm": MONEY,
  /** A request or a confirmation refused (a wrong code, self-approval, ...): audited, never taken. */
  "bulk.refused": MONEY,
  "setting.set": ADMIN,
  "setting.unset": ADMIN,
  "user.add": ADMIN,
  "user.set": ADMIN,
  "user.disable": ADMIN,
  "user.enable": ADMIN,
  "user.remove": ADMIN,
  /** Enrolling (or enrolling again) a person's TOTP authenticator. */
  "user.totp": ADMIN,
  /** A person signing in to the console (or out): anyone with a role and their password. */
  "user.sign_in": READ,
  "user.sign_out": READ,
  /** Ending another person's console session. */
  "session.revoke": ADMIN,
  "token.create": ADMIN,
  "token.revoke": ADMIN,
  /**
   * Human work queues (`work.ts`): items are added by operators (and
   * programs); a queue is worked by admins and the roles its `roles:` names
   * (the door adds those); a claim is handed to another person by an
   * operator or an admin.
   */
  "work.add": ACT,
  "work.claim": ADMIN,
  "work.release": ADMIN,
  "work.skip": ADMIN,
  "work.do": ADMIN,
  "work.reassign": ACT,
  /** Rescoring a queue's items after its rule changed. */
  "work.rescore": ACT,
  "store.migrate": HOST_ONLY,
  "store.prune": HOST_ONLY,
  "store.moved": HOST_ONLY,
  "store.reopened": HOST_ONLY,
} as const satisfies Record<string, readonly Role[]>;

/** An action of {@linkcode ACTIONS}: what the audit trail records. */
export type AdminAction = keyof typeof ACTIONS;

/** Whether a principal holding `roles` may take `action` (never a host-only one). */
export function mayTake(roles: readonly string[], action: AdminAction): boolean {
  return (ACTIONS[action] as readonly Role[]).some((role) => roles.includes(role));
}
