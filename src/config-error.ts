// The error of a bad or missing PCDS_ setting: its message names the setting, never its value.
import { PcdsError } from './contract/pcds-error.js';

export class ConfigError extends PcdsError {
  override name = 'ConfigError';
  constructor(message: string, options?: ErrorOptions) {
    super('invalid_config', message, options);
  }
}
