import { pino, type Logger } from 'pino';
import type { Config } from './config.js';

export type { Logger };

/** The one pino root of a process; secrets are redacted wherever they appear. */
export function createLogger(config: Pick<Config, 'LOG_LEVEL' | 'LOG_PRETTY'>, name: string): Logger {
  const pretty = config.LOG_PRETTY === 'true' || (config.LOG_PRETTY === 'auto' && process.stdout.isTTY);
  return pino({
    name,
    level: config.LOG_LEVEL,
    redact: {
      paths: [
        'secretKey',
        '*.secretKey',
        'ccToken',
        '*.ccToken',
        'req.headers["svc-signature"]',
        'headers["svc-signature"]',
      ],
      censor: '[redacted]',
    },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { colorize: true } } } : {}),
  });
}
