import { ItemStatus } from './item-status.js';
import { convertCents, type Currency, type UsdPer } from './money.js';
import { taxCents, taxRuleFor, type TaxRule, type TaxRules } from './tax.js';

export type ShippingMode = 'S' | 'P';
export type Zone = 'domestic' | 'international';

/** A vendor's shipping rate, in the vendor's currency. */
export interface ShippingRate {
  firstCents: number;
  additionalCents: number;
  minDays: number;
  maxDays: number;
}

export interface PricingVendor {
  vendorId: number;
  country: string;
  currency: Currency;
  active: boolean;
  rates: Partial<Record<ShippingMode, Partial<Record<Zone, ShippingRate>>>>;
}

/** A listing; its price is in the vendor's currency. */
export interface PricingListing {
  listingId: number;
  vendorId: number;
  title: string;
  isbn: string;
  priceCents: number;
  stock: number;
}

export interface PricingLineRequest {
  listingId: number;
  quantity: number;
  maxPriceCents?: number | null;
}

export interface PricingInput {
  currency: Currency;
  shippingMode: ShippingMode;
  shipTo: { country: string; provstate?: string | null };
  totalMaxPriceCents?: number | null;
  lines: PricingLineRequest[];
  listings: ReadonlyMap<number, PricingListing>;
  vendors: ReadonlyMap<number, PricingVendor>;
  usdPer: UsdPer;
  taxRules: TaxRules;
}

export interface PricedItem {
  costCents: number;
  shipcostCents: number;
  taxCents: number;
}

export type PricedStatus =
  | typeof ItemStatus.ORDERED
  | typeof ItemStatus.ITEM_UNAVAILABLE
  | typeof ItemStatus.MAX_PRICE_EXCEEDED
  | typeof ItemStatus.INACTIVE_SELLER
  | typeof ItemStatus.TOTAL_MAX_PRICE_EXCEEDED;

export interface PricedLine {
  listingId: number;
  vendorId: number;
  title: string;
  isbn: string;
  quantity: number;
  unitCostCents: number;
  status: PricedStatus;
  minDays: number | null;
  maxDays: number | null;
  items: PricedItem[];
}

export interface PricingResult {
  lines: PricedLine[];
  itemsCents: number;
  shippingCents: number;
  taxCents: number | null;
  taxModel: string | null;
  totalCents: number;
  purchasableItemCount: number;
}

/** A requested line with its costs converted to the domain currency and its status before totalMaxPrice. */
interface Quote {
  listing: PricingListing;
  quantity: number;
  unitCostCents: number;
  rate: ShippingRate | null;
  firstCents: number;
  additionalCents: number;
  status: PricedStatus;
}

/** The charges of the purchasable items, in request order. */
interface Charges {
  items: PricedItem[];
  itemsCents: number;
  shippingCents: number;
  taxCents: number | null;
}

/**
 * Prices an order by docs/api.md#pricing steps 1–5, in the domain currency: per-line statuses, each item's cost,
 * shipcost and tax share, and the totals to authorise. Pure: stock is read from `listings`, never taken.
 */
export function priceOrder(input: PricingInput): PricingResult {
  const quotes = input.lines.map((line) => quoteLine(input, line));
  const rule = taxRuleFor(input.taxRules, input.shipTo.country, input.shipTo.provstate);
  let charges = chargePurchasable(quotes, rule);
  if (exceedsTotalMax(charges, input.totalMaxPriceCents)) {
    // Nothing is bought: the would-be purchases become 55 and are charged again as an empty order.
    for (const quote of quotes) {
      if (quote.status === ItemStatus.ORDERED) quote.status = ItemStatus.TOTAL_MAX_PRICE_EXCEEDED;
    }
    charges = chargePurchasable(quotes, rule);
  }
  return {
    lines: toPricedLines(quotes, charges.items),
    itemsCents: charges.itemsCents,
    shippingCents: charges.shippingCents,
    taxCents: charges.taxCents,
    taxModel: rule?.model ?? null,
    totalCents: totalOf(charges),
    purchasableItemCount: charges.items.length,
  };
}

