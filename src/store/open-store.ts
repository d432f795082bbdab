import type { Config } from '../config.js';
import { openPostgresStore } from './postgres/postgres.store.js';
import { openSqliteStore } from './sqlite/sqlite.store.js';
import type { Store } from './store.port.js';

/** The store every process uses: PostgreSQL when DATABASE_URL is set, else the SQLite file at DB_PATH. */
export function openStore(
  config: Pick<Config, 'DATABASE_URL' | 'DB_PATH' | 'DB_POOL_SIZE'>,
  role = 'service',
): Promise<Store> {
  return config.DATABASE_URL
    ? openPostgresStore(config.DATABASE_URL, { poolSize: config.DB_POOL_SIZE, applicationName: role })
    : openSqliteStore(config.DB_PATH);
}
