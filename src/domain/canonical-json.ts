/**
 * JSON text of a parsed value with the keys of every object sorted: the same content gives the same text
 * whatever the order of its keys or its spacing, so a batch entry sent again is recognised as the same request.
 */
export function canonicalJson(value: unknown): string {
  return write(value, '');
}

// Appends to one string (V8 joins the pieces lazily) rather than building an array per object.
function write(value: unknown, out: string): string {
  if (value === null || typeof value !== 'object') return out + JSON.stringify(value);
  if (Array.isArray(value)) {
    out += '[';
    for (let i = 0; i < value.length; i++) out = write(value[i], i ? `${out},` : out);
    return `${out}]`;
  }
  const object = value as Record<string, unknown>;
  out += '{';
  let first = true;
  for (const key of Object.keys(object).sort()) {
    out = write(object[key], `${out}${first ? '' : ','}${JSON.stringify(key)}:`);
    first = false;
  }
  return `${out}}`;
}
