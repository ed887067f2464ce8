// docker-compose.yml without a Docker engine: valid against the Compose Specification's JSON schema
// (vendored in ./compose-spec), and checked for what the schema cannot see: the CLI and the workers
// meeting only in Temporal and the store (no folder in common), the Temporal server the cluster tests run (same version, same configuration files),
// references that resolve, variables escaped from Compose, and no secret beyond the development
// defaults.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import draft7MetaSchema from 'ajv/dist/refs/json-schema-draft-07.json' with { type: 'json' };
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerEmulatorCommand } from '../../../src/cli/emulator.js';
import { devCredentials } from '../../../src/emulator/index.js';
import { projectRoot } from '../../../src/temporal/cli-binary.js';
import { CONFIG_FILE, TEMPORAL_SERVER_VERSION } from '../../../scripts/temporal-cluster.js';

// js-yaml ships no types; its load() is all this needs (js-yaml 4: YAML 1.2, merge keys).
const { load } = createRequire(import.meta.url)('js-yaml') as {
  load(text: string): unknown;
};

const root = projectRoot();
const composeText = readFileSync(join(root, 'docker-compose.yml'), 'utf8');
const compose = load(composeText) as ComposeFile;
const schema = JSON.parse(
  readFileSync(join(import.meta.dirname, 'compose-spec', 'compose-spec.json'), 'utf8'),
) as object;

/**
 * The schema names its meta-schema as https://json-schema.org/draft-07/schema, which Ajv knows as
 * http://json-schema.org/draft-07/schema#: the same draft-07 meta-schema is added under that name,
 * so the schema itself is checked too.
 */
function composeValidator() {
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajv.addMetaSchema({ ...draft7MetaSchema, $id: (schema as { $schema: string }).$schema });
  return ajv.compile(schema);
}

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string | null> | string[];
  volumes?: (string | { source?: string; target: string })[];
  depends_on?: Record<string, { condition: string }> | string[];
  deploy?: { replicas?: number };
  profiles?: string[];
}
interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

/** A service's environment as a map; list entries without `=` pass the host's value through. */
function envOf(service: Service): Record<string, string | null> {
  const env = service.environment ?? {};
  if (!Array.isArray(env)) return env;
  return Object.fromEntries(
    env.map((entry) => {
      const eq = entry.indexOf('=');
      return eq < 0 ? [entry, null] : [entry.slice(0, eq), entry.slice(eq + 1)];
    }),
  );
}

/** Short-syntax volume `source:target[:mode]` as { source, target }. */
function volumesOf(service: Service): { source?: string; target: string }[] {
  return (service.volumes ?? []).map((v) => {
    if (typeof v !== 'string') return v;
    const [source, target] = v.split(':');
    return target === undefined ? { target: source } : { source, target };
  });
}

const services = Object.entries(compose.services);

/** Every string value (and key) in a parsed YAML document. */
function stringsIn(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsIn);
  if (value && typeof value === 'object')
    return Object.entries(value).flatMap(([k, v]) => [k, ...stringsIn(v)]);
  return [];
}
const service = (name: string): Service => {
  const s = compose.services[name];
  if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
  return s;
};

