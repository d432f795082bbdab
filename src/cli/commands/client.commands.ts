import {
  addCard,
  createClient,
  rollClientSecret,
  ROLL_OVERLAP_DEFAULT_MS,
  ROLL_OVERLAP_MAX_MS,
} from '../../services/client-keys.js';
import { CliError, durationOption, parseCommandArgs, requiredOption, type CommandRun } from './command.js';

const NAME_MAX = 200;

export const clientCreate: CommandRun = {
  async run(args, ctx) {
    const { values } = parseCommandArgs(args, { name: { type: 'string' } });
    const name = requiredOption(values.name, 'name');
    if (name.length > NAME_MAX) throw CliError.usage(`--name must be at most ${NAME_MAX} characters`);
    const client = await createClient((await ctx.store()).clients, name, Date.now());
    return { clientId: client.clientId, accessKey: client.accessKey, secretKey: client.secretKey };
  },
};

/** `client:disable` or `client:enable`: the client as it then stands. */
const switchClient = (disabled: boolean): CommandRun => ({
  async run(args, ctx) {
    const { values } = parseCommandArgs(args, { 'access-key': { type: 'string' } });
    const accessKey = requiredOption(values['access-key'], 'access-key');
    const { clients } = await ctx.store();
    const client = disabled ? await clients.disable(accessKey) : await clients.enable(accessKey);
    if (!client) throw unknownKey(accessKey);
    return { accessKey: client.accessKey, disabled };
  },
});

export const clientDisable = switchClient(true);
export const clientEnable = switchClient(false);

export const clientRollSecret: CommandRun = {
  async run(args, ctx) {
    const { values } = parseCommandArgs(args, {
      'access-key': { type: 'string' },
      'expires-in': { type: 'string' },
    });
    const accessKey = requiredOption(values['access-key'], 'access-key');
    const overlapMs = expiresInOption(values['expires-in']);
    const { clients } = await ctx.store();
    const client = await rollClientSecret(clients, accessKey, overlapMs, Date.now());
    if (!client) throw unknownKey(accessKey);
    const previousExpiresAt = new Date(client.previous?.expiresAt ?? Date.now()).toISOString();
    return { accessKey: client.accessKey, secretKey: client.secretKey, previousExpiresAt };
  },
};

export const cardAdd: CommandRun = {
  async run(args, ctx) {
    const { values } = parseCommandArgs(args, {
      'access-key': { type: 'string' },
      decline: { type: 'boolean', default: false },
    });
    const accessKey = requiredOption(values['access-key'], 'access-key');
    const { clients } = await ctx.store();
    const client = await clients.findByAccessKey(accessKey);
    if (!client) throw unknownKey(accessKey);
    // A disabled client cannot order, so a card for it is almost certainly a mix-up of keys.
    if (client.disabled) throw CliError.invalid(`client with access key ${accessKey} is disabled`);
    const card = await addCard(clients, client.clientId, values.decline === true, Date.now());
    return { ccToken: card.token };
  },
};

/** How long a rolled-away secret is still good for: --expires-in, by default and at most as the docs say. */
export function expiresInOption(value: string | undefined): number {
  if (value === undefined) return ROLL_OVERLAP_DEFAULT_MS;
  return durationOption(value, 'expires-in', ROLL_OVERLAP_MAX_MS);
}

function unknownKey(accessKey: string): CliError {
  return CliError.invalid(`no client with access key ${accessKey}`);
}
