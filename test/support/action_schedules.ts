/**
 * The schedules file the operator actions' tests (`jobs replay | retry |
 * cancel | discard`, `jobs run | disable | enable`) act on.
 */

/**
 * `nightly` (cron, on the queue `reports`, 3 attempts, tagged) and
 * `reindex` (manual, guarded, runs only where the environment is staging).
 */
export const SCHEDULES = `version: 1
schedules:
  - id: nightly
    cron: "0 3 * * *"
    queue: reports
    max_attempts: 3
    tags: [reports]
    run: { command: ["true"] }
  - id: reindex
    manual: true
    guard: on-call only, outside business hours
    runs_where: staging
    run: { command: ["echo", "reindex"] }
`;
