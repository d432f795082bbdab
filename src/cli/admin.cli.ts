// The configuration and the store are imported once a command is to run: `help` and usage errors load neither.
import type { Config } from '../config/config.js';
import type { Store } from '../store/port/store.port.js';
import { ADMIN_COMMANDS } from './admin.commands.js';
import { readRuntimeFile, withRuntimeSettings } from './runtime-file.js';
import { CliError, EXIT_INVALID, EXIT_USAGE, type Command, type CommandContext } from './commands/command.js';

const PROGRAM = 'npm run --silent admin --';
const RUNTIME_NOTE = 'data/runtime.json';

/** Runs one operator command: its JSON on stdout, a readable error on stderr; returns the exit code. */
async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === 'help' || name === '--help' || name === '-h') return print(process.stdout, overview(), 0);
  if (name === undefined) return print(process.stderr, overview(), EXIT_USAGE);
  const command = ADMIN_COMMANDS[name];
  if (!command) return print(process.stderr, `admin: unknown command '${name}'\n\n${overview()}`, EXIT_USAGE);
  if (args.includes('--help')) return print(process.stdout, usageOf(name, command), 0);

  const { env, used } = withRuntimeSettings(process.env, readRuntimeFile());
  if (used.length > 0)
    process.stderr.write(`admin: ${used.join(', ')} of the running npm start (${RUNTIME_NOTE})\n`);
  if (command.needsRedis && !env.REDIS_URL && !env.REDIS_SENTINELS) {
    const why = `REDIS_URL is not set and no npm start runs here (${RUNTIME_NOTE})`;
    return print(
      process.stderr,
      `admin ${name}: ${why}: set REDIS_URL (or REDIS_SENTINELS) to the Redis the workers use`,
      EXIT_INVALID,
    );
  }
  let config: Config;
  try {
    const { assertDataFolder, loadConfig } = await import('../config/config.js');
    config = loadConfig(env);
    assertDataFolder(config);
  } catch (error) {
    return print(process.stderr, `admin: ${(error as Error).message}`, EXIT_INVALID);
  }
  const ctx = lazyContext(config);
  try {
    const result = await command.run(args, ctx);
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } catch (error) {
    return reportFailure(name, command, error);
  } finally {
    await ctx.close();
  }
}

function lazyContext(config: Config): CommandContext & { close(): Promise<void> } {
  let store: Promise<Store> | undefined;
  return {
    config,
    // Never migrates under processes a migration would break (metrics/migration-gate.ts), as a process would not.
    store: () =>
      (store ??= Promise.all([import('../store/open-store.js'), import('../metrics/migration-gate.js')]).then(
        ([{ openStore }, { migrationGate }]) =>
          openStore(config, 'admin', undefined, { gate: migrationGate(config) }),
      )),
    out: { note: (line) => process.stderr.write(`${line}\n`) },
    close: async () => {
      // A store that could not be opened has nothing to close: its error is the command's, reported once.
      await (await store?.catch(() => undefined))?.close();
    },
  };
}

function reportFailure(name: string, command: Command, error: unknown): number {
  if (error instanceof CliError) {
    const hint = error.exitCode === EXIT_USAGE ? `\n${usageOf(name, command)}` : '';
    return print(process.stderr, `admin ${name}: ${error.message}${hint}`, error.exitCode);
  }
  // The message names the cause (a missing database, a key that opens nothing); the stack is for debugging.
  const debug = process.env.LOG_LEVEL === 'debug' || process.env.LOG_LEVEL === 'trace';
  const detail = error instanceof Error ? (debug && error.stack) || error.message : String(error);
  return print(process.stderr, `admin ${name}: ${detail}`, EXIT_INVALID);
}

function usageOf(name: string, command: Command): string {
  return `usage: ${PROGRAM} ${name} ${command.usage}\n  ${command.summary}`;
}

function overview(): string {
  const lines = Object.entries(ADMIN_COMMANDS).map(([name, command]) => `  ${name} ${command.usage}`);
  return `usage: ${PROGRAM} <command> [options]\n\ncommands:\n${lines.join('\n')}`;
}

function print(stream: NodeJS.WriteStream, text: string, exitCode: number): number {
  stream.write(`${text}\n`);
  return exitCode;
}

process.exitCode = await main(process.argv.slice(2));
