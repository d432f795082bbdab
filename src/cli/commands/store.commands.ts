import { secretsKeyFile } from '../../store/secrets/secrets-key.js';
import { CliError, parseCommandArgs, requiredOption, type CommandRun } from './command.js';

export const storeBackup: CommandRun = {
  async run(args, ctx) {
    const { values } = parseCommandArgs(args, { to: { type: 'string' } });
    const to = requiredOption(values.to, 'to');
    const { config } = ctx;
    if (config.DATABASE_URL) {
      throw CliError.invalid(
        "the store is PostgreSQL (DATABASE_URL): back it up with the server's own tools, pg_dump " +
          '(and pg_restore), or a base backup (pg_basebackup) with WAL archiving for point-in-time recovery; ' +
          'see docs/operating.md, Backups and restore',
      );
    }
    if (config.DB_PATH === ':memory:')
      throw CliError.invalid('DB_PATH is :memory:: there is no file to copy');
    const { backupSqlite } = await import('../../store/sqlite/backup.sqlite.js');
    const copy = backupSqlite(config.DB_PATH, to);
    // The key is not in the copy, by design: said on stderr so that stdout stays the command's JSON.
    const key = config.SECRETS_KEY ? 'the SECRETS_KEY variable' : secretsKeyFile(config.DB_PATH);
    ctx.out.note(
      `store:backup: the copy does not hold the secrets key (${key}); keep that too, apart from the copy: ` +
        "without it the clients' secret keys in the copy cannot be read",
    );
    return copy;
  },
};
