/**
 * Workflow definitions that several tests run: the lending saga, as a
 * library user defines it and as `schedules.yaml` declares it.
 */

import { defineWorkflow } from "../../src/workflow/definition.ts";

/**
 * The lending saga `lend`: hold, charge, notify, each a use case run by the
 * worker of the same name, holds and charges undone by `unhold` and
 * `refund`, a sent notice by nothing.
 */
export const LEND_SAGA = defineWorkflow({
  id: "lend",
  carriedBy: "workflow",
  useCases: {
    "use-case/hold": "hold",
    "use-case/charge": "charge",
    "use-case/notify": "notify",
    "use-case/unhold": "unhold",
    "use-case/refund": "refund",
  },
  steps: [
    {
      id: "hold",
      useCase: "use-case/hold",
      compensation: { mode: "use-case", useCase: "use-case/unhold" },
    },
    {
      id: "charge",
      dependsOn: ["hold"],
      useCase: "use-case/charge",
      compensation: { mode: "use-case", useCase: "use-case/refund" },
    },
    {
      id: "notify",
      dependsOn: ["charge"],
      useCase: "use-case/notify",
      compensation: { mode: "none", reason: "a sent notice cannot be recalled" },
    },
  ],
});

/**
 * The `workflows:` section declaring the saga `lend-copy` (place-hold,
 * charge-fee, notify) on the use cases `use-case/lending.*` and
 * `use-case/billing.*`, which the file declares beside it; more workflows
 * may follow it in the same section. It ends without a newline.
 */
export const LEND_COPY_WORKFLOWS = `workflows:
  - id: lend-copy
    carried_by: workflow
    steps:
      - id: place-hold
        use_case: use-case/lending.place-hold
        compensation: { mode: use-case, use_case: use-case/lending.cancel-hold }
      - id: charge-fee
        depends_on: [place-hold]
        use_case: use-case/billing.charge-fee
        compensation: { mode: use-case, use_case: use-case/billing.refund-fee }
      - id: notify
        depends_on: [charge-fee]
        use_case: use-case/lending.notify
        compensation: { mode: none, reason: a sent notice cannot be recalled }`;
