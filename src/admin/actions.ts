/**
 * Operator actions shared by the command line and (later) the TUI: each
 * changes the store and records who did it and why in `audit`, in that
 * order, and says what it changed.
 *
 * @module
 */

import type { Store } from "../store/store.ts";

/** Who acts, why, and when (from the caller's clock). */
export interface Actor {
  actor: string;
  reason: string | null;
  now: number;
}

/** Pauses or resumes a queue for every process on the store. */
export async function setQueuePaused(
  store: Store,
  queue: string,
  paused: boolean,
  who: Actor,
): Promise<{ queue: string; paused: boolean; was: boolean }> {
  const was = (await store.queuesList()).find((q) => q.name === queue)?.paused ?? false;
  await store.queuePause({ name: queue, paused, now: who.now });
  await audit(store, who, paused ? "queue.pause" : "queue.resume", `queue:${queue}`, { was });
  return { queue, paused, was };
}

/**
 * Disables or enables a schedule. Stored, so it survives restarts and
 * reloads of `schedules.yaml`. An occurrence already claimed finishes;
 * nothing new is planned while disabled, and enabling applies the misfire
 * policy to the gap. `declared` says whether the current file declares it:
 * a schedule must be declared or already known to the store.
 */
export async function setScheduleEnabled(
  store: Store,
  id: string,
  enabled: boolean,
  who: Actor,
  declared: { hash: string; tenant: string | null } | null,
): Promise<{ id: string; enabled: boolean; was: boolean }> {
  const [row] = await store.schedulesList({ ids: [id] });
  if (!row && !declared) throw new Error(`no schedule "${id}" in the file or the store`);
  if (!row && declared) {
    await store.schedulesSync({ schedules: [{ id, ...declared }], now: who.now });
  }
  const was = row?.enabled ?? true;
  await store.scheduleSetEnabled({
    id,
    enabled,
    reason: who.reason,
    actor: who.actor,
    now: who.now,
  });
  await audit(store, who, enabled ? "schedule.enable" : "schedule.disable", `schedule:${id}`, {
    was,
  });
  return { id, enabled, was };
}

/** One `audit` row for an action `who` took on `target`. */
function audit(
  store: Store,
  who: Actor,
  action: string,
  target: string,
  details: Record<string, unknown>,
): Promise<void> {
  return store.auditRecord({
    at: who.now,
    actor: who.actor,
    action,
    target,
    reason: who.reason,
    details,
  });
}
