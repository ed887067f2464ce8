// How the workers' throttles schedule, from configuration: first-come or fair, the reserve kept
// for interactive work, and tenants' weights and budgets (pool-wide: each key's throttle enforces
// its part, src/worker/permit-gate.ts). Validated once at start; an error names the setting and
// the entry's position, never a value.
import { z } from 'zod';
import { ConfigError } from '../config-error.js';
import { OPERATOR_TENANT, tenantIdProblem, weightProblem } from '../contract/tenant.js';
import {
  DEFAULT_RESERVE,
  SCHEDULER_MODES,
  type SchedulerMode,
  type TenantPolicy,
} from './scheduler.js';

export interface TenantSettings {
  mode: SchedulerMode;
  /** Share of each key's windows batch work leaves to interactive and background requests. */
  reserve: number;
  /** Tenants the operator named: weight, and budgets across the pool. */
  tenants: Record<string, TenantPolicy>;
  /** The budget of every other tenant but the operator's own (`pcds mcp` tokens, client tenants). */
  unlisted?: Omit<TenantPolicy, 'weight'>;
}

/** The greatest reserve: batches keep at least half of every window. */
export const MAX_RESERVE = 0.5;
/** Unlisted tenants' default budget: a quarter of the pool's hourly limit. */
export const DEFAULT_TENANT_BUDGET = '25%';

export const schedulingEnvShape = {
  /** fair (default): interactive first, shares by weight, budgets; first-come: arrival order. */
  PCDS_THROTTLE_SCHEDULER: z.enum(SCHEDULER_MODES).default('fair'),
  /** Share of each key's minute and hour windows that batch work leaves to interactive work. */
  PCDS_INTERACTIVE_RESERVE: z.coerce
    .number()
    .min(0)
    .max(MAX_RESERVE, `at most ${MAX_RESERVE}`)
    .default(DEFAULT_RESERVE),
  /** JSON: { "<tenant>": { "weight": 2, "requestsPerHour": 500, "creditsPerDay": 1000 } }. */
  PCDS_TENANTS: z.string().optional(),
  /**
   * Requests an hour across the pool for each tenant PCDS_TENANTS does not name (the operator's
   * `default` excepted): a number, a percentage of the pool's hourly limit, or `off`.
   */
  PCDS_TENANT_BUDGET: z
    .string()
    .regex(
      /^(off|\d+|\d+(\.\d+)?%)$/,
      'a number of requests an hour, a percentage such as 25%, or off',
    )
    .default(DEFAULT_TENANT_BUDGET),
};

const tenantEntry = z
  .object({
    weight: z
      .number()
      .refine((w) => weightProblem(w) === undefined, { message: weightProblem(-1) ?? '' })
      .optional(),
    requestsPerHour: z.number().int().min(0).optional(),
    creditsPerDay: z.number().min(0).optional(),
  })
  .strict();

const FORMAT =
  'PCDS_TENANTS must be a JSON object of tenant ids to {"weight", "requestsPerHour", "creditsPerDay"}';

/** The tenants of PCDS_TENANTS; a ConfigError names the entry by position and the field. */
export function parseTenants(text: string | undefined): Record<string, TenantPolicy> {
  if (!text) return {};
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new ConfigError(FORMAT);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ConfigError(FORMAT);
  const tenants: Record<string, TenantPolicy> = {};
  Object.entries(raw).forEach(([id, value], i) => {
    const where = `PCDS_TENANTS entry ${i + 1}`;
    const idProblem = tenantIdProblem(id);
    if (idProblem) throw new ConfigError(`${where}: ${idProblem}`);
    const entry = tenantEntry.safeParse(value);
    if (!entry.success) {
      const issues = entry.error.issues.map((x) =>
        x.code === 'unrecognized_keys'
          ? 'only weight, requestsPerHour and creditsPerDay are allowed'
          : `${x.path.join('.') || 'value'}: ${x.message}`,
      );
      throw new ConfigError(`${where}: ${issues.join('; ')}`);
    }
    tenants[id] = entry.data;
  });
  return tenants;
}

/** PCDS_TENANT_BUDGET as requests an hour across a pool allowing `poolPerHour`; undefined: none. */
export function unlistedBudget(setting: string, poolPerHour: number): number | undefined {
  if (setting === 'off') return undefined;
  if (setting.endsWith('%')) return Math.floor((poolPerHour * Number(setting.slice(0, -1))) / 100);
  return Number(setting) || undefined;
}

export function tenantSettings(
  e: {
    PCDS_THROTTLE_SCHEDULER: SchedulerMode;
    PCDS_INTERACTIVE_RESERVE: number;
    PCDS_TENANTS?: string | undefined;
    PCDS_TENANT_BUDGET: string;
  },
  poolPerHour: number,
): TenantSettings {
  const unlisted = unlistedBudget(e.PCDS_TENANT_BUDGET, poolPerHour);
  return {
    mode: e.PCDS_THROTTLE_SCHEDULER,
    reserve: e.PCDS_INTERACTIVE_RESERVE,
    tenants: parseTenants(e.PCDS_TENANTS),
    ...(unlisted !== undefined ? { unlisted: { requestsPerHour: unlisted } } : {}),
  };
}

/** The tenant's policy: named, else the unlisted tenants' budget (the operator's own: none). */
export function policyOfTenant(
  s: TenantSettings | undefined,
  tenant: string,
): TenantPolicy | undefined {
  return s?.tenants[tenant] ?? (tenant === OPERATOR_TENANT ? undefined : s?.unlisted);
}
