// What each endpoint's result is, as a type for the client: the person profile the interface
// documents, the fields a lookup returns, and for the endpoints whose payloads the interface does
// not show, an object or a list of objects as their result path says. Types only.
import type { EndpointName, EndpointOf, ResultPath } from './catalogue.js';
import type { LOOKUP_FIELDS } from './params.js';

/** A phone number of a profile. */
export interface PhoneNumber {
  fullphone: string;
  phone_type: string;
}

/** The person profile of person enrichment; the service fills the fields it knows. */
export interface PersonProfile {
  displayname?: string;
  firstname?: string;
  lastname?: string;
  headline?: string;
  location?: string;
  best_business_email?: string | null;
  altemails?: string[];
  fullphone?: PhoneNumber[];
  /** Keyed by platform name. */
  social_profiles?: Record<string, { url: string; followers: number }>;
  organizations?: { name: string; title: string; is_current: boolean }[];
  total_experience_years?: number;
}

/**
 * The fields a lookup asked for (`fields`), mobile data under `fullphone`. The interface does not
 * show the other fields' values: they are `unknown` until checked.
 */
export type LookupFieldsResult = {
  [F in Exclude<(typeof LOOKUP_FIELDS)[number], 'mobile'>]?: unknown;
} & {
  fullphone?: PhoneNumber[];
  /** The profile URL asked for under each key of `profile_urls`. */
  profile_urls?: Record<string, string | null>;
  probability_score?: number;
};

/** The endpoints whose results the interface documents field by field. */
interface DocumentedResults {
  person_enrichment: PersonProfile;
  person_enrich: PersonProfile;
  person_lookup_fields: LookupFieldsResult;
}

/** A result the interface does not show: a list of objects, or an object, by its path. */
type ResultAt<P extends ResultPath> = P extends 'data.results' | 'data.result.newsfeed'
  ? Record<string, unknown>[]
  : Record<string, unknown>;

/** The result of a found call of an endpoint (person_search: the page's rows). */
export type EndpointResult<N extends EndpointName> = N extends keyof DocumentedResults
  ? DocumentedResults[N]
  : ResultAt<EndpointOf<N>['resultPath']>;
