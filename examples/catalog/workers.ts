/**
 * The `workers:` module of `examples/catalog/schedules.yaml`: the one
 * TypeScript step of the catalog pipeline, `enrich_prices`. The daemon (and
 * `jobs ingest --wait`) imports it and runs the step in its own process, once
 * per record, between the two command steps.
 *
 * @module
 */

import { defineStep } from "../../src/ingest.ts";

/** The `vendor-prices` source: sku -> price. */
type Prices = Record<string, unknown>;

// The price list of the run being enriched. The source's `json()` is already
// read once per run; keeping the parsed list here as well lets every record
// after the first be answered without awaiting anything, so a run costs no
// promise per record. Keyed by run, so the next run reads the file again.
let cached: { run: number; prices: Prices } | null = null;

/**
 * Keeps the record with `price` added from `vendor-prices`. A sku the list
 * does not price gets 0, which `drop-below-threshold` then drops: an enrich
 * step may keep or fail a record, never drop it.
 */
export const enrich_prices = defineStep({
  name: "enrich_prices",
  run(record, ctx) {
    if (cached?.run === ctx.run) return priced(record, cached.prices);
    return ctx.sources["vendor-prices"]!.json<Prices>().then((prices) => {
      if (prices === null || typeof prices !== "object" || Array.isArray(prices)) {
        throw new TypeError(`source "vendor-prices" must be a JSON object of sku -> price`);
      }
      cached = { run: ctx.run, prices };
      return priced(record, prices);
    });
  },
});

function priced(record: Record<string, unknown>, prices: Prices) {
  const price = prices[String(record.sku)];
  return { keep: { ...record, price: typeof price === "number" ? price : 0 } };
}
