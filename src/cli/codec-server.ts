// `pcds codec-server`: the remote codec endpoint for the Temporal Web UI and CLI, with the
// worker's keys, until SIGINT or SIGTERM.
import type { Command } from 'commander';
import { ConfigError, configuredListenerLimits, loadConfig, type Config } from '../config.js';
import { originOf, startCodecServer, type CodecServer } from '../codec-server.js';
import { payloadCodecFromSettings } from '../temporal/data-converter.js';
import { action } from './output.js';
import { portArg } from './args.js';

/** The codec server from configuration: refused without keys or without an access token. */
export async function startCodecServerFromConfig(
  config: Config,
  opts: { port?: number; host?: string; token?: string; allowedOrigin?: string | string[] } = {},
): Promise<CodecServer> {
  const codec = payloadCodecFromSettings(config);
  if (!codec)
    throw new ConfigError(
      'PCDS_ENCRYPTION=off: payloads are in clear, a codec server has nothing to do',
    );
  const token = opts.token ?? config.PCDS_CODEC_SERVER_TOKEN;
  if (!token)
    throw new ConfigError(
      'no access token: set PCDS_CODEC_SERVER_TOKEN (16+ characters); callers send it as Authorization: Bearer',
    );
  return startCodecServer({
    codec,
    token,
    namespace: config.PCDS_TEMPORAL_NAMESPACE,
    allowedOrigin:
      opts.allowedOrigin ??
      config.PCDS_CODEC_SERVER_ORIGIN ??
      originOf(config.PCDS_TEMPORAL_UI_URL),
    port: opts.port ?? config.PCDS_CODEC_SERVER_PORT,
    host: opts.host ?? config.PCDS_CODEC_SERVER_HOST,
    limits: configuredListenerLimits(config),
  });
}

export function registerCodecServerCommand(program: Command): Command {
  return program
    .command('codec-server')
    .description(
      "serve Temporal's remote codec protocol (POST /encode, /decode) with the PCDS_ENCRYPTION keys, " +
        'for the Web UI (Remote Codec Endpoint) and `temporal --codec-endpoint`; needs PCDS_CODEC_SERVER_TOKEN',
    )
    .option('--port <port>', 'port (default PCDS_CODEC_SERVER_PORT, 8789)', portArg)
    .option('--host <address>', 'address (default PCDS_CODEC_SERVER_HOST, 127.0.0.1)')
    .action(
      action(async (opts: { port?: number; host?: string }) => {
        const config = loadConfig();
        const server = await startCodecServerFromConfig(config, opts);
        process.stderr.write(
          `codec server on ${server.url} for namespace ${config.PCDS_TEMPORAL_NAMESPACE}, ` +
            `browsers from ${config.PCDS_CODEC_SERVER_ORIGIN ?? originOf(config.PCDS_TEMPORAL_UI_URL)}\n`,
        );
        await new Promise<void>((resolve) => {
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        await server.stop();
      }),
    );
}
