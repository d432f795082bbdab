/** The query string exactly as sent: repeated names and unknown ones survive, unlike req.query. */
export function rawQueryOf(req: { originalUrl: string }): string {
  const mark = req.originalUrl.indexOf('?');
  return mark === -1 ? '' : req.originalUrl.slice(mark + 1);
}
