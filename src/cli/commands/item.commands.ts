import { pino } from 'pino';
import type { Config } from '../../config/config.js';
import { fromCents, parseScaledDecimal } from '../../domain/money.js';
import type { Logger } from '../../logger.js';
import { createSandboxGateway } from '../../payments/sandbox.gateway.js';
import { isoMs } from '../../services/order-view.js';
import { moveItem, type MoveItemRequest } from '../../services/item-lifecycle.js';
import type { StoredItem } from '../../store/port/store.port.js';
import { CliError, parseCommandArgs, positiveIntOption, requiredOption, type CommandRun } from './command.js';

export const itemUpdate: CommandRun = {
  async run(args, ctx) {
    const request = parseItemUpdate(args);
    const store = await ctx.store();
    const deps = {
      store,
      payments: createSandboxGateway(store),
      clock: Date.now,
      logger: commandLogger(ctx.config),
    };
    const outcome = await moveItem(deps, request);
    switch (outcome.kind) {
      case 'moved':
        return toItemSummary(outcome.item);
      case 'invalid':
        throw CliError.usage(outcome.message);
      case 'missing':
      case 'refused':
        throw CliError.invalid(outcome.message);
      case 'unexpected':
        throw new Error('a move without expectations reported an unexpected status');
    }
  },
};

function parseItemUpdate(args: string[]): MoveItemRequest {
  const { values } = parseCommandArgs(args, {
    'order-item': { type: 'string' },
    status: { type: 'string' },
    company: { type: 'string' },
    tracking: { type: 'string' },
    'extra-shipping': { type: 'string' },
  });
  const extra = values['extra-shipping'];
  return {
    orderItemId: positiveIntOption(requiredOption(values['order-item'], 'order-item'), 'order-item'),
    to: statusOption(requiredOption(values.status, 'status')),
    ...(values.company !== undefined ? { shippingCompany: requiredOption(values.company, 'company') } : {}),
    ...(values.tracking !== undefined ? { trackingId: requiredOption(values.tracking, 'tracking') } : {}),
    ...(extra !== undefined ? { extraShippingCents: amountOption(extra, 'extra-shipping') } : {}),
  };
}

function statusOption(value: string): number {
  if (!/^\d{1,3}$/.test(value)) throw CliError.usage(`--status must be a status code, got '${value}'`);
  return Number(value);
}

/** A positive amount with at most two decimals, in the order's currency, as cents. */
function amountOption(value: string, name: string): number {
  const cents = /^\d+(\.\d+)?$/.test(value) ? parseScaledDecimal(value, 2) : null;
  if (cents === null || cents <= 0n || cents > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw CliError.usage(
      `--${name} must be an amount greater than 0 with at most two decimals, got '${value}'`,
    );
  }
  return Number(cents);
}

/** The item as OrderItemSummary shows it, with its shipping details when the seller gave them. */
export function toItemSummary(item: StoredItem) {
  return {
    orderItemId: item.orderItemId,
    cost: fromCents(item.costCents),
    shipcost: fromCents(item.shipcostCents),
    status: item.status,
    itemUpdateDate: isoMs(item.updatedAt),
    ...(item.shippingCompany !== null ? { shippingCompany: item.shippingCompany } : {}),
    ...(item.trackingId !== null ? { shippingTrackingId: item.trackingId } : {}),
  };
}

/** Logs on stderr, synchronously: stdout carries only the command's JSON, and the process exits right after. */
export function commandLogger(config: Pick<Config, 'LOG_LEVEL'>): Logger {
  // The default level of servers would print a line per move; an operator wants the result and the warnings.
  const level = config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL;
  return pino({ name: 'admin', level }, pino.destination({ dest: 2, sync: true }));
}
