import fs from 'node:fs';
import { aptInstall } from '../../scripts/postgres.js';

/** Debian's libfaketime: LD_PRELOADed, it shifts a process's clock (test/integration/clock-skew.test.ts). */
export const FAKETIME_LIB = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

/**
 * Installs Debian's `faketime` package when libfaketime is missing and we may (root with apt-get), as the global
 * setup does for Redis and PostgreSQL; false when it is still missing (the clock tests then say so and skip).
 */
export function ensureFaketime(): boolean {
  if (fs.existsSync(FAKETIME_LIB)) return true;
  try {
    aptInstall('faketime', 'libfaketime');
  } catch (err) {
    process.stderr.write(`faketime could not be installed: ${(err as Error).message}\n`);
  }
  return fs.existsSync(FAKETIME_LIB);
}
