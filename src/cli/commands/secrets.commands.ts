import { createSealer } from '../../domain/secrets.js';
import { readKeyFile, resolveSecretsKey, writeKeyFile } from '../../store/secrets/secrets-key.js';
import { SecretsKeyMismatchError } from '../../store/secrets/store-secrets.js';
import type { Store } from '../../store/port/store.port.js';
import {
  CliError,
  parseCommandArgs,
  positiveIntOption,
  requiredOption,
  type CommandRun,
  type CommandContext,
} from './command.js';

export const secretsRotate: CommandRun = {
  async run(args, ctx) {
    const { values } = parseCommandArgs(args, {
      'new-key-file': { type: 'string' },
      'batch-size': { type: 'string' },
    });
    const file = values['new-key-file'];
    if (file === undefined) {
      const batchSize = positiveIntOption(values['batch-size'] ?? '500', 'batch-size');
      return resealUnderCurrent(ctx, batchSize);
    }
    if (values['batch-size'] !== undefined) throw CliError.usage('--batch-size: only without --new-key-file');
    return rotateTo(ctx, requiredOption(file, 'new-key-file'));
  },
};

async function openStore(ctx: CommandContext): Promise<Store> {
  return ctx.store().catch((error: unknown) => {
    throw error instanceof SecretsKeyMismatchError ? CliError.invalid(error.message) : error;
  });
}

/** The rolling rotation's second step: every process already holds SECRETS_KEY and SECRETS_KEY_PREVIOUS. */
async function resealUnderCurrent(ctx: CommandContext, batchSize: number) {
  if (!ctx.config.SECRETS_KEY_PREVIOUS) {
    throw CliError.usage('give --new-key-file FILE, or set SECRETS_KEY_PREVIOUS to re-seal what it sealed');
  }
  const counts = await (await openStore(ctx)).clients.resealSecrets(batchSize);
  ctx.out.note(
    'every secret is now under SECRETS_KEY: restart every process without SECRETS_KEY_PREVIOUS, then retire it',
  );
  return counts;
}

async function rotateTo(ctx: CommandContext, file: string) {
  // A file, not an argument: a key on the command line lands in shell history and in `ps`.
  let next: Buffer;
  try {
    next = readKeyFile(file);
  } catch (error) {
    throw CliError.invalid((error as Error).message);
  }
  const current = resolveSecretsKey(ctx.config, ctx.out.note);
  if (current.key.equals(next)) throw CliError.invalid(`${file} holds the current SECRETS_KEY`);
  const counts = await (await openStore(ctx)).clients.rotateSecrets(createSealer(next));
  if (current.file) {
    // After the commit: a failure here leaves the store under the key of FILE, which the operator still has.
    writeKeyFile(current.file, next, { replace: true });
    ctx.out.note(`${current.file} now holds the new key: restart web, worker and clock`);
  } else {
    ctx.out.note(
      'restart every process (web, worker, clock, on every host) with SECRETS_KEY set to the new key',
    );
  }
  return counts;
}
