import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import type { Queue } from 'bullmq';
import type { Express, RequestHandler } from 'express';
import { clientAddressOf, type Lockout } from '../redis/lockout.js';

export const DASHBOARD_PATH = '/admin/queues';

export interface DashboardOptions {
  queues: Queue[];
  user: string | undefined;
  password: string | undefined;
  /** Wrong credentials counted per client address (DASHBOARD_LOCKOUT). */
  lockout: Lockout;
  clock: () => number;
}

export interface BasicAuthOptions {
  user: string;
  password: string;
  realm: string;
  lockout: Lockout;
  clock: () => number;
}

const digest = (value: string) => crypto.createHash('sha256').update(value, 'utf8').digest();

/**
 * HTTP basic auth against one user; digests make the constant-time comparison independent of lengths. Wrong
 * credentials count against the client's address (a request without any, a browser's first, does not): past the
 * lockout's limit that address is answered 429 with Retry-After, right password or not, until the lock ends.
 */
export function basicAuth({ user, password, realm, lockout, clock }: BasicAuthOptions): RequestHandler {
  const expectedUser = digest(user);
  const expectedPassword = digest(password);
  return async (req, res, next) => {
    const address = clientAddressOf(req);
    const lockedMs = await lockout.lockedForMs(address, clock());
    if (lockedMs > 0) {
      res
        .status(429)
        .set('Retry-After', String(Math.ceil(lockedMs / 1000)))
        .type('text/plain')
        .send('too many failed sign-ins from this address; retry later\n');
      return;
    }
    const authorization = req.get('authorization');
    const [scheme, encoded = ''] = (authorization ?? '').split(' ');
    const decoded = Buffer.from(encoded, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const userOk = crypto.timingSafeEqual(digest(decoded.slice(0, Math.max(colon, 0))), expectedUser);
    const passwordOk = crypto.timingSafeEqual(digest(decoded.slice(colon + 1)), expectedPassword);
    if (scheme?.toLowerCase() === 'basic' && colon >= 0 && userOk && passwordOk) return next();
    if (authorization !== undefined) {
      const locked = await lockout.recordFailure(address, clock());
      req.log.info({ address, locked }, 'dashboard sign-in failed');
    }
    res
      .status(401)
      .set('WWW-Authenticate', `Basic realm="${realm}", charset="UTF-8"`)
      .type('text/plain')
      .send('authentication required\n');
  };
}

/**
 * Mounts bull-board for operators under /admin/queues behind basic auth; nothing is mounted (the path stays
 * 4042) unless ADMIN_USER and ADMIN_PASSWORD are both set. Operators can retry failed jobs there: every
 * order job is safe to run twice, and a removed job's order is enqueued again by reconciliation.
 */
export function mountQueueDashboard(app: Express, options: DashboardOptions): boolean {
  const { queues, user, password, lockout, clock } = options;
  if (!user || !password) return false;
  // Loaded only when mounted: bull-board and its UI cost every web process memory it would not use.
  const require = createRequire(import.meta.url);
  const { createBullBoard } = require('@bull-board/api') as typeof import('@bull-board/api');
  const { BullMQAdapter } =
    require('@bull-board/api/bullMQAdapter') as typeof import('@bull-board/api/bullMQAdapter');
  const { ExpressAdapter } = require('@bull-board/express') as typeof import('@bull-board/express');
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(DASHBOARD_PATH);
  createBullBoard({
    queues: queues.map((queue) => new BullMQAdapter(queue)),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Book orders' } },
  });
  const auth = basicAuth({ user, password, realm: 'queues', lockout, clock });
  app.use(DASHBOARD_PATH, auth, serverAdapter.getRouter());
  return true;
}
