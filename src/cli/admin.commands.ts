// Every operator command by name, with its usage: a command's module (under commands/) is loaded only when that
// command runs, so `help` and a usage error load none of them (nor the service they use). A new command is
// one module under commands/ and one entry here.
import type { Command, CommandRun } from './commands/command.js';

/** A command whose module is imported on its first run. */
function lazy(load: () => Promise<CommandRun>): Command['run'] {
  return async (args, ctx) => (await load()).run(args, ctx);
}

export const ADMIN_COMMANDS: Record<string, Command> = {
  'client:create': {
    usage: '--name NAME',
    summary: 'create an API client; prints its access key and secret key',
    run: lazy(async () => (await import('./commands/client.commands.js')).clientCreate),
  },
  'client:disable': {
    usage: '--access-key KEY',
    summary: 'disable a client: its requests are refused with 4015 from then on',
    run: lazy(async () => (await import('./commands/client.commands.js')).clientDisable),
  },
  'card:add': {
    usage: '--access-key KEY [--decline]',
    summary: 'add a sandbox card to a client; --decline makes every authorisation on it fail',
    run: lazy(async () => (await import('./commands/client.commands.js')).cardAdd),
  },
  'catalog:import': {
    usage: 'FILE',
    summary:
      'upsert vendors and listings from a catalog JSON file (- reads stdin); a bad file imports nothing',
    run: lazy(async () => (await import('./commands/catalog.commands.js')).catalogImport),
  },
  'vendor:deactivate': {
    usage: '--vendor ID',
    summary: "deactivate a vendor: its listings' items become 54 (INACTIVE_SELLER)",
    run: lazy(async () => (await import('./commands/catalog.commands.js')).vendorDeactivate),
  },
  'item:update': {
    usage: '--order-item ID --status CODE [--company C --tracking T] [--extra-shipping AMOUNT]',
    summary:
      'move an item as docs/api.md#item-statuses-and-moves allows: 35 takes --company/--tracking, 93 needs --extra-shipping',
    run: lazy(async () => (await import('./commands/item.commands.js')).itemUpdate),
  },
  reconcile: {
    usage: '[--now ISO]',
    needsRedis: true,
    summary:
      'run one reconciliation pass (after any pass already running); --now measures deadlines from that time',
    run: lazy(async () => (await import('./commands/reconcile.commands.js')).reconcile),
  },
  migrate: {
    usage: '[--batch-size N] [--max-batches N]',
    summary:
      "apply the store's migrations, then run their heavy steps N orders a transaction (default 1000), resumable, " +
      'while the service serves; prints what it did and what remains (see docs/operating.md, Releases side by side)',
    run: lazy(async () => (await import('./commands/migrate.commands.js')).migrate),
  },
  'secrets:rotate': {
    usage: '--new-key-file FILE | [--batch-size N]',
    summary:
      'with --new-key-file, re-seal every secret key under the SECRETS_KEY in FILE in one transaction, then ' +
      'restart every process with it; without, re-seal what SECRETS_KEY_PREVIOUS still seals under SECRETS_KEY, ' +
      'N clients (default 500) a transaction, while processes on either key serve (see docs/operating.md, Keys and secrets)',
    run: lazy(async () => (await import('./commands/secrets.commands.js')).secretsRotate),
  },
  'webhook:add': {
    usage: '--access-key KEY --url URL',
    summary:
      "register a webhook for a client's order events; prints its secret, the key of its signatures. " +
      'The URL must be http(s) and, unless WEBHOOK_ALLOW_PRIVATE=true, reach public addresses only',
    run: lazy(async () => (await import('./commands/webhook.commands.js')).webhookAdd),
  },
  'webhook:list': {
    usage: '--access-key KEY',
    summary: "list a client's webhooks, removed ones included; failing: a delivery was given up on lately",
    run: lazy(async () => (await import('./commands/webhook.commands.js')).webhookList),
  },
  'webhook:remove': {
    usage: '--webhook ID',
    summary:
      'remove a webhook: nothing more is sent to it once this answers (an attempt already claimed may take up ' +
      'to 5 s to start or give up), deliveries still pending are dropped',
    run: lazy(async () => (await import('./commands/webhook.commands.js')).webhookRemove),
  },
  'webhook:replay': {
    usage: '--webhook ID --since ISO',
    summary: "send every event of the webhook's client recorded since then to it again",
    run: lazy(async () => (await import('./commands/webhook.commands.js')).webhookReplay),
  },
};