describe('docker-compose.yml', () => {
  it('is valid against the Compose Specification schema', () => {
    const validate = composeValidator();
    const valid = validate(compose);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  it('the schema catches a broken file (the check is not vacuous)', () => {
    const validate = composeValidator();
    const broken = structuredClone(compose) as unknown as Record<string, any>;
    // Misplaced (it belongs under deploy:), a mount without a path, an unknown condition.
    broken.services.worker.replicas = 2;
    broken.services.worker.volumes = [{ target: 42 }];
    broken.services.worker.depends_on = { temporal: { condition: 'when_ready' } };
    expect(validate(broken)).toBe(false);
    const paths = (validate.errors ?? []).map((e) => e.instancePath);
    expect(paths).toEqual(
      expect.arrayContaining([
        '/services/worker',
        '/services/worker/volumes/0/target',
        '/services/worker/depends_on/temporal/condition',
      ]),
    );
  });

  it('every service serving metrics listens beyond loopback, where Prometheus scrapes it from another container', () => {
    // PCDS_METRICS_HOST defaults to 127.0.0.1, which no other container can reach.
    const serving = services.filter(([, s]) => envOf(s).PCDS_METRICS_PORT);
    expect(serving.map(([name]) => name)).toEqual(['worker']);
    for (const [name, s] of serving) expect(envOf(s).PCDS_METRICS_HOST, name).toBe('0.0.0.0');
  });

  it('the CLI alone sees the batch folder: workers share only Temporal and the store with it', () => {
    // The CLI loads a batch's rows into the store and writes its output from there; workers read
    // rows and write results in the store and never open a file of the caller's.
    const batchUsers = services.filter(([, s]) => 'PCDS_TEMPORAL_ADDRESS' in envOf(s));
    expect(batchUsers.map(([name]) => name).sort()).toEqual(['pcds', 'worker']);
    expect(service('worker').deploy?.replicas).toBeGreaterThanOrEqual(2);
    const stores = new Set(batchUsers.map(([, s]) => envOf(s).PCDS_STORE_URL));
    expect(stores.size).toBe(1);
    const storeUrl = new URL([...stores][0] ?? '');
    expect(storeUrl.protocol).toBe('postgres:');
    expect(storeUrl.hostname).toBe('postgresql');
    expect(storeUrl.pathname).toBe('/pcds_store');

    const cliMounts = volumesOf(service('pcds'));
    expect(cliMounts).toEqual([{ source: './batches', target: '/data/batches' }]);
    const workerMounts = volumesOf(service('worker'));
    expect(workerMounts.filter((v) => v.target === '/data/batches')).toEqual([]);
    for (const m of workerMounts)
      expect(
        cliMounts.map((c) => c.source),
        `the CLI does not mount ${m.source}`,
      ).not.toContain(m.source);
    // The workers' own state (the MCP tokens file and its lock) is shared by the replicas.
    expect(envOf(service('worker')).PCDS_DATA_DIR).toBe('/data/pcds');
    expect(workerMounts).toEqual([{ source: 'pcds-data', target: '/data/pcds' }]);
  });

  it('runs the Temporal server and admin tools the cluster tests run, with the same configuration', () => {
    expect(service('temporal').image).toBe(`temporalio/server:${TEMPORAL_SERVER_VERSION}`);
    for (const job of ['temporal-schema', 'temporal-namespace'])
      expect(service(job).image).toBe(`temporalio/admin-tools:${TEMPORAL_SERVER_VERSION}`);
    // Every temporalio image is pinned to that release (the UI versions separately).
    for (const [name, s] of services) {
      if (s.image?.startsWith('temporalio/') && !s.image.startsWith('temporalio/ui:'))
        expect(s.image, name).toMatch(
          new RegExp(`:${TEMPORAL_SERVER_VERSION.replace(/\./g, '\\.')}$`),
        );
    }

    // The configuration files scripts/temporal-cluster.ts starts the server with, mounted whole.
    const temporal = service('temporal');
    const env = envOf(temporal);
    const mount = volumesOf(temporal).find((v) => v.source === './deploy/temporal');
    expect(mount).toBeDefined();
    expect(CONFIG_FILE).toBe(join(root, 'deploy', 'temporal', 'config.yaml'));
    expect(env.TEMPORAL_SERVER_CONFIG_FILE_PATH).toBe(`${mount!.target}/config.yaml`);
    expect(env.DYNAMIC_CONFIG_FILE_PATH).toBe(`${mount!.target}/dynamicconfig.yaml`);
    // Every other variable given to the server is one the configuration template reads.
    const template = readFileSync(CONFIG_FILE, 'utf8');
    expect(template.split('\n')[0]).toBe('# enable-template');
    const read = new Set([...template.matchAll(/\(env "([A-Z_]+)"\)/g)].map((m) => m[1]));
    const serverFlags = ['TEMPORAL_SERVER_CONFIG_FILE_PATH', 'TEMPORAL_ALLOW_NO_AUTH'];
    for (const name of Object.keys(env).filter((n) => !serverFlags.includes(n)))
      expect(read, `deploy/temporal/config.yaml reads ${name}`).toContain(name);
  });

  it('sets the databases up with the SQL tool the way the cluster script does', () => {
    const script = service('temporal-schema').command?.join('\n') ?? '';
    const steps = [...script.matchAll(/temporal-sql-tool --db (\S+) (.+)/g)].map(
      (m) => `${m[1]} ${m[2].trim()}`,
    );
    expect(steps).toEqual([
      'temporal create-database',
      'temporal setup-schema -v 0.0',
      'temporal update-schema -s postgresql/v12/temporal',
      'temporal_visibility create-database',
      'temporal_visibility setup-schema -v 0.0',
      'temporal_visibility update-schema -s postgresql/v12/visibility',
      'pcds_store create-database',
    ]);
    // The store's database is the one the workers and the CLI are given, on the same server and
    // role, its password the same reference to the environment.
    const storeUrl = envOf(service('worker')).PCDS_STORE_URL ?? '';
    expect(storeUrl).toBe(
      `postgres://${envOf(service('temporal-schema')).SQL_USER}:\${TEMPORAL_DB_PASSWORD:-temporal}@${envOf(service('temporal-schema')).SQL_HOST}:${envOf(service('temporal-schema')).SQL_PORT}/pcds_store`,
    );
    expect(envOf(service('temporal-schema')).SQL_PLUGIN).toBe('postgres12');
    // The server starts only after the schema job succeeded; workers and UI after the namespace.
    expect(service('temporal').depends_on).toMatchObject({
      'temporal-schema': { condition: 'service_completed_successfully' },
    });
    for (const name of ['worker', 'pcds', 'temporal-ui'])
      expect(service(name).depends_on).toMatchObject({
        'temporal-namespace': { condition: 'service_completed_successfully' },
      });
  });

  it('refers only to services and volumes it defines', () => {
    const names = new Set(Object.keys(compose.services));
    const namedVolumes = new Set(Object.keys(compose.volumes ?? {}));
    for (const [name, s] of services) {
      const deps = Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on ?? {});
      for (const dep of deps) expect(names, `${name} depends on ${dep}`).toContain(dep);
      for (const v of volumesOf(s)) {
        if (v.source && !/^[./~]/.test(v.source))
          expect(namedVolumes, `${name} mounts volume ${v.source}`).toContain(v.source);
      }
    }
  });

  it("takes the emulator's admin token from the environment, which the emulator reads", () => {
    const env = envOf(service('emulator'));
    expect(env).toHaveProperty('PCDS_EMULATOR_ADMIN_TOKEN', null);
    const program = new Command();
    registerEmulatorCommand(program);
    const emulator = program.commands.find((c) => c.name() === 'emulator');
    const option = emulator?.options.find((o) => o.long === '--admin-token');
    expect(option?.envVar).toBe('PCDS_EMULATOR_ADMIN_TOKEN');
  });

  it("escapes shell variables from Compose's interpolation and uses only known variables", () => {
    // Compose replaces $NAME and ${NAME...} in every value; a shell's own variable is written $$.
    const references = stringsIn(compose).flatMap((text) => [
      ...text.replace(/\$\$/g, '').matchAll(/\$(\{[^}]*\}|\w+)?/g),
    ]);
    const names = references.map((m) => {
      const name = /^\{?([A-Z_][A-Z0-9_]*)/.exec(m[1] ?? '')?.[1];
      expect(name, `"${m[0]}" is a Compose variable`).toBeDefined();
      return name!;
    });
    expect(new Set(names)).toEqual(
      new Set([
        'TEMPORAL_DB_PASSWORD',
        'PCDS_BASE_URL',
        'PCDS_API_KEY',
        'PCDS_API_SECRET',
        'PCDS_ENCRYPTION_KEY',
        'PCDS_ID_SECRET',
        'PCDS_TEMPORAL_ADDRESS',
        'PCDS_TEMPORAL_NAMESPACE',
        'PCDS_TEMPORAL_TLS_CERT',
        'PCDS_TEMPORAL_TLS_KEY',
        'PCDS_TEMPORAL_TLS_CA',
        'PCDS_TEMPORAL_TLS_SERVER_NAME',
        'PCDS_TEMPORAL_API_KEY',
      ]),
    );
    // The shell scripts do use variables of their own, escaped.
    expect(service('temporal-namespace').command?.join('\n')).toContain('$$tries');
  });

  it('holds no secret but the documented development defaults', () => {
    const dev = devCredentials(42);
    const allowed = new Map<string, string[]>([
      // The development database role of deploy/temporal/config.yaml, overridable.
      ['TEMPORAL_DB_PASSWORD', ['temporal']],
      // The emulator's development key for its default seed 42, overridable.
      ['PCDS_API_KEY', [dev.key]],
      ['PCDS_API_SECRET', [dev.secret]],
      // A secured Temporal's key and API key: empty unless the environment gives them.
      ['PCDS_TEMPORAL_TLS_KEY', ['']],
      ['PCDS_TEMPORAL_API_KEY', ['']],
    ]);
    const secretName = /PASSWORD|PWD|SECRET|TOKEN|(^|_)KEY$/;
    for (const [name, s] of services) {
      for (const [variable, value] of Object.entries(envOf(s))) {
        if (!secretName.test(variable) || value === null) continue;
        // Each secret is a reference to the environment, with at most an allowed default.
        const ref = /^\$\{([A-Z_][A-Z0-9_]*)(?::?-([^}]*)|:?\?[^}]*)?\}$/.exec(value);
        expect(ref, `${name}: ${variable} comes from the environment`).not.toBeNull();
        const [, from, fallback] = ref!;
        if (fallback !== undefined)
          expect(allowed.get(from) ?? [], `${name}: default of ${variable}`).toContain(fallback);
      }
    }
    // And nothing secret-looking sits anywhere else in the file (comments included).
    const literals = [
      ...composeText.matchAll(
        /pcds_(?:dev_secret|dev|admin|live)_[0-9a-f]+|[A-Za-z0-9+/]{40,}={0,2}/g,
      ),
    ].map((m) => m[0]);
    expect(new Set(literals)).toEqual(new Set([dev.key, dev.secret]));
    expect(composeText).not.toMatch(/BEGIN [A-Z ]*PRIVATE KEY/);
  });
});
