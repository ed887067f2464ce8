// API keys: creation, lookup and updates. The secret is shown once at creation and kept only as a
// salted SHA-256 hash; comparisons are constant-time.
import { PcdsError } from '../contract/pcds-error.js';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { compileAllowEntry, type AllowRule } from './ip-allow-list.js';
import { PRODUCTS } from './options.js';

export type ProductName = (typeof PRODUCTS)[number];

export interface ApiKeyRecord {
  id: string;
  name: string;
  key: string;
  secretHash: Buffer;
  products: Set<ProductName>;
  /** Remaining credits; null means unlimited. */
  credits: number | null;
  monthlyAllocation: number | null;
  ipLock: boolean;
  ipAllowList: string[];
  allowRules: AllowRule[];
  expiresAt: number | null;
  disabled: boolean;
  subscriptionActive: boolean;
  perMinute: number | null;
  perHour: number | null;
  /** Restricted endpoints (by name, e.g. person_osint) this key was granted. */
  restrictedAccess: string[];
  createdAt: number;
}

export interface KeySettings {
  name?: string;
  products?: ProductName[];
  credits?: number | null;
  add_credits?: number;
  monthly_allocation?: number | null;
  ip_lock?: boolean;
  ip_allowlist?: string[];
  expires_at?: string | null;
  disabled?: boolean;
  subscription_active?: boolean;
  rate_limits?: { per_minute?: number | null; per_hour?: number | null };
  restricted_access?: string[];
}

/** A key's settings refused by the admin API (answered as the service's invalid_request). */
export class KeySettingsError extends PcdsError {
  override name = 'KeySettingsError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super('invalid_request', `${field} ${message}`);
  }
}

export class KeyStore {
  private readonly byKey = new Map<string, ApiKeyRecord>();
  private readonly byId = new Map<string, ApiKeyRecord>();
  private readonly salt = randomBytes(16);

  private hash(secret: string): Buffer {
    return createHash('sha256').update(this.salt).update(secret).digest();
  }

  /** Add a key with given values (the dev key and configured keys). */
  add(id: string, key: string, secret: string, settings: KeySettings = {}): ApiKeyRecord {
    if (this.byId.has(id)) throw new KeySettingsError('id', `"${id}" is already in use`);
    if (this.byKey.has(key)) throw new KeySettingsError('key', 'is already in use');
    const rec: ApiKeyRecord = {
      id,
      name: id,
      key,
      secretHash: this.hash(secret),
      products: new Set(PRODUCTS),
      credits: 100_000,
      monthlyAllocation: null,
      ipLock: false,
      ipAllowList: [],
      allowRules: [],
      expiresAt: null,
      disabled: false,
      subscriptionActive: true,
      perMinute: null,
      perHour: null,
      restrictedAccess: [],
      createdAt: Date.now(),
    };
    this.apply(rec, settings);
    if (rec.monthlyAllocation === null && settings.monthly_allocation === undefined)
      rec.monthlyAllocation = rec.credits;
    this.byKey.set(key, rec);
    this.byId.set(id, rec);
    return rec;
  }

  /** Create a key with fresh random values; the caller shows the secret once. */
  create(settings: KeySettings): { record: ApiKeyRecord; secret: string } {
    const id = `key_${randomBytes(6).toString('hex')}`;
    const key = `pcds_${randomBytes(16).toString('hex')}`;
    const secret = randomBytes(24).toString('base64url');
    return { record: this.add(id, key, secret, settings), secret };
  }

  update(id: string, settings: KeySettings): ApiKeyRecord | undefined {
    const rec = this.byId.get(id);
    if (!rec) return undefined;
    // Validate on a copy so a bad field leaves the key unchanged.
    const draft = { ...rec, products: new Set(rec.products) };
    this.apply(draft, settings);
    Object.assign(rec, draft);
    return rec;
  }

  delete(id: string): boolean {
    const rec = this.byId.get(id);
    if (!rec) return false;
    this.byId.delete(id);
    this.byKey.delete(rec.key);
    return true;
  }

  get(id: string): ApiKeyRecord | undefined {
    return this.byId.get(id);
  }

  list(): ApiKeyRecord[] {
    return [...this.byId.values()];
  }

  findByKey(key: string): ApiKeyRecord | undefined {
    return this.byKey.get(key);
  }

  secretMatches(rec: ApiKeyRecord, secret: string): boolean {
    return timingSafeEqual(rec.secretHash, this.hash(secret));
  }

  private apply(rec: ApiKeyRecord, s: KeySettings): void {
    if (s.name !== undefined) rec.name = s.name;
    if (s.products !== undefined) rec.products = new Set(s.products);
    if (s.credits !== undefined) rec.credits = s.credits;
    if (s.add_credits !== undefined) {
      if (rec.credits === null)
        throw new KeySettingsError('add_credits', 'cannot top up an unlimited key');
      rec.credits += s.add_credits;
    }
    if (s.monthly_allocation !== undefined) rec.monthlyAllocation = s.monthly_allocation;
    if (s.ip_lock !== undefined) rec.ipLock = s.ip_lock;
    if (s.ip_allowlist !== undefined) {
      const rules: AllowRule[] = [];
      s.ip_allowlist.forEach((entry, i) => {
        const r = compileAllowEntry(entry);
        if (typeof r === 'string') throw new KeySettingsError(`ip_allowlist.${i}`, r);
        rules.push(r);
      });
      rec.ipAllowList = [...s.ip_allowlist];
      rec.allowRules = rules;
      // Giving a list turns the lock on unless the same update says otherwise.
      if (s.ip_lock === undefined) rec.ipLock = true;
    }
    if (s.expires_at !== undefined) {
      if (s.expires_at === null) rec.expiresAt = null;
      else {
        const t = Date.parse(s.expires_at);
        if (Number.isNaN(t))
          throw new KeySettingsError('expires_at', 'must be an ISO 8601 date-time');
        rec.expiresAt = t;
      }
    }
    if (s.disabled !== undefined) rec.disabled = s.disabled;
    if (s.subscription_active !== undefined) rec.subscriptionActive = s.subscription_active;
    if (s.rate_limits?.per_minute !== undefined) rec.perMinute = s.rate_limits.per_minute;
    if (s.rate_limits?.per_hour !== undefined) rec.perHour = s.rate_limits.per_hour;
    if (s.restricted_access !== undefined) rec.restrictedAccess = [...s.restricted_access];
  }
}

/** The public view of a key: never the secret or its hash. */
export function keyView(
  rec: ApiKeyRecord,
  formatTime: (d: Date) => string,
): Record<string, unknown> {
  return {
    id: rec.id,
    name: rec.name,
    key: rec.key,
    products: [...rec.products],
    credits: rec.credits,
    monthly_allocation: rec.monthlyAllocation,
    ip_lock: rec.ipLock,
    ip_allowlist: rec.ipAllowList,
    expires_at: rec.expiresAt === null ? null : formatTime(new Date(rec.expiresAt)),
    disabled: rec.disabled,
    subscription_active: rec.subscriptionActive,
    rate_limits: { per_minute: rec.perMinute, per_hour: rec.perHour },
    restricted_access: rec.restrictedAccess,
    created_on: formatTime(new Date(rec.createdAt)),
  };
}
