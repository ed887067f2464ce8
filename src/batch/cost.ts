// The estimate shown before a batch starts: rows times a typical price of the endpoint's price
// class. The service's prices are dynamic and not published, so this is a guide, not a quote;
// empty results are free, so a batch usually costs less.
import type { EndpointDef, PriceClass } from '../contract/index.js';

/** Typical credits per fulfilled request, by price class (the emulator's default table). */
export const TYPICAL_CREDITS: Readonly<Record<PriceClass, number>> = {
  enrichment: 1,
  premium_enrichment: 3,
  newsfeed: 1,
  search: 3,
  free: 0,
};

export interface CostEstimate {
  rows: number;
  perRow: number;
  credits: number;
  priceClass: PriceClass;
}

export function estimateCost(endpoint: EndpointDef, rows: number): CostEstimate {
  const perRow = TYPICAL_CREDITS[endpoint.price];
  return { rows, perRow, credits: rows * perRow, priceClass: endpoint.price };
}

export function describeEstimate(
  e: CostEstimate,
  available: number | 'unlimited' | undefined,
): string {
  const head = `estimated cost: up to ${e.credits} credits (${e.rows} rows x ~${e.perRow} for ${e.priceClass}; an estimate: prices are dynamic and empty results are free)`;
  if (available === undefined) return head;
  if (available === 'unlimited') return `${head}; available credits: unlimited`;
  const warn = available < e.credits ? ' - the batch may pause for credits before it ends' : '';
  return `${head}; available credits: ${available}${warn}`;
}
