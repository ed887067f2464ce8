// What one fulfilled request costs, from the configurable price table. The interface leaves the
// amounts open ("prices are dynamic"); the rules (toggles, tiers and the higher enrichment tier
// cost more, empty results are free) are the interface's.
import { applySearchTierRules, contactFlags, type EndpointDef } from '../contract/index.js';
import type { UsageBucket } from './ledger.js';
import type { PriceTable } from './options.js';

export interface Price {
  bucket: UsageBucket;
  amount: number;
}

export function bucketOf(endpoint: EndpointDef): UsageBucket {
  return endpoint.product === 'search' ? 'search' : 'enrichment';
}

/** Price of one person-search page, after the light-tier rule has switched toggles off. */
export function searchPagePrice(input: Record<string, unknown>, table: PriceTable): number {
  const tiered = applySearchTierRules(input);
  const type = tiered.type as keyof PriceTable['search'];
  let amount = table.search[type] ?? table.search.premium;
  const contacts = contactFlags(tiered);
  if (contacts.emails) amount += table.toggles.show_emails;
  if (contacts.phones) amount += table.toggles.show_phone_numbers;
  if (tiered.profile_scoring === true) amount += table.toggles.profile_scoring;
  if (tiered.insights === true) amount += table.toggles.insights;
  if (tiered.high_freshness === true) amount += table.toggles.high_freshness;
  return amount;
}

export function priceOf(
  endpoint: EndpointDef,
  input: Record<string, unknown>,
  table: PriceTable,
): Price {
  const bucket = bucketOf(endpoint);
  switch (endpoint.price) {
    case 'free':
      return { bucket, amount: 0 };
    case 'enrichment':
      return { bucket, amount: table.enrichment };
    case 'premium_enrichment':
      return { bucket, amount: table.premium_enrichment };
    case 'newsfeed':
      return { bucket, amount: table.newsfeed };
    case 'search':
      return {
        bucket,
        amount:
          endpoint.name === 'person_search' ? searchPagePrice(input, table) : table.search.premium,
      };
  }
}
