// A node-postgres client's 'error' never ends the process: the adapter's clients listen from their construction,
// and the process-wide guard takes an error that a client of any other kind emits with nobody listening.
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { guardPostgresClients } from '../../src/store/postgres/client-errors.js';
import { targetedClient } from '../../src/store/postgres/postgres-hosts.js';

const terminated = Object.assign(new Error('terminating connection due to administrator command\nmore'), {
  code: '57P01',
});

describe('PostgreSQL client errors', () => {
  it('an adapter client listens before it connects, whatever its base class', () => {
    const url = 'postgres://u@127.0.0.1:1,127.0.0.1:2/db?target_session_attrs=read-write';
    const client = new (targetedClient(url, pg.Client))({ connectionString: 'postgres://u@127.0.0.1:1/db' });
    expect(client.listenerCount('error')).toBeGreaterThan(0);
    expect(() => client.emit('error', terminated)).not.toThrow();
  });

  it('with the guard, an error nobody listens to is told to the guard in one line and the process goes on', () => {
    const told: { code: string; message: string }[] = [];
    guardPostgresClients((err) => told.push(err));
    const client = new pg.Client({ connectionString: 'postgres://u@127.0.0.1:1/db' });
    expect(client.emit('error', terminated)).toBe(false);
    const pool = new pg.Pool({ connectionString: 'postgres://u@127.0.0.1:1/db' });
    expect(pool.emit('error', new Error('Connection terminated unexpectedly'))).toBe(false);
    expect(told).toEqual([
      { code: '57P01', message: 'terminating connection due to administrator command' },
      { code: '', message: 'Connection terminated unexpectedly' },
    ]);
    // A listener still hears the error itself, and the guard is not told.
    const heard: unknown[] = [];
    client.on('error', (err) => heard.push(err));
    expect(client.emit('error', terminated)).toBe(true);
    expect(heard).toEqual([terminated]);
    expect(told).toHaveLength(2);
    // Other events are untouched.
    expect(client.emit('notice', 'x')).toBe(false);
  });
});
