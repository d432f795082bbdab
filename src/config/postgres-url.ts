// DATABASE_URL in libpq's form, which may name several hosts: `postgres://u@h1:5432,h2:5433/db?target_session_attrs=
// read-write`. Read here without node-postgres (config.ts checks it); store/postgres/postgres-hosts.ts connects to the hosts.

export interface PostgresHost {
  host: string;
  port: number;
}

export interface PostgresHosts {
  hosts: PostgresHost[];
  /** target_session_attrs=read-write: only a server that accepts writes will do. */
  readWrite: boolean;
  /** The URL of one host, with everything else of the URL (login, database, parameters but target_session_attrs). */
  urlOf(host: PostgresHost): string;
}

const SESSION_ATTRS = ['any', 'read-write'] as const;

/** Splits a libpq URL into its hosts; throws an Error saying what is wrong. */
export function parsePostgresHosts(url: string): PostgresHosts {
  const match = /^(postgres(?:ql)?:\/\/)([^/?#]*)([^?#]*)(?:\?([^#]*))?$/i.exec(url);
  if (!match) throw new Error('must be a postgres://USER[:PASSWORD]@HOST:PORT[,HOST:PORT…]/DB URL');
  const [, scheme = '', authority = '', path = '', query = ''] = match;
  // The last @ ends the login, so a password may hold an unencoded @.
  const at = authority.lastIndexOf('@');
  const login = authority.slice(0, at + 1);
  const list = authority.slice(at + 1).split(',');
  const hosts = list.map((one) => {
    // An empty host (`postgres://u@/db?host=/run/postgresql`) is node-postgres's to read, when it is the only one.
    const hostPort = /^(\[[^\]]+\]|[^:[\]]*)(?::(\d{1,5}))?$/.exec(one);
    const port = hostPort?.[2] === undefined ? 5432 : Number(hostPort[2]);
    if (!hostPort || port < 1 || port > 65535 || (list.length > 1 && !hostPort[1]))
      throw new Error(`'${one}' is not a host or host:port`);
    // A socket directory is written %2F-encoded (`%2Frun%2Fpostgresql`).
    return { host: decodeURIComponent(hostPort[1]!.replace(/^\[|\]$/g, '')), port };
  });
  const params = new URLSearchParams(query);
  const attrs = params.get('target_session_attrs') ?? 'any';
  if (!(SESSION_ATTRS as readonly string[]).includes(attrs))
    throw new Error(`target_session_attrs=${attrs} is not supported: any (the default) or read-write`);
  params.delete('target_session_attrs');
  const rest = params.size > 0 ? `?${params.toString()}` : '';
  return {
    hosts,
    readWrite: attrs === 'read-write',
    urlOf: ({ host, port }) =>
      `${scheme}${login}${host.includes(':') ? `[${host}]` : encodeURIComponent(host)}:${port}${path}${rest}`,
  };
}
