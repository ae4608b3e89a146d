/**
 * Whether a file is there, asked the same way by every face: the command
 * line (is the schedules file there, did the store's file exist before
 * `migrate`) and the dashboard (was the store's file removed under it).
 *
 * @module
 */

/**
 * Whether `path` exists; `:memory:` (SQLite's store in memory) always does.
 *
 * @throws when the path cannot be looked at for another reason than its absence
 * (permission denied, say)
 */
export async function exists(path: string): Promise<boolean> {
  if (path === ":memory:") return true;
  try {
    await Deno.stat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}
