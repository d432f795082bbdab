// A migration applied is history: databases record its version, not its text, so a migration whose SQL changed
// afterwards would leave old databases and new ones with different schemas under the same version. Its SQL may
// name constants of the adapters (a channel, a setting); this pins what each version runs, so that changing such
// a constant, or a migration, fails here instead. A new migration appends its digest.
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { POSTGRES_MIGRATIONS } from '../../src/store/postgres/postgres.migrations.js';
import { MIGRATIONS } from '../../src/store/sqlite/sqlite.migrations.js';

/** The first 16 hex digits of the SHA-256 of each version's SQL, by version from 1 (no SQL: that of ''). */
const RECORDED = {
  sqlite: [
    ...['7c46f3e1e7960250', '704c9b2f35763349', '54939c4156366f25', 'e8ba4a8571440601', '10a303c21b757c25'],
    ...['0f532dba6e7096e7', 'efa614ac8afdd71a', 'b2b9bdf49b8b20d8', '2d53a3e4d7da4edb', '05d1476d35677969'],
    ...['f4ee140841632d37', '792ead70164a9b5d', '675f775e9feb4a8c', '34dc698a1fd4f0fa', '4c505e04d7b1d240'],
    ...['3a27dfa8450f714a', '70d365c8aa3f2207'],
  ],
  postgres: [
    ...['5328c45145ff5f92', '88dfe3aae98501a3', '10a303c21b757c25', '313e942dbe0dc875', 'efa614ac8afdd71a'],
    ...['b2b9bdf49b8b20d8', '2d53a3e4d7da4edb', '6983a10ec59f2194', '05d1476d35677969', 'f4ee140841632d37'],
    ...['792ead70164a9b5d', '579d89824a9d949b', '675f775e9feb4a8c', 'bde63dab388e54d5', '8c47a26d22effbfc'],
    ...['34dc698a1fd4f0fa', '275a521e5e5d0c6e', '68a0f897156a07ed', '93a8e5e7773560a4', 'e3b0c44298fc1c14'],
    ...['bcb4c63d27342ff8', '627321328593189b'],
  ],
};

const digest = (sql: string | undefined) =>
  crypto
    .createHash('sha256')
    .update(sql ?? '')
    .digest('hex')
    .slice(0, 16);

describe.each([
  { store: 'sqlite', migrations: MIGRATIONS, recorded: RECORDED.sqlite },
  { store: 'postgres', migrations: POSTGRES_MIGRATIONS, recorded: RECORDED.postgres },
])('the $store migrations', ({ migrations, recorded }) => {
  it('are numbered 1, 2, 3… in the order they run', () => {
    expect(migrations.map((m) => m.version)).toEqual(migrations.map((_, i) => i + 1));
  });

  it('run the SQL each ran when it was released', () => {
    expect(migrations.map((m) => digest(m.sql))).toEqual(recorded);
  });
});
