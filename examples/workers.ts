/**
 * An example `workers:` module for `schedules.yaml` (see
 * `examples/fanout.yaml`): every export is a worker made with
 * `defineWorker`, or a selection made with `defineSelection` that lists the
 * items of a fan-out. `jobs check --config examples/fanout.yaml` imports it
 * and checks that every worker a schedule names is exported here.
 *
 * @module
 */

import { defineWorker } from "../src/mod.ts";
import { defineSelection } from "../src/schedules.ts";

/** Lists the accounts to visit: here a fixed few, in real life a query. */
export const listAccounts = defineSelection<{ region?: string }>({
  name: "list-accounts",
  list: ({ region = "eu" }) => ["acme", "globex", "initech"].map((name) => `${region}/${name}`),
});

/** Visits one account; a fan-out gives it the item as `args.item`. */
export const touchAccount = defineWorker<{ item: string; dryRun?: boolean }>({
  name: "touch-account",
  queue: "accounts",
  maxAttempts: 5,
  perform: ({ item, dryRun }, ctx) => {
    ctx.output(`${dryRun ? "would touch" : "touched"} ${item} (attempt ${ctx.attempt})`);
  },
});

/** A plain scheduled worker, run by a `run: { worker: nightly-summary }` schedule. */
const nightlySummary = defineWorker({
  name: "nightly-summary",
  perform: (_args, ctx) => ctx.output(`summary for ${ctx.job.occurrence ?? "an ad-hoc run"}`),
});

export default [nightlySummary];
