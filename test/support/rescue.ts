/**
 * Test support: a lifeline report's counts, without the list of the jobs
 * it rescued (tests that assert those do so on their own).
 */

import type { rescueOrphans } from "../../src/runtime/lifeline.ts";

type Report = Awaited<ReturnType<typeof rescueOrphans>>;

/** How many jobs a rescue sent back and discarded, and the queues it woke. */
export function counts(report: Report): Pick<Report, "rescued" | "discarded" | "queues"> {
  return { rescued: report.rescued, discarded: report.discarded, queues: report.queues };
}
