import { whenReady } from '../../redis/redis-lock.js';
import { redisWhere } from '../../redis/redis-sentinel.js';
import { withDeps } from '../../processes/assemble.js';
import { runReconcilePass } from '../../services/reconcile.js';
import { CliError, isoTimeOption, parseCommandArgs, type CommandRun } from './command.js';
import { commandLogger } from './item.commands.js';

const REDIS_WAIT_MS = 5_000;
// A clock's pass takes well under a second; waiting this long for one means something is stuck.
const LOCK_WAIT_MS = 15_000;

export const reconcile: CommandRun = {
  async run(args, { config }) {
    const { values } = parseCommandArgs(args, { now: { type: 'string' } });
    const now = values.now === undefined ? undefined : isoTimeOption(values.now, 'now');
    const logger = commandLogger(config);
    return withDeps('admin', config, logger, async (deps) => {
      await whenReady(deps.redis, REDIS_WAIT_MS).catch((err: Error) => {
        throw CliError.invalid(`redis at ${redisWhere(config)} is unavailable: ${err.message}`);
      });
      const pass = await runReconcilePass(deps, { now, waitMs: LOCK_WAIT_MS });
      if (!pass.ran) throw CliError.invalid(`no pass ran: ${pass.reason}; try again later`);
      return pass.counts;
    });
  },
};
