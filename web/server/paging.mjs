// Paginated class lists (results, traces): `?limit=N&cursor=C`. A page holds at most
// PAGE_MAX rows, in (created_at, id) order; the answer's `next_cursor` is null on the last
// page, else the value to send as `cursor` for the next one. The cursor is opaque to
// clients: the last row's created_at and id, base64url-encoded. Keyset pagination: a row
// uploaded while a client pages through is neither skipped nor listed twice.

export const PAGE_MAX = 500;
const ID_RE = /^[A-Za-z0-9_-]{1,32}$/;
const TIME_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

export class PageError extends Error {
  constructor(message) { super(message); this.statusCode = 400; }
}

/** The cursor after `row` ({created_at, id}). */
export const encodeCursor = (row) => Buffer.from(`${row.created_at}\n${row.id}`, 'utf8').toString('base64url');

/** {created_at, id} from a cursor, or throws a PageError (400). */
export function decodeCursor(raw) {
  if (typeof raw !== 'string' || raw.length > 120 || !/^[A-Za-z0-9_-]+$/.test(raw)) throw new PageError('cursor: send the next_cursor of the previous page as it was');
  const [createdAt, id, extra] = Buffer.from(raw, 'base64url').toString('utf8').split('\n');
  if (extra !== undefined || !TIME_RE.test(createdAt ?? '') || !ID_RE.test(id ?? '')) throw new PageError('cursor: send the next_cursor of the previous page as it was');
  return { created_at: createdAt, id };
}

/**
 * The page a request asks for: { limit, after } from its query (limit 1..PAGE_MAX, default
 * `dflt`; after: null for the first page). One value each: a repeated parameter is refused.
 */
export function pageParams(query, dflt = PAGE_MAX) {
  const q = query ?? {};
  let limit = dflt;
  if (q.limit !== undefined) {
    if (typeof q.limit !== 'string' || !/^\d{1,6}$/.test(q.limit) || Number(q.limit) < 1 || Number(q.limit) > PAGE_MAX) throw new PageError(`limit: a whole number from 1 to ${PAGE_MAX}`);
    limit = Number(q.limit);
  }
  const after = q.cursor === undefined || q.cursor === '' ? null : decodeCursor(q.cursor);
  return { limit, after };
}

/**
 * Applies (created_at, id) > after and the limit (+1, to know whether a page follows) to a
 * Kysely select; `pageOf` then cuts the rows and gives the next cursor.
 */
export function keyset(query, { limit, after }) {
  let q = query.orderBy('created_at').orderBy('id').limit(limit + 1);
  if (after) q = q.where((eb) => eb.or([eb('created_at', '>', after.created_at), eb.and([eb('created_at', '=', after.created_at), eb('id', '>', after.id)])]));
  return q;
}

/** { rows, next_cursor } from the rows a keyset query returned (at most limit + 1). */
export function pageOf(rows, { limit }) {
  if (rows.length <= limit) return { rows, next_cursor: null };
  const page = rows.slice(0, limit);
  return { rows: page, next_cursor: encodeCursor(page[page.length - 1]) };
}
