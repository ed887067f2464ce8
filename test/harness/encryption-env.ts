// Every integration test process runs with the run's payload encryption key in its environment,
// so clients built from the environment (createPcdsClient's default) encrypt like the workers.
import { inject } from 'vitest';

process.env.PCDS_ENCRYPTION_KEY = inject('encryptionKey');
delete process.env.PCDS_ENCRYPTION_KEY_FILE;
delete process.env.PCDS_ENCRYPTION;
