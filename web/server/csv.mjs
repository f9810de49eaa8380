// The teacher's CSV export (GET /api/classes/{code}/export.csv). It is streamed: the rows
// are read a page at a time (keyset pagination, paging.mjs) and each page is written to the
// reply as it comes, so a class of any size never sits in memory, and a client that reads
// slowly holds the next page back (the stream is pulled, not pushed).
import { Readable } from 'node:stream';
import { METRICS } from '../src/results/extract.mjs';

/** Rows read from the database per page of the export. */
export const CSV_PAGE = 500;

export const CSV_COLUMNS = ['id', 'name', 'uploaded_utc', 'cpu_model', 'arch', 'hypervisor', 'tdp', 'mode', 'mem_mib', 'created_utc', ...Object.keys(METRICS)];

// What a spreadsheet may take for the start of a formula: = + - @ after any spaces, or a
// tab or carriage return first.
const FORMULA_START = /^(\s*[=+\-@]|[\t\r])/;

/**
 * One CSV cell. A number (the metrics, mem_mib) is written as it is, negative ones too.
 * Text is neutralised with a leading ' where a spreadsheet could read a formula: at the
 * start of the cell and at the start of each ;-separated part of it (a spreadsheet that
 * splits on ; starts a new cell there), so `x;=1+1;` becomes `x;'=1+1;`. A cell with
 * , " ; CR or LF is quoted, its quotes doubled (RFC 4180).
 */
export function csvCell(v) {
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  const s = v === null || v === undefined ? '' : String(v);
  const safe = s.split(';').map((part) => (FORMULA_START.test(part) ? `'${part}` : part)).join(';');
  return /[",;\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

const csvLine = (cells) => `${cells.map(csvCell).join(',')}\r\n`;

const METRIC_KEYS = Object.keys(METRICS);
/** A measure as the page shows it (charts.ts's fmt, without its thousands separators):
 * whole above 1,000, one decimal above 10, two above 1, else two significant digits. A
 * median of 1933.8332037263747 cycles is 1934: the extra digits are not in the data. */
export function shown(v) {
  if (typeof v !== 'number' || !Number.isFinite(v)) return v ?? '';
  const a = Math.abs(v);
  return a >= 1000 ? Math.round(v) : a >= 10 ? Math.round(v * 10) / 10 : a >= 1 ? Math.round(v * 100) / 100 : Number(v.toPrecision(2));
}
function rowLine(r) {
  const s = JSON.parse(r.summary);
  return csvLine([r.id, r.student_name, r.created_at, s.cpu_model, s.arch, s.hypervisor, s.tdp, s.mode, s.mem_mib, s.created_utc, ...METRIC_KEYS.map((k) => shown(s.metrics?.[k]))]);
}

/**
 * `?bom=0` leaves the UTF-8 byte order mark out; without it (or `bom=1`) the file starts
 * with one, so that a spreadsheet opened by a double-click reads names in Japanese or
 * Chinese as UTF-8 rather than in the machine's legacy code page.
 */
export function bomParam(query) {
  const b = query?.bom;
  if (b === undefined || b === '1') return true;
  if (b === '0') return false;
  throw Object.assign(new Error('bom: 0 (no byte order mark) or 1 (the default: the file starts with one)'), { statusCode: 400 });
}

/**
 * The export of class `code` as a byte stream: the BOM (unless bom is false), the header
 * line, then every upload in (created_at, id) order, CRLF line ends. The first page is read
 * before the stream is returned, so a database that is away answers 503 instead of a 200
 * cut short; a failure on a later page ends the reply early (the client sees a transfer
 * that did not complete).
 * @param {import('./db.mjs').Store} store
 */
export async function csvExport(store, code, { bom = true, pageSize = CSV_PAGE } = {}) {
  let page = await store.listResultsPage(code, { limit: pageSize, after: null });
  async function* chunks() {
    let text = (bom ? '\uFEFF' : '') + csvLine(CSV_COLUMNS);
    for (;;) {
      for (const r of page.rows) text += rowLine(r);
      yield Buffer.from(text, 'utf8');
      text = '';
      if (!page.next_cursor) return;
      // Let the event loop turn before the next page: SQLite answers at once and a socket
      // that takes every write at once never pushes back, so without this the whole export
      // ran as one chain of promise callbacks and no other request was served meanwhile.
      await new Promise((resolve) => setImmediate(resolve));
      const last = page.rows[page.rows.length - 1];
      page = await store.listResultsPage(code, { limit: pageSize, after: { created_at: last.created_at, id: last.id } });
    }
  }
  return Readable.from(chunks(), { objectMode: false });
}
