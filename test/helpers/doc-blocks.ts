// The shell blocks of the docs, for the tests that run them as printed (test/start/readme-walk.test.ts,
// test/start/docs-walk.test.ts), and the links between the docs.
import fs from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '../..');

/** Every doc a reader is sent to: the README, docs/*.md, the client package's README and BENCHMARKS.md. */
export function docFiles(): string[] {
  const docs = fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs, 'client/README.md', 'BENCHMARKS.md'];
}

export function readDoc(file: string): string {
  return fs.readFileSync(path.join(ROOT, file), 'utf8');
}

/**
 * The sections whose `sh` blocks test/start/readme-walk.test.ts runs line by line against one `npm start`, in
 * walking order: each file with the `## ` heading of its section.
 */
export const WALKED_SECTIONS: readonly (readonly [file: string, heading: string])[] = [
  ['README.md', 'Trying it'],
  ['docs/operating.md', 'The admin CLI'],
];

export interface ShellBlock {
  file: string;
  /** The `## ` heading the block is under ('' before the first). */
  section: string;
  lines: string[];
  /** How the block is named in the tests: `file: its first line`. */
  key: string;
}

/** The shell blocks (```sh, ```bash, ```shell) of a doc, in order. */
export function shellBlocks(file: string): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  let section = '';
  // Inside a fence: the lines of a shell block, or null for another block (a `## ` there is no heading).
  let fence: string[] | null | undefined;
  for (const line of readDoc(file).split('\n')) {
    if (fence !== undefined) {
      if (!line.startsWith('```')) fence?.push(line);
      else {
        if (fence) blocks.push({ file, section, lines: fence, key: `${file}: ${fence[0] ?? ''}` });
        fence = undefined;
      }
    } else if (/^```(sh|bash|shell)\s*$/.test(line)) fence = [];
    else if (line.startsWith('```')) fence = null;
    else if (line.startsWith('## ')) section = line.slice(3);
  }
  return blocks;
}

/** The `sh` blocks of one `## heading` section of a doc, each as its lines. */
export function sectionBlocks(file: string, heading: string): string[][] {
  const blocks = shellBlocks(file).filter((block) => block.section === heading);
  if (!readDoc(file).includes(`\n## ${heading}\n`)) throw new Error(`${file} has no "${heading}" section`);
  return blocks.map((block) => block.lines.filter((line) => line.trim() !== ''));
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a doc's headings. */
export function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of readDoc(file).split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    else if (!fenced && /^#{1,6} /.test(line)) anchors.add(anchorOf(line.replace(/^#+ /, '')));
  }
  return anchors;
}