function quoteLine(input: PricingInput, line: PricingLineRequest): Quote {
  if (!Number.isSafeInteger(line.quantity) || line.quantity < 1) {
    throw new RangeError(`quantity must be a positive integer, got ${line.quantity}`);
  }
  const listing = input.listings.get(line.listingId);
  if (!listing) throw new Error(`listing ${line.listingId} is missing from the pricing input`);
  const vendor = input.vendors.get(listing.vendorId);
  if (!vendor) throw new Error(`vendor ${listing.vendorId} is missing from the pricing input`);
  const zone: Zone = input.shipTo.country === vendor.country ? 'domestic' : 'international';
  const rate = vendor.rates[input.shippingMode]?.[zone] ?? null;
  const convert = (cents: number) => convertCents(cents, vendor.currency, input.currency, input.usdPer);
  const quote: Quote = {
    listing,
    quantity: line.quantity,
    unitCostCents: convert(listing.priceCents),
    rate,
    firstCents: rate ? convert(rate.firstCents) : 0,
    additionalCents: rate ? convert(rate.additionalCents) : 0,
    status: ItemStatus.ORDERED,
  };
  quote.status = lineStatus(vendor, quote, line.maxPriceCents);
  return quote;
}

/** Steps 1 and 2, in order of precedence: 54, then 14, then 53. */
function lineStatus(vendor: PricingVendor, quote: Quote, maxPriceCents: number | null | undefined) {
  if (!vendor.active) return ItemStatus.INACTIVE_SELLER;
  if (!quote.rate || quote.listing.stock < quote.quantity) return ItemStatus.ITEM_UNAVAILABLE;
  if (maxPriceCents != null && quote.unitCostCents + quote.firstCents > maxPriceCents) {
    return ItemStatus.MAX_PRICE_EXCEEDED;
  }
  return ItemStatus.ORDERED;
}

/** Steps 3 and 4 over the lines still at status 5. */
function chargePurchasable(quotes: Quote[], rule: TaxRule | null): Charges {
  const purchasable = quotes.filter((quote) => quote.status === ItemStatus.ORDERED);
  const costs = purchasable.flatMap((quote) => Array<number>(quote.quantity).fill(quote.unitCostCents));
  const itemsCents = sum(costs);
  const shippingCents = vendorShipping(purchasable);
  const shipcosts = splitCents(shippingCents, costs.length);
  const tax = rule ? taxCents(itemsCents + shippingCents, rule) : null;
  const taxShares = splitProportional(
    tax ?? 0,
    costs.map((cost, i) => cost + (shipcosts[i] ?? 0)),
  );
  const items = costs.map((cost, i) => ({
    costCents: cost,
    shipcostCents: shipcosts[i] ?? 0,
    taxCents: taxShares[i] ?? 0,
  }));
  return { items, itemsCents, shippingCents, taxCents: tax };
}

/** first + additional × (n − 1) per vendor with n purchasable copies, summed over vendors. */
function vendorShipping(purchasable: Quote[]): number {
  const byVendor = new Map<number, { first: number; additional: number; copies: number }>();
  for (const quote of purchasable) {
    const entry = byVendor.get(quote.listing.vendorId);
    if (entry) entry.copies += quote.quantity;
    else {
      byVendor.set(quote.listing.vendorId, {
        first: quote.firstCents,
        additional: quote.additionalCents,
        copies: quote.quantity,
      });
    }
  }
  let total = 0;
  for (const { first, additional, copies } of byVendor.values()) total += first + additional * (copies - 1);
  return total;
}

function exceedsTotalMax(charges: Charges, totalMaxPriceCents: number | null | undefined): boolean {
  return totalMaxPriceCents != null && totalOf(charges) > totalMaxPriceCents;
}

function totalOf(charges: Charges): number {
  return charges.itemsCents + charges.shippingCents + (charges.taxCents ?? 0);
}

