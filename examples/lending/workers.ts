/**
 * The `workers:` module of `examples/lending/schedules.yaml`: the billing
 * side of the lend-copy saga, in TypeScript. The daemon imports it and runs
 * `charge_fee` as the saga's second step, and `refund_fee` as that step's
 * compensation when a later step fails for good.
 *
 * @module
 */

import { defineWorker } from "../../src/mod.ts";

/** What `jobsctl start lend-copy --input` gives the run. */
interface Lend {
  copy: string;
  member: string;
}

/** The lending fee, in the library's currency. */
const FEE = 2.5;

/** Charges the member the fee for the hold place-hold made; the charge is the step's result. */
export const chargeFee = defineWorker({
  name: "charge_fee",
  maxAttempts: 5, // a worker's retries live in its code, not in the saga's record
  perform: (_args, ctx) => {
    const { member } = ctx.workflow!.input as Lend;
    const { hold } = ctx.workflow!.results["place-hold"] as { hold: string };
    // The step's identity is the same in every attempt: a payment provider
    // given it as the idempotency key charges once however often this runs.
    ctx.output(`charged ${member} ${FEE} for ${hold} (key ${ctx.idempotencyKey})`);
    return { result: { member, amount: FEE, charge: `charge-${ctx.idempotencyKey}` } };
  },
});

/** Refunds what charge_fee charged: a compensation gets the step it undoes and its result. */
export const refundFee = defineWorker({
  name: "refund_fee",
  perform: (_args, ctx) => {
    const charged = ctx.workflow!.compensates!.result as { member: string; amount: number };
    ctx.output(`refunded ${charged.member} ${charged.amount}`);
    return { result: { refunded: charged.amount } };
  },
});
