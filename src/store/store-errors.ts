// Which failures of a store call mean "the store cannot serve right now, try again", as opposed to a defect: the
// web answers them 503 5030 with Retry-After, the worker keeps the job for later without counting an attempt.
// Both drivers' codes are named here, so that no caller needs to know either driver.

/** Node socket errors: the server (or the pooler in front of it) is not there, or the connection broke. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EAI_AGAIN',
]);

/**
 * PostgreSQL SQLSTATEs of a server going away or not there yet: class 08 (connection exceptions; PgBouncer
 * reports its own, "pgbouncer cannot connect to server", as 08P01), 57P01-57P03 (terminated by a shutdown, a
 * crash, or not accepting connections while it starts or stops), 53300 (too many connections), 53100 (its disk
 * is full), 25006 (a write refused by a server that has become a read-only standby: its connection is dropped, the
 * next finds the primary).
 */
const POSTGRES_UNAVAILABLE = /^(08...|57P0[123]|53[13]00|25006)$/;

/**
 * node-postgres's own errors, without a code: a connection that ended under it, or no connection within the
 * pool's connectionTimeoutMillis (DATABASE_TIMEOUT_MS).
 */
const PG_CONNECTION_ENDED =
  /^Connection terminated|is not queryable|^timeout exceeded when trying to connect/;

/**
 * SQLite's codes of a disk that cannot take a write now: full (SQLITE_FULL, ENOSPC), or the write, flush or
 * shared-memory growth that a full file system refuses. Space freed, the same write succeeds.
 */
const SQLITE_DISK_FULL = /^SQLITE_(FULL|IOERR_(WRITE|FSYNC|SHMSIZE))$/;

/**
 * Whether a store call failed because the store is down, restarting, unreachable, busy (SQLite's write lock) or
 * out of disk: retrying later can succeed. A transaction cut off at its COMMIT may or may not have committed:
 * whatever retries must be idempotent (a request with its Svc-RequestId, a job with its guarded steps).
 */
export function isStoreUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null | undefined;
  const code = typeof e?.code === 'string' ? e.code : '';
  if (
    code.startsWith('SQLITE_BUSY') ||
    SQLITE_DISK_FULL.test(code) ||
    SOCKET_CODES.has(code) ||
    POSTGRES_UNAVAILABLE.test(code)
  )
    return true;
  return !code && typeof e?.message === 'string' && PG_CONNECTION_ENDED.test(e.message);
}
