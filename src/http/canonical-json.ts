/**
 * JSON text of a parsed value with the keys of every object sorted: the same content gives the same text
 * whatever the order of its keys or its spacing, so a batch entry sent again is recognised as the same request.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const object = value as Record<string, unknown>;
    const members = Object.keys(object)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(object[key])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}
