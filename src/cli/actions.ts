/**
 * `jobs pause | resume <queue>` and `jobs disable | enable <schedule-id>`:
 * thin calls into `src/admin`, each audited, each saying what it changed.
 *
 * @module
 */

import { type Actor, setQueuePaused, setScheduleEnabled } from "../admin/actions.ts";
import { loadSchedules } from "../schedule/config.ts";
import { openSqliteStore } from "../store/sqlite/sqlite_store.ts";
import { definitionHash } from "../worker/planner.ts";
import { CommandFailed } from "./program.ts";
import { escapeControl } from "../text/escape.ts";

interface Output {
  out: (line: string) => void;
}

/** `jobs pause <queue>` / `jobs resume <queue>`. */
export async function queueCommand(
  options: { db: string; queue: string; paused: boolean; who: Actor },
  io: Output,
): Promise<void> {
  const store = await openSqliteStore(options.db, { now: options.who.now });
  try {
    const r = await setQueuePaused(store, options.queue, options.paused, options.who);
    const name = escapeControl(r.queue);
    io.out(
      r.was === r.paused
        ? `queue ${name} was already ${r.paused ? "paused" : "running"}; recorded`
        : `queue ${name} ${r.paused ? "paused" : "resumed"} for every process on ${options.db}`,
    );
  } finally {
    await store.close();
  }
}

/** `jobs disable <schedule-id>` / `jobs enable <schedule-id>`. */
export async function scheduleCommand(
  options: { db: string; config: string; id: string; enabled: boolean; who: Actor },
  io: Output,
): Promise<void> {
  const loaded = await loadSchedules(options.config);
  const schedule = loaded.ok ? loaded.config.schedules.find((s) => s.id === options.id) : undefined;
  const store = await openSqliteStore(options.db, { now: options.who.now });
  try {
    const r = await setScheduleEnabled(
      store,
      options.id,
      options.enabled,
      options.who,
      schedule ? { hash: definitionHash(schedule), tenant: schedule.tenant ?? null } : null,
    ).catch((error) => {
      throw new CommandFailed(`jobs ${options.enabled ? "enable" : "disable"}: ${error.message}`);
    });
    const id = escapeControl(r.id);
    io.out(
      r.was === r.enabled
        ? `schedule ${id} was already ${r.enabled ? "enabled" : "disabled"}; recorded`
        : r.enabled
        ? `schedule ${id} enabled: the planner resumes it, applying its misfire policy to the gap`
        : `schedule ${id} disabled: nothing new is planned; an occurrence already claimed finishes`,
    );
  } finally {
    await store.close();
  }
}
