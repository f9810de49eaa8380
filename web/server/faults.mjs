// Which database errors mean "the database is away or full for now" (the request was not
// stored; the client should try again: 503 with Retry-After) rather than a bug (500).
// PostgreSQL: connection errors from pg and the network, SQLSTATE classes 08 (connection),
// 53 (insufficient resources: disk full, too many connections), 57P01-57P03 (shutdown,
// crash, starting up), 40001/40P01 (serialization failure, deadlock), and 57014/55P03 (a
// statement or lock wait cancelled by the server's statement_timeout or lock_timeout; see
// db.mjs), with pg's own "Query read timeout" and "timeout expired" (no answer to a query,
// or to a new connection, in time). SQLite: a full disk (or the VMEMLAB_SQLITE_MAX_MB cap),
// a busy lock, an I/O error, a read-only file.

export const RETRY_AFTER_S = 5;

const NET = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);
const PG_MESSAGES = /Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Query read timeout|Connection ended unexpectedly|Client was closed and is not queryable|^timeout expired$|the database system is (starting up|shutting down|in recovery mode)/i;

/** 'full' (disk or cap), 'away' (connection lost, database down, busy), or null. */
export function unavailable(err) {
  if (!err || typeof err !== 'object') return null;
  const code = String(err.code ?? '');
  if (code === 'SQLITE_FULL' || code === '53100') return 'full';
  if (/^SQLITE_(BUSY|LOCKED|IOERR|READONLY|CANTOPEN|PROTOCOL)/.test(code)) return 'away';
  if (/^08/.test(code) || /^53/.test(code) || /^57P0[123]$/.test(code) || code === '40001' || code === '40P01' || code === '57014' || code === '55P03') return 'away';
  if (NET.has(code)) return 'away';
  if (PG_MESSAGES.test(String(err.message ?? ''))) return 'away';
  if (err.cause && err.cause !== err) return unavailable(err.cause);
  return null;
}

/** The message a client gets with the 503. */
export function unavailableMessage(kind) {
  return kind === 'full'
    ? `the class server's storage is full; nothing was stored. Try again later; the operator must free disk space (or raise VMEMLAB_SQLITE_MAX_MB)`
    : `the class server's database is not reachable right now; nothing was stored. Try again in ${RETRY_AFTER_S} s`;
}

/** For an error handler: when `err` means the database is away or full, sets Retry-After
 * on the reply and returns the 503's message; else null (and the reply is untouched). */
export function unavailableAnswer(err, reply) {
  const kind = unavailable(err);
  if (!kind) return null;
  reply.header('Retry-After', String(RETRY_AFTER_S));
  return unavailableMessage(kind);
}
