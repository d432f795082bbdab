import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { STATUS_CODES } from 'node:http';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { OrderApiError, OrdersClient, type RawAnswer } from '../../client/src/index.js';
import { readRuntimeFile } from './runtime-file.js';

const DEFAULT_PROFILE = 'data/demo-client.json';

const USAGE = `usage: npm run --silent call -- [options] METHOD PATH [BODYFILE]
  Sends one signed request and prints the JSON body on stdout, the status on stderr.
  PATH starts at the service root, e.g. /v1/orders?limit=5; BODYFILE - reads the body from stdin.
options:
  --profile FILE       JSON with accessKey, secretKey and optionally baseUrl
  --request-id ID      Svc-RequestId to send (default: a fresh UUID); reuse it to retry a POST
  --header 'N: V'      an extra header, repeatable
  --async              ask for Prefer: respond-async
credentials: --profile, else ACCESS_KEY and SECRET_KEY, else the profile of the running npm start
  (data/runtime.json), else ${DEFAULT_PROFILE} when it exists.
service: API_URL, else the profile's baseUrl, else http://127.0.0.1:$PORT, else the running npm start's
  address, else http://127.0.0.1:3000.`;

const ProfileSchema = z.object({
  baseUrl: z.string().url().optional(),
  accessKey: z.string().min(1),
  secretKey: z.string().min(1),
});

const EnvSchema = z.object({
  API_URL: z.string().url().optional(),
  ACCESS_KEY: z.string().min(1).optional(),
  SECRET_KEY: z.string().min(1).optional(),
  PORT: z.coerce.number().int().min(1).max(65535).optional(),
});

type Env = z.infer<typeof EnvSchema>;

class UsageError extends Error {}

/** Where and as whom requests are sent. */
interface Target {
  baseUrl: string;
  accessKey: string;
  secretKey: string;
}

interface Invocation {
  method: string;
  path: string;
  bodyFile: string | undefined;
  profile: string | undefined;
  requestId: string | undefined;
  headers: Record<string, string>;
}

function parseInvocation(argv: string[]): Invocation {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      profile: { type: 'string' },
      'request-id': { type: 'string' },
      header: { type: 'string', multiple: true },
      async: { type: 'boolean' },
    },
    strict: true,
    allowPositionals: true,
  });
  const [method, path, bodyFile, extra] = positionals;
  if (!method || !path) throw new UsageError('METHOD and PATH are required');
  if (extra !== undefined) throw new UsageError(`unexpected argument '${extra}'`);
  if (!/^[A-Za-z]+$/.test(method))
    throw new UsageError(`METHOD must be a word like GET or POST, got '${method}'`);
  if (!path.startsWith('/')) throw new UsageError(`PATH must start with '/', got '${path}'`);
  const headers = Object.fromEntries((values.header ?? []).map(parseHeader));
  if (values.async) headers['prefer'] = 'respond-async';
  return { method, path, bodyFile, profile: values.profile, requestId: values['request-id'], headers };
}

// An exported-but-empty variable means unset, as loadConfig treats it.
function withoutBlanks(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => Boolean(entry[1])),
  );
}

function parseHeader(text: string): [string, string] {
  const colon = text.indexOf(':');
  if (colon < 1) throw new UsageError(`--header must look like 'Name: value', got '${text}'`);
  return [text.slice(0, colon).trim().toLowerCase(), text.slice(colon + 1).trim()];
}

/**
 * Credentials and address: --profile, else ACCESS_KEY/SECRET_KEY, else the profile of the running `npm start`
 * (data/runtime.json), else the demo profile when it exists.
 */
async function resolveTarget(env: Env, profilePath: string | undefined): Promise<Target> {
  const runtime = readRuntimeFile();
  const fallbackUrl = env.PORT
    ? `http://127.0.0.1:${env.PORT}`
    : (runtime?.apiUrl ?? 'http://127.0.0.1:3000');
  if (profilePath === undefined && (env.ACCESS_KEY || env.SECRET_KEY)) {
    if (!env.ACCESS_KEY || !env.SECRET_KEY)
      throw new UsageError('set both ACCESS_KEY and SECRET_KEY, or neither');
    return { baseUrl: env.API_URL ?? fallbackUrl, accessKey: env.ACCESS_KEY, secretKey: env.SECRET_KEY };
  }
  const file = profilePath ?? runtime?.profile ?? DEFAULT_PROFILE;
  if (profilePath === undefined && !existsSync(file)) {
    throw new UsageError(
      `no credentials: set ACCESS_KEY and SECRET_KEY, or pass --profile FILE (${file} not found)`,
    );
  }
  const profile = ProfileSchema.safeParse(JSON.parse(await readFile(file, 'utf8')));
  if (!profile.success) {
    const problems = profile.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new UsageError(`${file} is not a profile: ${problems.join('; ')}`);
  }
  const { baseUrl, accessKey, secretKey } = profile.data;
  return { baseUrl: env.API_URL ?? baseUrl ?? fallbackUrl, accessKey, secretKey };
}

async function readBody(bodyFile: string | undefined): Promise<Buffer | undefined> {
  if (bodyFile === undefined) return undefined;
  if (bodyFile !== '-') return readFile(bodyFile);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function report(response: RawAnswer): void {
  const svcStatus = response.headers.get('svc-status') ?? '(none)';
  process.stderr.write(`HTTP ${response.httpStatus} ${STATUS_CODES[response.httpStatus] ?? ''}\n`);
  process.stderr.write(`Svc-Status: ${svcStatus}\nSvc-RequestId: ${response.requestId}\n`);
  const { body } = response;
  const text = typeof body === 'string' ? body : JSON.stringify(body, null, 2);
  if (text) process.stdout.write(`${text}\n`);
}

async function main(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  try {
    const invocation = parseInvocation(argv);
    const env = EnvSchema.parse(withoutBlanks(process.env));
    // One request, sent once: what it answered is what call prints (the package's retries are for programs).
    const client = new OrdersClient({ ...(await resolveTarget(env, invocation.profile)), maxRetries: 0 });
    const body = await readBody(invocation.bodyFile);
    const response = await client.request(invocation.method, invocation.path, body, {
      requestId: invocation.requestId,
      headers: invocation.headers,
    });
    report(response);
    return response.httpStatus >= 200 && response.httpStatus < 300 ? 0 : 1;
  } catch (error) {
    return fail(error);
  }
}

function fail(error: unknown): number {
  const usage = error instanceof UsageError || isParseArgsError(error) || error instanceof z.ZodError;
  const message = error instanceof z.ZodError ? z.prettifyError(error) : describe(error);
  process.stderr.write(`call: ${message}\n${usage ? `\n${USAGE}\n` : ''}`);
  return usage ? 2 : 1;
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // The package's message already names the cause ("no answer: fetch failed: connect ECONNREFUSED …").
  if (error instanceof OrderApiError) return error.message;
  // fetch reports an unreachable service as "fetch failed" with the reason in `cause`.
  const cause = (error as { cause?: unknown }).cause;
  return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message;
}

function isParseArgsError(error: unknown): boolean {
  return error instanceof Error && String((error as { code?: unknown }).code).startsWith('ERR_PARSE_ARGS_');
}

process.exitCode = await main(process.argv.slice(2));
