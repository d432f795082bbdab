import pg from 'pg';

/**
 * Runs `fn` while another session of the PostgreSQL database at `url` holds an exclusive lock on `table`; `fn`
 * gets that session's pid. The lock ends with the session's transaction, whatever `fn` does.
 */
export async function whileLocked<T>(
  url: string,
  table: string,
  fn: (holderPid: number) => Promise<T>,
): Promise<T> {
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  try {
    await holder.query(`BEGIN; LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
    const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    return await fn(pid);
  } finally {
    await holder.query('ROLLBACK').finally(() => holder.end());
  }
}
