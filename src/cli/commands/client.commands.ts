import { addCard, createClient } from '../../services/client-keys.js';
import { CliError, parseCommandArgs, requiredOption, type CommandRun } from './command.js';

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

export const clientDisable: CommandRun = {
  async run(args, ctx) {
    const { values } = parseCommandArgs(args, { 'access-key': { type: 'string' } });
    const accessKey = requiredOption(values['access-key'], 'access-key');
    const client = await (await ctx.store()).clients.disable(accessKey);
    if (!client) throw unknownKey(accessKey);
    return { accessKey: client.accessKey, disabled: true };
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

function unknownKey(accessKey: string): CliError {
  return CliError.invalid(`no client with access key ${accessKey}`);
}