/** Hands the charged items out to the purchasable lines in request order; the others show cost only. */
function toPricedLines(quotes: Quote[], charged: PricedItem[]): PricedLine[] {
  let next = 0;
  return quotes.map((quote) => {
    const bought = quote.status === ItemStatus.ORDERED;
    const items = bought ? charged.slice(next, next + quote.quantity) : unchargedItems(quote);
    if (bought) next += quote.quantity;
    const { listing } = quote;
    return {
      listingId: listing.listingId,
      vendorId: listing.vendorId,
      title: listing.title,
      isbn: listing.isbn,
      quantity: quote.quantity,
      unitCostCents: quote.unitCostCents,
      status: quote.status,
      minDays: quote.rate?.minDays ?? null,
      maxDays: quote.rate?.maxDays ?? null,
      items,
    };
  });
}

function unchargedItems(quote: Quote): PricedItem[] {
  return Array.from({ length: quote.quantity }, () => ({
    costCents: quote.unitCostCents,
    shipcostCents: 0,
    taxCents: 0,
  }));
}

/** Splits total into n shares differing by at most one cent, leftover cents to the first shares. */
export function splitCents(total: number, n: number): number[] {
  if (!Number.isSafeInteger(total)) throw new RangeError(`total must be integer cents, got ${total}`);
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`n must be a non-negative integer, got ${n}`);
  if (n === 0) {
    if (total !== 0) throw new RangeError(`cannot split ${total} cents into no shares`);
    return [];
  }
  const base = Math.floor(total / n);
  const leftover = total - base * n;
  return Array.from({ length: n }, (_, i) => base + (i < leftover ? 1 : 0));
}

/**
 * Splits total in proportion to non-negative weights by largest remainder: each share is floored, then the
 * leftover cents go one each to the largest remainders, ties to the earlier share. Shares sum exactly to
 * total. All-zero weights split evenly (splitCents).
 */
export function splitProportional(total: number, weights: number[]): number[] {
  if (!Number.isSafeInteger(total)) throw new RangeError(`total must be integer cents, got ${total}`);
  if (weights.some((w) => !Number.isSafeInteger(w) || w < 0)) {
    throw new RangeError('weights must be non-negative integers');
  }
  const weightSum = BigInt(sum(weights));
  if (weightSum === 0n) return splitCents(total, weights.length);
  const parts = weights.map((weight, index) => {
    const product = BigInt(total) * BigInt(weight);
    const floor = floorDiv(product, weightSum);
    return { index, share: floor, remainder: product - floor * weightSum };
  });
  let leftover = BigInt(total) - parts.reduce((acc, part) => acc + part.share, 0n);
  // Ties to the earlier share. V8's sort is stable and tells a negative answer only from the rest, so a tie answered
  // by any positive number keeps index order too, and `>` can be `>=` once ties are out of the way.
  const byRemainder = [...parts].sort((a, b) =>
    // Stryker disable next-line ConditionalExpression: see above
    a.remainder === b.remainder
      ? // Stryker disable next-line ArithmeticOperator: see above
        a.index - b.index
      : // Stryker disable next-line EqualityOperator: see above
        a.remainder > b.remainder
        ? -1
        : 1,
  );
  for (const part of byRemainder) {
    if (leftover === 0n) break;
    part.share += 1n;
    leftover -= 1n;
  }
  return parts.map((part) => Number(part.share));
}

function floorDiv(numerator: bigint, denominator: bigint): bigint {
  const quotient = numerator / denominator;
  // BigInt division truncates toward zero; step down for negative non-exact quotients.
  // A floor one low on an exact division (`<= 0n`, or the sign of `numerator * denominator`) would leave a remainder
  // of weightSum, the largest, so the leftover would give that cent back first: those mutants are equivalent.
  // Stryker disable next-line ArithmeticOperator: see above
  const remainder = numerator % denominator;
  // Stryker disable next-line EqualityOperator: see above
  return remainder < 0n ? quotient - 1n : quotient;
}

function sum(values: number[]): number {
  return values.reduce((acc, value) => acc + value, 0);
}
