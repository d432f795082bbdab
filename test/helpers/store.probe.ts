/**
 * Raw reads and writes of a store's database, for tests that arrange or inspect state the port does not show.
 * SQL uses `?` placeholders (SQLite style) whichever adapter runs it; numbers come back as JS numbers.
 */
export interface Probe {
  all<T = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<T[]>;
  /** The first row, or undefined when there is none. */
  get<T>(sql: string, ...params: unknown[]): Promise<T | undefined>;
  /** The first column of the first row (undefined when there is no row). */
  scalar<T = number>(sql: string, ...params: unknown[]): Promise<T>;
  /** Runs one or more statements without parameters. */
  exec(sql: string): Promise<void>;
  close(): Promise<void>;
}
