/**
 * The rules a pipeline is held to (`checkPipeline`), each broken one named
 * by its code at the field's path, and what `definePipeline` compiles.
 */

import assert from "node:assert/strict";
import {
  checkPipeline,
  definePipeline,
  PipelineDefinitionError,
  type PipelineOptions,
} from "../../src/ingest/definition.ts";

function catalog(over: Partial<PipelineOptions> = {}): PipelineOptions {
  return {
    id: "catalog",
    source: { file: "./feed.ndjson", format: "ndjson" },
    key: "sku",
    sources: { "vendor-prices": { file: "./prices.json" }, unused: { file: "./x.json" } },
    steps: [
      { drop: "drop-duplicates", run: { command: ["./steps/dedupe"] } },
      { enrich: "enrich-prices", sources: ["vendor-prices"], run: { worker: "enrich_prices" } },
      { drop: "drop-below-threshold", run: { command: ["./steps/threshold", "10"] } },
    ],
    dropReasons: ["duplicate", "below-threshold", "poison"],
    buffer: { capacity: 10_000, overflow: "block" },
    poisonAfter: 3,
    sink: { command: ["./bin/upsert-product"] },
    freshness: { mode: "bounded", withinMs: 15 * 60_000 },
    ...over,
  };
}

const codes = (o: PipelineOptions) => checkPipeline(o).map((p) => `${p.code} ${p.path.join(".")}`);

Deno.test("checkPipeline() accepts the issue's catalog pipeline", () => {
  assert.deepEqual(checkPipeline(catalog()), []);
});

Deno.test("checkPipeline() names each broken rule by code and field", () => {
  assert.deepEqual(codes(catalog({ dropReasons: [] })), ["drop-reasons-missing drop_reasons"]);
  assert.deepEqual(
    codes(
      catalog({
        steps: [{ run: { worker: "x" } }, { drop: "a", enrich: "b", run: { worker: "x" } }],
      }),
    ),
    ["step-unmarked steps.0", "step-unmarked steps.1"],
  );
  assert.deepEqual(
    codes(catalog({ steps: [{ enrich: "e", sources: ["prices"], run: { worker: "x" } }] })),
    ["source-undeclared steps.0.sources.0"],
  );
  assert.match(
    checkPipeline(
      catalog({ steps: [{ enrich: "e", sources: ["prices"], run: { worker: "x" } }] }),
    )[0]!
      .message,
    /step "e" reads source "prices", which sources: does not declare \(declared: vendor-prices, unused\)/,
  );
  assert.deepEqual(
    codes(catalog({ buffer: { capacity: 10, overflow: "drop_oldest" } })),
    ["overflow-reason-missing drop_reasons"],
  );
  assert.deepEqual(codes(catalog({ dropReasons: ["duplicate"] })), [
    "poison-reason-missing drop_reasons",
  ]);
  assert.deepEqual(codes(catalog({ key: [] })), ["key-missing key"]);
  assert.deepEqual(
    codes(catalog({ freshness: { mode: "bounded", withinMs: 0 } })),
    ["freshness-invalid freshness"],
  );
});

Deno.test("definePipeline() throws every problem with its code", () => {
  assert.throws(
    () => definePipeline(catalog({ dropReasons: ["duplicate"], key: [] })),
    (error: unknown) =>
      error instanceof PipelineDefinitionError &&
      /key-missing/.test(error.message) && /poison-reason-missing/.test(error.message),
  );
});

Deno.test("definePipeline() compiles paths, defaults and only the declared sources", () => {
  const p = definePipeline(catalog({ buffer: undefined, poisonAfter: undefined }), "/srv/feeds");
  assert.deepEqual(p.source, {
    kind: "file",
    path: "/srv/feeds/feed.ndjson",
    format: "ndjson",
    encoding: "utf-8",
  });
  assert.deepEqual(p.key, ["sku"]);
  assert.deepEqual(p.steps.map((s) => `${s.mark} ${s.name}`), [
    "drop drop-duplicates",
    "enrich enrich-prices",
    "drop drop-below-threshold",
  ]);
  assert.deepEqual(p.steps[0]!.run, {
    kind: "command",
    argv: ["./steps/dedupe"],
    shell: false,
  });
  assert.deepEqual(Object.keys(p.sources), ["vendor-prices"]);
  assert.deepEqual(p.buffer, { capacity: 10_000, overflow: "block" });
  assert.equal(p.poisonAfter, 3);
  assert.equal(p.queue, "ingest");
  // The same definition written in another field order hashes the same; another one does not.
  const { id, key, ...rest } = catalog();
  assert.equal(
    definePipeline({ ...rest, key, id }, "/srv/feeds").hash,
    definePipeline(catalog(), "/srv/feeds").hash,
  );
  assert.notEqual(definePipeline(catalog({ poisonAfter: 4 })).hash, definePipeline(catalog()).hash);
});
