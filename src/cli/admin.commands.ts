import { catalogImport, vendorDeactivate } from './commands/catalog.commands.js';
import { cardAdd, clientCreate, clientDisable } from './commands/client.commands.js';
import type { Command } from './commands/command.js';
import { itemUpdate } from './commands/item.commands.js';
import { reconcile } from './commands/reconcile.commands.js';
import { secretsRotate } from './commands/secrets.commands.js';
import { webhookAdd, webhookList, webhookRemove, webhookReplay } from './commands/webhook.commands.js';

/** Every operator command by name; a new command is one module under commands/ and one entry here. */
export const ADMIN_COMMANDS: Record<string, Command> = {
  'client:create': clientCreate,
  'client:disable': clientDisable,
  'card:add': cardAdd,
  'catalog:import': catalogImport,
  'vendor:deactivate': vendorDeactivate,
  'item:update': itemUpdate,
  reconcile,
  'secrets:rotate': secretsRotate,
  'webhook:add': webhookAdd,
  'webhook:list': webhookList,
  'webhook:remove': webhookRemove,
  'webhook:replay': webhookReplay,
};
