import { readFile } from 'node:fs/promises';
import { importCatalogFile } from '../../services/catalog-import.js';
import { CliError, parseCommandArgs, positiveIntOption, requiredOption, type CommandRun } from './command.js';

export const catalogImport: CommandRun = {
  async run(args, ctx) {
    const { positionals } = parseCommandArgs(args, {}, ['FILE']);
    const file = positionals[0]!;
    const json = parseJson(await readText(file), file);
    const result = await importCatalogFile((await ctx.store()).catalog, json);
    if (!result.ok) {
      const count = result.problems.length === 1 ? '1 problem' : `${result.problems.length} problems`;
      throw CliError.invalid(`${file}: ${count}, nothing imported\n  ${result.problems.join('\n  ')}`);
    }
    return { vendors: result.vendors.length, listings: result.listings.length };
  },
};

export const vendorDeactivate: CommandRun = {
  async run(args, ctx) {
    const { values } = parseCommandArgs(args, { vendor: { type: 'string' } });
    const vendorId = positiveIntOption(requiredOption(values.vendor, 'vendor'), 'vendor');
    if (!(await (await ctx.store()).catalog.deactivateVendor(vendorId))) {
      throw CliError.invalid(`no vendor ${vendorId}`);
    }
    return { vendorId, active: false };
  },
};

async function readText(file: string): Promise<string> {
  try {
    return file === '-' ? await readStdin() : await readFile(file, 'utf8');
  } catch (error) {
    throw CliError.invalid(`cannot read ${file}: ${(error as Error).message}`);
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw CliError.invalid(`${file} is not valid JSON: ${(error as Error).message}`);
  }
}
