// The error of a bad or missing PCDS_ setting: its message names the setting, never its value.
export class ConfigError extends Error {
  override name = 'ConfigError';
}
