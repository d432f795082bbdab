import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { STATUS_CODES } from 'node:http';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { OrderApiError, OrdersClient, type RawAnswer } from '../../client/src/index.js';
import path from 'node:path';
import { PROJECT_ROOT, readRuntimeFile } from './runtime-file.js';

const DEFAULT_PROFILE = path.join(PROJECT_ROOT, 'data', 'demo-client.json');
const RUNTIME_NOTE = 'data/runtime.json';

const USAGE = `usage: npm run --silent call -- [options] METHOD PATH [BODYFILE]
  Sends one signed request and prints the JSON body on stdout, the status on stderr.
  PATH starts at the service root, e.g. /v1/orders?limit=5; BODYFILE - reads the body from stdin.
options:
  --profile FILE       JSON with accessKey, secretKey and optionally baseUrl
  --request-id ID      Svc-RequestId to send (default: a fresh UUID); reuse it to retry a POST
  --header 'N: V'      an extra header, repeatable
  --async              ask for Prefer: respond-async
credentials: --profile, else ACCESS_KEY and SECRET_KEY, else the profile of the running npm start
  (${RUNTIME_NOTE}), else data/demo-client.json when it exists.
service: API_URL, else the baseUrl of a profile that names one, else http://127.0.0.1:$PORT, else the running
  npm start's address, else http://127.0.0.1:3000. Where it differs from the profile's own baseUrl, or from the
  running npm start, call says so on stderr before it sends anything.`;

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
 * (data/runtime.json), else the demo profile when it exists. The address: API_URL, else the profile's baseUrl,
 * else PORT's, else the running service's, else 3000; `notes` says where that is not what the profile or the
 * running service would have it, since a signed request and its card token go wherever it points.
 */
async function resolveTarget(
  env: Env,
  profilePath: string | undefined,
): Promise<{ target: Target; notes: string[] }> {
  const runtime = readRuntimeFile();
  // A variable set wins over the running service, as it does for admin; awayFromRunning then says so.
  const fallback = env.PORT
    ? { url: `http://127.0.0.1:${env.PORT}`, from: 'PORT' }
    : runtime
      ? { url: runtime.apiUrl, from: `the running npm start (${RUNTIME_NOTE})` }
      : { url: 'http://127.0.0.1:3000', from: 'the default' };
  if (profilePath === undefined && (env.ACCESS_KEY || env.SECRET_KEY)) {
    if (!env.ACCESS_KEY || !env.SECRET_KEY)
      throw new UsageError('set both ACCESS_KEY and SECRET_KEY, or neither');
    const baseUrl = env.API_URL ?? fallback.url;
    return {
      target: { baseUrl, accessKey: env.ACCESS_KEY, secretKey: env.SECRET_KEY },
      notes: awayFromRunning(baseUrl, runtime?.apiUrl, env.API_URL ? 'API_URL' : fallback.from),
    };
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
  const { baseUrl: named, accessKey, secretKey } = profile.data;
  const baseUrl = env.API_URL ?? named ?? fallback.url;
  const from = env.API_URL ? 'API_URL' : named ? `the baseUrl of ${file}` : fallback.from;
  const notes =
    named && !sameOrigin(named, baseUrl)
      ? [`sending to ${origin(baseUrl)} (${from}), not to ${origin(named)} that ${file} names`]
      : awayFromRunning(baseUrl, runtime?.apiUrl, from);
  return { target: { baseUrl, accessKey, secretKey }, notes };
}

/** A note when the request goes elsewhere than the running `npm start`. */
function awayFromRunning(baseUrl: string, running: string | undefined, from: string): string[] {
  if (!running || sameOrigin(baseUrl, running)) return [];
  return [`sending to ${origin(baseUrl)} (${from}), not to the running npm start at ${origin(running)}`];
}

const origin = (url: string): string => new URL(url).origin;
const sameOrigin = (a: string, b: string): boolean => origin(a) === origin(b);

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
    const { target, notes } = await resolveTarget(env, invocation.profile);
    for (const note of notes) process.stderr.write(`call: ${note}\n`);
    // One request, sent once: what it answered is what call prints (the package's retries are for programs).
    const client = new OrdersClient({ ...target, maxRetries: 0 });
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
