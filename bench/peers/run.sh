#!/usr/bin/env bash
# jobs on PostgreSQL beside pg-boss and graphile-worker, one run, one table.
#
#   cp -r /work/shared/bench-peers /tmp/bench-peers && chmod -R u+w /tmp/bench-peers
#   RUNS=3 bash bench/peers/run.sh [/tmp/bench-peers]
#
# Runs the copy's run-all.sh for the peers (ONLY, default "graphile-worker
# pg-boss"; it installs their npm dependencies and creates the bench role and
# database), then bench/peers/jobs_postgres.ts from the copy on the same
# server and database, and prints the harness's summary of all of them
# (results/summary.md in the copy). Env knobs are the harness's (RUNS, N, ...).
set -euo pipefail

CHECKOUT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PEERS="$(cd "${1:-/tmp/bench-peers}" && pwd)"
DENO="${DENO:-$(command -v deno)}"
export ONLY="${ONLY:-graphile-worker pg-boss}"
export IDLE_MS="${IDLE_MS:-500}"

bash "$PEERS/run-all.sh" >&2
echo "[peers] == jobs (PostgreSQL)" >&2
(cd "$PEERS" && OUT="$PEERS/results/jobs-postgres.json" timeout -k 5 300 \
  "$DENO" run --allow-all --config "$CHECKOUT/deno.json" "$CHECKOUT/bench/peers/jobs_postgres.ts") \
  2>&1 | tee "$PEERS/results/jobs-postgres.log" >&2 || echo "[peers] jobs (PostgreSQL) failed" >&2
node "$PEERS/summarize.mjs" "$PEERS/results" | tee "$PEERS/results/summary.md"
