import fs from 'node:fs';

/** Replaces (or appends) the `## title` section of BENCHMARKS.md, leaving the others as they are. */
export function replaceSection(file: string, title: string, body: string): void {
  const current = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '# Benchmarks\n';
  const heading = `## ${title}`;
  const start = current.indexOf(`${heading}\n`);
  const text = `${heading}\n\n${body.trim()}\n`;
  if (start === -1) {
    fs.writeFileSync(file, `${current.trimEnd()}\n\n${text}`);
    return;
  }
  const next = current.indexOf('\n## ', start + heading.length);
  const end = next === -1 ? current.length : next + 1;
  fs.writeFileSync(file, `${current.slice(0, start)}${text}${next === -1 ? '' : '\n'}${current.slice(end)}`);
}
