/**
 * Process groups of the runners' children (the command runner and a
 * fan-out's selection command): each child leads a group of its own, so a
 * stop reaches everything it started, and a group still alive when this
 * process exits is killed rather than orphaned.
 *
 * @module
 */

/**
 * Whether any process of group `pgid` is alive, from /proc (zombies do not
 * count: a reparented child stays one until init reaps it, and some inits
 * never do). `undefined` where /proc cannot tell.
 */
export function groupAlive(pgid: number): boolean | undefined {
  let entries: Iterable<Deno.DirEntry>;
  try {
    entries = Deno.readDirSync("/proc");
  } catch {
    return undefined;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry.name)) continue;
    let stat: string;
    try {
      stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
    } catch {
      continue; // Exited while we looked.
    }
    // pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") return true;
  }
  return false;
}

/** Sends `signal` to every process of the group; a group already gone is fine. */
export function signalGroup(pgid: number, signal: Deno.Signal): void {
  try {
    Deno.kill(-pgid, signal);
  } catch {
    // ESRCH: nothing left in the group.
  }
}

/** Reads a stream to its end, handing each chunk to `onChunk`. */
export async function pump(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  onChunk: (chunk: Uint8Array) => void,
): Promise<void> {
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      onChunk(value);
    }
  } catch {
    // Cancelled or broken pipe: what was read is kept.
  }
}

/** Groups of runs that have not finished stopping: killed if the process exits first. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

/** Tracks `pgid` until its run releases it; the first call installs the exit hook. */
export function killOnExit(pgid: number): void {
  liveGroups.add(pgid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  globalThis.addEventListener("unload", () => {
    for (const group of liveGroups) signalGroup(group, "SIGKILL");
    liveGroups.clear();
  });
}

/** Stops tracking `pgid`: its run has made sure nothing of it is left. */
export function releaseOnExit(pgid: number): void {
  liveGroups.delete(pgid);
}
