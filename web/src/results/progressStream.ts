/* Follows a class's progress live: GET /api/classes/{code}/progress/events (dashboard.mjs),
 * read with fetch and a stream reader rather than EventSource, so that the teacher token
 * goes in the Authorization header and never in a URL. A stream that ends, fails or stays
 * silent for 40 s (the server writes a comment every 15 s) is opened again after a wait
 * that doubles up to 30 s, from the last position it delivered; the page is told the
 * state each time (live, connecting, waiting to try again, stopped). A stream that had more
 * to catch up on than the server sends at once skips the older records and says so
 * (`overflow`): the page is told where the skipped records start, to list them. */
import type { ProgressRecord, Student } from './board';

export type LiveState =
  | { kind: 'connecting' }
  | { kind: 'live' }
  | { kind: 'retrying'; seconds: number }
  /** auth: the token was refused; gone: the class was deleted; missing: the server has no such route */
  | { kind: 'stopped'; reason: 'auth' | 'gone' | 'missing' };

export interface StreamHandlers {
  records: (r: ProgressRecord[]) => void;
  students: (s: Student[]) => void;
  state: (s: LiveState) => void;
  /** students the teacher removed (or who left), by id */
  removed?: (ids: string[]) => void;
  /** the stream skipped the records after `from` (the position it had reached; null: from
   * the first) up to now, and goes on from now: the list after `from` has them */
  overflow?: (from: string | null) => void;
}

export interface SseEvent { event: string; id?: string; data: string }

/** Waits before each new try, in ms: the last one repeats. Each wait is cut to a random
 * 50-100 % of it, so that a classroom's dashboards do not all come back at once. */
export const RETRY_MS = [1000, 2000, 4000, 8000, 15_000, 30_000];
/** No byte for this long: the connection is taken for dead and opened again. */
export const SILENCE_MS = 40_000;

/**
 * Cuts text/event-stream text into events: returns those complete in `buf` and what is
 * left over (an event cut short by the chunk's end). Comments and events with no data are
 * left out; `data` lines are joined with newlines.
 */
export function parseSse(buf: string): { events: SseEvent[]; rest: string } {
  const events: SseEvent[] = [];
  const text = buf.replace(/\r\n?/g, '\n');
  let start = 0;
  for (let end = text.indexOf('\n\n'); end >= 0; end = text.indexOf('\n\n', start)) {
    const block = text.slice(start, end);
    start = end + 2;
    let event = 'message'; let id: string | undefined; const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'id') id = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length) events.push({ event, id, data: data.join('\n') });
  }
  return { events, rest: text.slice(start) };
}

const wait = (ms: number, signal: AbortSignal) => new Promise<void>((resolve) => {
  const timer = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
});

/**
 * Follows the class's events from `after` (the list's end_cursor; null: from the first
 * record) until `signal` aborts or the stream is stopped for good (a refused token, a
 * deleted class, a server without the route). Resolves then.
 */
export async function followProgress(code: string, token: string, after: string | null, h: StreamHandlers, signal: AbortSignal,
  opts: { retryMs?: readonly number[]; silenceMs?: number } = {}): Promise<void> {
  const retryMs = opts.retryMs ?? RETRY_MS;
  const silenceMs = opts.silenceMs ?? SILENCE_MS;
  let cursor = after;
  let failures = 0;
  while (!signal.aborted) {
    h.state({ kind: 'connecting' });
    const ac = new AbortController();
    const stop = () => ac.abort();
    signal.addEventListener('abort', stop, { once: true });
    let opened = 0; let retryAfter = 0;
    let silence: ReturnType<typeof setTimeout> | undefined;
    const quiet = () => { clearTimeout(silence); silence = setTimeout(stop, silenceMs); };
    try {
      quiet();
      const url = `/api/classes/${encodeURIComponent(code)}/progress/events${cursor ? `?after=${encodeURIComponent(cursor)}` : ''}`;
      const r = await fetch(url, { headers: { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' }, signal: ac.signal, cache: 'no-store' });
      if (r.status === 401 || r.status === 403) { h.state({ kind: 'stopped', reason: 'auth' }); return; }
      if (r.status === 404) { h.state({ kind: 'stopped', reason: 'missing' }); return; }
      if (!r.ok || !r.body) {
        retryAfter = Number(r.headers.get('retry-after') ?? 0) * 1000 || 0;
        throw new Error(`HTTP ${r.status}`);
      }
      h.state({ kind: 'live' });
      opened = Date.now();
      const reader = r.body.getReader();
      const decoder = new TextDecoder();
      let buf = '';
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        quiet();
        const { events, rest } = parseSse(buf + decoder.decode(value, { stream: true }));
        buf = rest;
        const records: ProgressRecord[] = []; const students: Student[] = []; const removed: string[] = [];
        for (const e of events) {
          if (e.event === 'gone') { h.state({ kind: 'stopped', reason: 'gone' }); return; }
          // said before the position moves on to now (its id): from here the records were skipped
          if (e.event === 'overflow') h.overflow?.(cursor);
          try {
            if (e.event === 'progress') records.push(JSON.parse(e.data) as ProgressRecord);
            else if (e.event === 'student') students.push(JSON.parse(e.data) as Student);
            else if (e.event === 'removed') removed.push((JSON.parse(e.data) as { id: string }).id);
          } catch { continue; } // not JSON: not an event of this API
          if (e.id) cursor = e.id;
        }
        if (students.length) h.students(students);
        if (records.length) h.records(records);
        if (removed.length) h.removed?.(removed);
      }
    } catch { /* a failed or cut connection: tried again below */ } finally {
      clearTimeout(silence);
      signal.removeEventListener('abort', stop);
      ac.abort(); // ends the request if the loop left it open
    }
    if (signal.aborted) return;
    // A stream that stayed up a while starts the waits over.
    if (opened && Date.now() - opened > 30_000) failures = 0;
    const base = retryMs[Math.min(failures, retryMs.length - 1)];
    failures++;
    const ms = Math.max(retryAfter, Math.round(base * (0.5 + Math.random() / 2)));
    h.state({ kind: 'retrying', seconds: Math.max(1, Math.round(ms / 1000)) });
    await wait(ms, signal);
  }
}
