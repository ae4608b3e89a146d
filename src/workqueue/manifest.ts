/**
 * A bulk money action's manifest: the exact set a preview showed (each
 * item's id, amount and currency, and the action), its total per currency,
 * and its hash, to which a confirmation code is bound (`confirm.ts`).
 *
 * Amounts are decimal strings, never floats: `1900`, `1900.0` and `1900.00`
 * are one amount (`"1900"`), and totals are summed exactly. The hash is the
 * SHA-256 (lowercase hex) of the canonical JSON of the action and the items
 * sorted by id, so the same set in any listing order has the same hash, and
 * any change of an id, an amount, a currency or the action changes it.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { canonicalJson } from "../kernel/unique.ts";
import type { ManifestEntry } from "../store/bulk_request_types.ts";

export type { ManifestEntry };

/** An item as a caller gives it: its amount as a decimal string, a number or a bigint. */
export interface ManifestItem {
  id: string;
  amount: string | number | bigint;
  currency: string;
}

/** A manifest: what a code is bound to. */
export interface Manifest {
  /** The SHA-256 (lowercase hex) of the action and the items; see the module's note. */
  hash: string;
  action: string;
  /** The items in the order given, amounts normalized. */
  items: ManifestEntry[];
  /** The total per currency (decimal strings), currencies in byte order. */
  totals: Record<string, string>;
}

/** A manifest's items refused: the message names the item and the value. */
export class ManifestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ManifestError";
  }
}

/** The most items one manifest holds: a code confirms what a person could read. */
export const MAX_MANIFEST_ITEMS = 100_000;

const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?$/;
const CURRENCY = /^[A-Za-z0-9_-]{1,16}$/;

/**
 * `value` as a normalized decimal string: no leading zeros, no trailing
 * zeros after the point, no point without digits after it, no `-0`.
 * A number must be finite and written without an exponent.
 *
 * @throws {ManifestError} for anything else
 */
export function decimalAmount(value: string | number | bigint): string {
  const text = typeof value === "string" ? value.trim() : String(value);
  const match = DECIMAL.exec(text);
  if (!match || (typeof value === "number" && !Number.isFinite(value))) {
    throw new ManifestError(`${JSON.stringify(String(value))} is not a decimal amount`);
  }
  const whole = match[2]!.replace(/^0+(?=\d)/, "");
  const fraction = (match[3] ?? "").replace(/0+$/, "");
  const digits = fraction === "" ? whole : `${whole}.${fraction}`;
  const zero = /^0(\.0*)?$/.test(digits);
  return match[1] === "-" && !zero ? `-${digits}` : digits;
}

/** Decimal strings summed exactly (as integers scaled by the longest fraction). */
function sumDecimals(amounts: readonly string[]): string {
  const scale = Math.max(0, ...amounts.map((a) => a.split(".")[1]?.length ?? 0));
  let sum = 0n;
  for (const amount of amounts) {
    const negative = amount.startsWith("-");
    const [whole, fraction = ""] = (negative ? amount.slice(1) : amount).split(".");
    const scaled = BigInt(whole! + fraction.padEnd(scale, "0"));
    sum += negative ? -scaled : scaled;
  }
  const negative = sum < 0n;
  const digits = (negative ? -sum : sum).toString().padStart(scale + 1, "0");
  const text = scale === 0
    ? digits
    : `${digits.slice(0, digits.length - scale)}.${digits.slice(digits.length - scale)}`;
  return decimalAmount(negative ? `-${text}` : text);
}

/** The total of `items` per currency, currencies in byte order. */
export function manifestTotals(items: readonly ManifestEntry[]): Record<string, string> {
  const byCurrency = new Map<string, string[]>();
  for (const item of items) {
    const list = byCurrency.get(item.currency) ?? [];
    list.push(item.amount);
    byCurrency.set(item.currency, list);
  }
  const totals: Record<string, string> = {};
  for (const currency of [...byCurrency.keys()].sort()) {
    totals[currency] = sumDecimals(byCurrency.get(currency)!);
  }
  return totals;
}

/**
 * The items checked and normalized, in the order given.
 *
 * @throws {ManifestError} on an empty or missing id, a repeated id, an
 *   amount that is not a decimal, a currency that is not a code, or more
 *   than {@linkcode MAX_MANIFEST_ITEMS} items
 */
export function manifestEntries(items: readonly ManifestItem[]): ManifestEntry[] {
  if (items.length > MAX_MANIFEST_ITEMS) {
    throw new ManifestError(
      `a manifest holds at most ${MAX_MANIFEST_ITEMS} items, not ${items.length}`,
    );
  }
  const seen = new Set<string>();
  return items.map((item, i) => {
    if (typeof item.id !== "string" || item.id === "") {
      throw new ManifestError(`item ${i + 1}: the id is empty`);
    }
    if (seen.has(item.id)) {
      throw new ManifestError(`item ${JSON.stringify(item.id)} appears twice`);
    }
    seen.add(item.id);
    if (typeof item.currency !== "string" || !CURRENCY.test(item.currency)) {
      throw new ManifestError(
        `item ${JSON.stringify(item.id)}: ${
          JSON.stringify(String(item.currency))
        } is not a currency code`,
      );
    }
    let amount: string;
    try {
      amount = decimalAmount(item.amount);
    } catch (error) {
      throw new ManifestError(`item ${JSON.stringify(item.id)}: ${(error as Error).message}`);
    }
    return { id: item.id, amount, currency: item.currency };
  });
}

/**
 * The manifest's hash: the SHA-256 (lowercase hex) of the canonical JSON
 * of `action` and the items, sorted by id.
 *
 * @throws {ManifestError} when an item is refused (see {@linkcode manifestEntries})
 */
export function manifestHash(action: string, items: readonly ManifestItem[]): string {
  return hashEntries(action, manifestEntries(items));
}

function hashEntries(action: string, entries: readonly ManifestEntry[]): string {
  const sorted = [...entries].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const text = canonicalJson({
    v: 1,
    action,
    items: sorted.map((e) => [e.id, e.amount, e.currency]),
  });
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/**
 * The manifest of `action` over `items`: the entries normalized, the
 * totals and the hash.
 *
 * @throws {ManifestError} when an item is refused (see {@linkcode manifestEntries})
 */
export function manifestOf(action: string, items: readonly ManifestItem[]): Manifest {
  if (action === "") throw new ManifestError("the action is empty");
  const entries = manifestEntries(items);
  return {
    hash: hashEntries(action, entries),
    action,
    items: entries,
    totals: manifestTotals(entries),
  };
}

/** Whether `text` has the shape of a manifest's hash (64 lowercase hex digits). */
export function looksLikeManifest(text: string): boolean {
  return /^[0-9a-f]{64}$/.test(text);
}
