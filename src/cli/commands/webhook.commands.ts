import { addWebhook, removeWebhook, replayWebhook } from '../../services/webhooks.js';
import type { ClientStore, Webhook } from '../../store/port/store.port.js';
import {
  CliError,
  isoTimeOption,
  parseCommandArgs,
  positiveIntOption,
  requiredOption,
  type CommandRun,
} from './command.js';
import { expiresInOption } from './client.commands.js';

export const webhookAdd: CommandRun = {
  async run(args, ctx) {
    const { values } = parseCommandArgs(args, { 'access-key': { type: 'string' }, url: { type: 'string' } });
    const accessKey = requiredOption(values['access-key'], 'access-key');
    const url = requiredOption(values.url, 'url');
    const store = await ctx.store();
    const client = await clientOf(store.clients, accessKey);
    // A disabled client cannot order, so a webhook for it is almost certainly a mix-up of keys.
    if (client.disabled) throw CliError.invalid(`client with access key ${accessKey} is disabled`);
    const deps = { store, allowPrivate: ctx.config.WEBHOOK_ALLOW_PRIVATE, clock: Date.now };
    const outcome = await addWebhook(deps, client.clientId, url);
    if (outcome.kind === 'refused') throw CliError.invalid(`--url refused: ${outcome.message}`);
    const { webhookId, url: stored, secret } = outcome.webhook;
    return { webhookId, url: stored, secret };
  },
};

export const webhookList: CommandRun = {
  async run(args, ctx) {
    const { values } = parseCommandArgs(args, { 'access-key': { type: 'string' } });
    const store = await ctx.store();
    const client = await clientOf(store.clients, requiredOption(values['access-key'], 'access-key'));
    return (await store.webhooks.list(client.clientId)).map(summary);
  },
};

export const webhookRemove: CommandRun = {
  async run(args, ctx) {
    const { values } = parseCommandArgs(args, { webhook: { type: 'string' } });
    const webhookId = positiveIntOption(requiredOption(values.webhook, 'webhook'), 'webhook');
    const removed = await removeWebhook({ store: await ctx.store(), clock: Date.now }, webhookId);
    if (!removed) throw CliError.invalid(`no webhook ${webhookId}`);
    return { webhookId, active: false };
  },
};

export const webhookRollSecret: CommandRun = {
  async run(args, ctx) {
    const { values } = parseCommandArgs(args, {
      webhook: { type: 'string' },
      'expires-in': { type: 'string' },
    });
    const webhookId = positiveIntOption(requiredOption(values.webhook, 'webhook'), 'webhook');
    const overlapMs = expiresInOption(values['expires-in']);
    const rolled = await (await ctx.store()).webhooks.rollSecret(webhookId, Date.now() + overlapMs);
    if (!rolled) throw CliError.invalid(`no webhook ${webhookId}`);
    const previousExpiresAt = new Date(rolled.previousExpiresAt).toISOString();
    return { webhookId, secret: rolled.secret, previousExpiresAt };
  },
};

export const webhookReplay: CommandRun = {
  async run(args, ctx) {
    const { values } = parseCommandArgs(args, { webhook: { type: 'string' }, since: { type: 'string' } });
    const webhookId = positiveIntOption(requiredOption(values.webhook, 'webhook'), 'webhook');
    const since = isoTimeOption(requiredOption(values.since, 'since'), 'since');
    const outcome = await replayWebhook({ store: await ctx.store(), clock: Date.now }, webhookId, since);
    if (outcome.kind === 'missing') throw CliError.invalid(`no webhook ${webhookId}`);
    if (outcome.kind === 'removed') throw CliError.invalid(`webhook ${webhookId} is removed`);
    return { replayed: outcome.count };
  },
};

const summary = ({ webhookId, url, active, failing }: Webhook) => ({ webhookId, url, active, failing });

async function clientOf(clients: ClientStore, accessKey: string) {
  const client = await clients.findByAccessKey(accessKey);
  if (!client) throw CliError.invalid(`no client with access key ${accessKey}`);
  return client;
}
