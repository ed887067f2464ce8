// `pcds doctor [--json]`: checks this process's setup and that it matches its workers', each
// problem with its fix; exits 1 when a check fails (warnings pass).
import type { Command } from 'commander';
import { doctorText, runDoctor } from '../doctor/checks.js';
import { action, printJson } from './output.js';

export function registerDoctorCommand(program: Command): Command {
  return program
    .command('doctor')
    .description(
      "check this host's setup: Temporal, workers, the store, keys and secrets (same as the workers'), the service, webhooks",
    )
    .option('--json', 'the report as JSON: {ok, checks: [{id, status, detail, fix}]}')
    .action(
      action(async (o: { json?: boolean }) => {
        const report = await runDoctor(process.env);
        if (o.json) printJson(report);
        else process.stdout.write(`${doctorText(report).join('\n')}\n`);
        if (!report.ok) process.exitCode = 1;
      }),
    );
}
