import type { Config } from '../config.js';
import { createSealer } from '../domain/secrets.js';
import { openPostgresStore } from './postgres/postgres.store.js';
import { resolveSecretsKey } from './secrets-key.js';
import { openSqliteStore } from './sqlite/sqlite.store.js';
import type { Store } from './store.port.js';

const toStderr = (message: string): void => void process.stderr.write(`${message}\n`);

/**
 * The store every process uses: PostgreSQL when DATABASE_URL is set, else the SQLite file at DB_PATH; its
 * secrets under SECRETS_KEY (on SQLite without it, the data folder's secrets.key, generated once and told to
 * `note`, stderr by default).
 */
export async function openStore(
  config: Pick<Config, 'DATABASE_URL' | 'DB_PATH' | 'DB_POOL_SIZE' | 'SECRETS_KEY'>,
  role = 'service',
  note: (message: string) => void = toStderr,
): Promise<Store> {
  const sealer = createSealer(resolveSecretsKey(config, note).key);
  return config.DATABASE_URL
    ? openPostgresStore(config.DATABASE_URL, { poolSize: config.DB_POOL_SIZE, applicationName: role, sealer })
    : openSqliteStore(config.DB_PATH, { sealer });
}
