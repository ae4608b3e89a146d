/**
 * Test support: a strict parser of the Prometheus text format 0.0.4, for
 * the tests of `/metrics`.
 */

import assert from "node:assert/strict";

/** One sample line. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * A strict line parser of the text format 0.0.4: every line is a HELP, a
 * TYPE or `name{labels} value`, and every sample's family has both.
 */
export function parseProm(text: string): Sample[] {
  assert.ok(text.endsWith("\n"), "the page ends with a line feed");
  const help = new Set<string>();
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const name = "[a-zA-Z_:][a-zA-Z0-9_:]*";
  const sampleLine = new RegExp(
    `^(${name})(?:\\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\\\\n]|\\\\[\\\\"n])*",?)*)\\})? (\\S+)$`,
  );
  for (const line of text.slice(0, -1).split("\n")) {
    let m: RegExpExecArray | null;
    if ((m = new RegExp(`^# HELP (${name}) .*$`).exec(line))) help.add(m[1]!);
    else if ((m = new RegExp(`^# TYPE (${name}) (gauge|counter|histogram)$`).exec(line))) {
      types.set(m[1]!, m[2]!);
    } else if ((m = sampleLine.exec(line))) {
      const labels: Record<string, string> = {};
      for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)) {
        labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c) => c === "n" ? "\n" : c);
      }
      const value = m[3] === "+Inf" ? Infinity : m[3] === "-Inf" ? -Infinity : Number(m[3]);
      assert.ok(m[3] === "NaN" || !Number.isNaN(value), `bad value in ${line}`);
      samples.push({ name: m[1]!, labels, value });
    } else {
      assert.fail(`not a Prometheus line: ${JSON.stringify(line)}`);
    }
  }
  for (const s of samples) {
    const family = types.has(s.name) ? s.name : s.name.replace(/_(bucket|sum|count)$/, "");
    assert.ok(types.has(family), `no TYPE for ${s.name}`);
    assert.ok(help.has(family), `no HELP for ${s.name}`);
  }
  return samples;
}

/** The value of the one sample with exactly these labels, if any. */
export function value(
  samples: Sample[],
  name: string,
  labels: Record<string, string>,
): number | undefined {
  return samples.find((s) =>
    s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v) &&
    Object.keys(s.labels).length === Object.keys(labels).length
  )?.value;
}
