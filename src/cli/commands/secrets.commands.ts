import { createSealer } from '../../domain/secrets.js';
import { readKeyFile, resolveSecretsKey, writeKeyFile } from '../../store/secrets-key.js';
import { SecretsKeyMismatchError } from '../../store/store-secrets.js';
import { CliError, parseCommandArgs, requiredOption, type Command } from './command.js';

export const secretsRotate: Command = {
  usage: '--new-key-file FILE',
  summary:
    're-seal every secret key under the SECRETS_KEY in FILE (64 hex characters or base64), in one ' +
    'transaction; then restart every process with it (see README, Rotating SECRETS_KEY)',
  async run(args, ctx) {
    const { values } = parseCommandArgs(args, { 'new-key-file': { type: 'string' } });
    const file = requiredOption(values['new-key-file'], 'new-key-file');
    // A file, not an argument: a key on the command line lands in shell history and in `ps`.
    let next: Buffer;
    try {
      next = readKeyFile(file);
    } catch (error) {
      throw CliError.invalid((error as Error).message);
    }
    const current = resolveSecretsKey(ctx.config, ctx.out.note);
    if (current.key.equals(next)) throw CliError.invalid(`${file} holds the current SECRETS_KEY`);
    const store = await ctx.store().catch((error: unknown) => {
      throw error instanceof SecretsKeyMismatchError ? CliError.invalid(error.message) : error;
    });
    const counts = await store.clients.rotateSecrets(createSealer(next));
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
  },
};
