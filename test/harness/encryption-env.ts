// Every integration test process runs with the run's payload encryption key and id secret in its
// environment, so clients built from the environment (createPcdsClient's default) encrypt like the
// workers and make the same keyed ids as the CLI processes a test spawns.
import { inject } from 'vitest';

process.env.PCDS_ENCRYPTION_KEY = inject('encryptionKey');
delete process.env.PCDS_ENCRYPTION_KEY_FILE;
process.env.PCDS_ID_SECRET = inject('idSecret');
delete process.env.PCDS_ID_SECRET_FILE;
delete process.env.PCDS_ENCRYPTION;
