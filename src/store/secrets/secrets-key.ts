import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../../config/config.js';
import { parseSecretsKey } from '../../config/secrets-key-format.js';
import { newSecretsKey } from '../../domain/secrets.js';
import { restrictToOwner, writePrivateFile } from './private-files.js';

export interface SecretsKeySource {
  key: Buffer;
  /** SECRETS_KEY_PREVIOUS, during a rotation: opens what the key before sealed. */
  previous?: Buffer;
  /** The data folder's key file, when SECRETS_KEY is unset on SQLite: rotation replaces it. */
  file?: string;
}

/** Where the embedded default keeps its generated key: next to the database file. */
export function secretsKeyFile(dbPath: string): string {
  return path.join(path.dirname(path.resolve(dbPath)), 'secrets.key');
}

/**
 * The SECRETS_KEY of this process: the variable when set; else, on SQLite, the data folder's `secrets.key`,
 * generated (0600, and told to `note`) by the first process that starts without one. loadConfig requires the
 * variable with DATABASE_URL, where a file per host would give each host its own key.
 */
export function resolveSecretsKey(
  config: Pick<Config, 'SECRETS_KEY' | 'DATABASE_URL' | 'DB_PATH'> &
    Partial<Pick<Config, 'SECRETS_KEY_PREVIOUS'>>,
  note: (message: string) => void,
): SecretsKeySource {
  const previous = config.SECRETS_KEY_PREVIOUS ? parseSecretsKey(config.SECRETS_KEY_PREVIOUS) : undefined;
  return { ...currentKey(config, note), ...(previous && { previous }) };
}

function currentKey(
  config: Pick<Config, 'SECRETS_KEY' | 'DATABASE_URL' | 'DB_PATH'>,
  note: (message: string) => void,
): SecretsKeySource {
  if (config.SECRETS_KEY) return { key: parseSecretsKey(config.SECRETS_KEY) };
  if (config.DATABASE_URL) throw new Error('SECRETS_KEY: required with DATABASE_URL');
  // A database that lives as long as the process needs no key that outlives it.
  if (config.DB_PATH === ':memory:') return { key: newSecretsKey() };
  const file = secretsKeyFile(config.DB_PATH);
  if (!fs.existsSync(file) && writeKeyFile(file, newSecretsKey())) {
    note(
      `generated SECRETS_KEY into ${file} (mode 0600): back it up with the database, whose client secret ` +
        'keys cannot be read without it; or set SECRETS_KEY',
    );
  }
  restrictToOwner(file);
  return { key: readKeyFile(file), file };
}

/** The key held in `file` (64 hex characters or base64); an error names the file. */
export function readKeyFile(file: string): Buffer {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`, { cause: err });
  }
  try {
    return parseSecretsKey(text);
  } catch (err) {
    throw new Error(`${file}: ${(err as Error).message}`, { cause: err });
  }
}

/** Writes `key` as hex into `file` (0600): only when absent, unless `replace`; returns whether it wrote. */
export function writeKeyFile(file: string, key: Buffer, { replace = false } = {}): boolean {
  return writePrivateFile(file, `${key.toString('hex')}\n`, { replace });
}
