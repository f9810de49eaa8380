/* The teacher's dashboard routes (web/server/dashboard.mjs), on SQLite and on a real
 * PostgreSQL: every route takes the teacher token only (none: 401, another: 403); the
 * students and the records come a page at a time, each once, in order; the event stream
 * delivers a record stored after it opened, one stored through a second server on the same
 * database, one that becomes visible late (stamped before the newest one sent) and a student
 * who joins, says it is alive with a comment line, resumes from the list's end_cursor, ends
 * when the client goes, when the server closes and when the class is deleted, and holds at
 * most the configured number of streams per class and per address, and past its backlog's
 * bound says `overflow`, from where the page's own client (progressStream.ts, progressList.ts)
 * lists the records it skipped, so that the page has every one; the CSV starts with a
 * BOM (unless bom=0), neutralises formula-like cells, keeps names in Japanese and Chinese
 * and numbers as numbers, and lists every record once over several pages.
 * Most rows are written straight into the tables progress.mjs creates, with the times a
 * test needs; the second server's student joins and sends an attempt through progress.mjs's
 * routes, graded there. */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildServer } from '../../web/server/app.mjs';
import { PROGRESS_CSV_COLUMNS } from '../../web/server/dashboard.mjs';
import { listRecords } from '../../web/src/results/progressList';
import { followProgress } from '../../web/src/results/progressStream';
import { readSse, startPostgres, type Pg } from './helpers';

type App = Awaited<ReturnType<typeof buildServer>>;
type Rec = { id: string; type: string; lesson: string; exercise: number | null; seed: number | null; answer: string | null; verdict: string; tries: number | null; hint: boolean; shown: boolean; received_at: string; student: { id: string; name: string | null } };
let pg: Pg | null = null;
const dirs: string[] = [];
const tmp = (prefix: string) => { const d = mkdtempSync(join(tmpdir(), prefix)); dirs.push(d); return d; };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const FAST = { pollMs: 100, commentMs: 400, lateMs: 10_000 };

beforeAll(async () => { pg = await startPostgres(); pg.createDb('dash'); }, 60_000);
afterAll(() => { pg?.stop(); for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

const newId = () => randomBytes(16).toString('base64url').slice(0, 22);
let clock = 0;
/** A server time: now, and after every one handed out so far. */
const later = () => new Date(clock = Math.max(clock + 7, Date.now())).toISOString();

async function addStudent(app: App, code: string, name: string, joined_at = later()) {
  const row = { id: newId(), class_code: code, name, receipt_hash: 'x'.repeat(64), joined_at };
  await app.store.db.insertInto('students').values(row).execute();
  return row;
}
function attempt(code: string, student_id: string, over: Record<string, unknown> = {}) {
  return {
    id: newId(), class_code: code, student_id, type: 'attempt', lesson: 'ept-and-npt', exercise: 0, kind: 'count-refs',
    seed: 123456, answer: '24', verdict: 'correct', tries: 1, hint: 0, shown: 0, at: '2026-04-01T09:00:00.000Z', received_at: later(), ...over,
  };
}
async function addRecord(app: App, row: ReturnType<typeof attempt>) { await app.store.db.insertInto('progress').values(row).execute(); return row; }

/** RFC 4180 records from CSV text. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = []; let row: string[] = []; let cell = ''; let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) { if (c === '"' && text[i + 1] === '"') { cell += '"'; i++; } else if (c === '"') quoted = false; else cell += c; }
    else if (c === '"' && cell === '') quoted = true;
    else if (c === ',') { row.push(cell); cell = ''; }
    else if (c === '\r' && text[i + 1] === '\n') { row.push(cell); rows.push(row); row = []; cell = ''; i++; }
    else cell += c;
  }
  expect(quoted || cell !== '' || row.length > 0, 'the CSV ends inside a row').toBe(false);
  return rows;
}

/** An open event stream: events (and comments) as they come, and a way to wait for one. */
interface Stream { events: { event: string; id?: string; data?: unknown }[]; comments: string[]; ended: boolean; close: () => void; until: <T>(f: () => T | undefined | false, ms?: number) => Promise<T> }
async function openStream(base: string, code: string, token: string, after?: string | null): Promise<{ status: number; headers: Headers; body?: unknown; stream?: Stream }> {
  const ac = new AbortController();
  const r = await fetch(`${base}/api/classes/${code}/progress/events${after ? `?after=${after}` : ''}`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, signal: ac.signal });
  if (r.status !== 200) return { status: r.status, headers: r.headers, body: await r.json() };
  const s: Stream = {
    events: [], comments: [], ended: false, close: () => ac.abort(),
    until: async (f, ms = 5000) => {
      const t0 = Date.now();
      for (;;) {
        const v = f();
        if (v) return v as never;
        if (Date.now() - t0 > ms) throw new Error(`not within ${ms} ms; events so far: ${JSON.stringify(s.events).slice(0, 2000)}`);
        await sleep(20);
      }
    },
  };
  void readSse(r.body!, {
    event: (e) => s.events.push({ event: e.event, id: e.id, data: JSON.parse(e.data) }),
    comment: (text) => s.comments.push(text),
  }).then(() => { s.ended = true; });
  return { status: 200, headers: r.headers, stream: s };
}
const progressIds = (s: Stream) => s.events.filter((e) => e.event === 'progress').map((e) => (e.data as Rec).id);

describe.each(['sqlite', 'postgres'] as const)('the teacher dashboard on %s', (kind) => {
  let app: App; let base: string; let dataDir: string;
  let code: string; let teacher: string;
  const databaseUrl = () => (kind === 'postgres' ? pg!.url('dash') : '');
  const build = (extra: Record<string, unknown> = {}) => buildServer({ databaseUrl: databaseUrl(), dataDir, rateLimit: false, serveApp: false, dashboard: FAST, ...extra });
  const newClass = async (name: string) => (await app.inject({ method: 'POST', url: '/api/classes', payload: { name } })).json() as { code: string; teacher_token: string };
  const get = (url: string, token: string | null = teacher, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers } });

  beforeAll(async () => {
    dataDir = tmp('vmemlab-dash-');
    app = await build();
    await app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    ({ code, teacher_token: teacher } = await newClass('Dashboard 101'));
  }, 60_000);
  afterAll(async () => { await app?.close(); });

  it('answers the teacher only: no token 401, a malformed one 401, another class\'s 403, an unknown class 404', async () => {
    const other = await newClass('other');
    const ev = { accept: 'text/event-stream' };
    for (const url of [`/api/classes/${code}/progress`, `/api/classes/${code}/progress/students`, `/api/classes/${code}/progress/events`, `/api/classes/${code}/progress.csv`]) {
      const none = await get(url, null, ev);
      expect(none.statusCode, url).toBe(401);
      expect(none.json().message).toMatch(/teacher token/);
      expect((await app.inject({ method: 'GET', url, headers: { authorization: 'Basic eDp5', ...ev } })).statusCode, url).toBe(401);
      const wrong = await get(url, other.teacher_token, ev);
      expect(wrong.statusCode, url).toBe(403);
      expect(wrong.json().message).toMatch(/not the teacher token/);
      expect((await get(url, 'A'.repeat(22), ev)).statusCode, url).toBe(403);
      expect((await get(url.replace(code, 'NOPE-NOPE'), teacher, ev)).statusCode, url).toBe(404);
    }
    // An event stream only for a client that asks for one; a bad position is 400.
    const plain = await get(`/api/classes/${code}/progress/events`);
    expect(plain.statusCode).toBe(406);
    expect(plain.json().message).toMatch(/Accept: text\/event-stream/);
    expect((await get(`/api/classes/${code}/progress/events?after=nonsense`, teacher, ev)).statusCode).toBe(400);
    expect((await get(`/api/classes/${code}/progress?limit=0`)).json().message).toMatch(/^limit/);
    expect((await get(`/api/classes/${code}/progress?cursor=%%%`)).statusCode).toBe(400);
  });

  it('lists students and records a page at a time, each once, in arrival order, with the student\'s name', async () => {
    const c = await newClass('pages');
    const auth = c.teacher_token;
    const names = ['Ana', '山田太郎', '张伟', 'Bo'];
    const students = [];
    // Equal times in runs, so that pages end inside a run and the id decides.
    const t0 = later();
    for (const n of names) students.push(await addStudent(app, c.code, n, t0));
    const rows = [];
    for (let i = 0; i < 11; i++) {
      const t = new Date(Date.parse(t0) + 1000 * Math.floor(i / 4)).toISOString();
      rows.push(await addRecord(app, attempt(c.code, students[i % 4].id, { exercise: i % 3, tries: i + 1, hint: i % 2, shown: i === 5 ? 1 : 0, seed: 2_000_000_000 + i, received_at: t, verdict: i % 2 ? 'wrong' : 'correct' })));
    }
    rows.push(await addRecord(app, { ...attempt(c.code, students[0].id), type: 'done', exercise: null, kind: null, seed: null, answer: null, tries: null, hint: 0, shown: 0, verdict: 'done' } as never));
    const order = [...rows].sort((a, b) => (a.received_at < b.received_at ? -1 : a.received_at > b.received_at ? 1 : a.id < b.id ? -1 : 1)).map((r) => r.id);

    const seen: Rec[] = []; let cursor: string | null = null; let pages = 0; let end: string | null = null;
    do {
      const r = await get(`/api/classes/${c.code}/progress?limit=5${cursor ? `&cursor=${cursor}` : ''}`, auth);
      expect(r.statusCode, r.body).toBe(200);
      const p = r.json();
      expect(p.class).toEqual({ code: c.code, name: 'pages' });
      expect(p.records.length).toBeLessThanOrEqual(5);
      seen.push(...p.records); cursor = p.next_cursor; end = p.end_cursor; pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen.map((r) => r.id)).toEqual(order);
    expect(end).toBeTruthy();
    const five = seen.find((r) => r.id === rows[5].id)!;
    expect(five).toMatchObject({ type: 'attempt', lesson: 'ept-and-npt', exercise: 2, kind: 'count-refs', seed: 2_000_000_005, answer: '24', verdict: 'wrong', tries: 6, hint: true, shown: true });
    expect(five.student).toEqual({ id: students[1].id, name: '山田太郎' });
    expect(seen.find((r) => r.type === 'done')).toMatchObject({ exercise: null, seed: null, verdict: 'done', hint: false, shown: false });
    // the whole class in one page: the same order, end_cursor after the last record
    const all = (await get(`/api/classes/${c.code}/progress`, auth)).json();
    expect(all.records.map((r: Rec) => r.id)).toEqual(order);
    expect(all.next_cursor).toBe(null);
    expect(all.end_cursor).toBe(end);
    // students
    const s1 = (await get(`/api/classes/${c.code}/progress/students?limit=3`, auth)).json();
    expect(s1.students).toHaveLength(3);
    const s2 = (await get(`/api/classes/${c.code}/progress/students?limit=3&cursor=${s1.next_cursor}`, auth)).json();
    expect(s2.next_cursor).toBe(null);
    expect([...s1.students, ...s2.students].map((s: { name: string }) => s.name).sort()).toEqual([...names].sort());
    expect(s1.students[0]).toEqual({ id: expect.any(String), name: expect.any(String), joined_at: t0 });
    // an empty class
    const e = (await get(`/api/classes/${code}/progress`)).json();
    expect(e).toEqual({ class: { code, name: 'Dashboard 101' }, records: [], next_cursor: null, end_cursor: null });
  });

  it('streams records stored after it opened: by this server, by a second server on the same database, late ones and new students', async () => {
    const c = await newClass('live');
    const ana = await addStudent(app, c.code, 'Ana');
    const first = await addRecord(app, attempt(c.code, ana.id));
    const list = (await get(`/api/classes/${c.code}/progress`, c.teacher_token)).json();
    const open = await openStream(base, c.code, c.teacher_token, list.end_cursor);
    expect(open.status).toBe(200);
    expect(open.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(open.headers.get('cache-control')).toContain('no-cache');
    const s = open.stream!;
    try {
      await s.until(() => s.comments.includes('live'));
      // Ana is re-sent (she joined within the late window before the list's end): the page
      // keeps each id once. The record from before the list is re-sent for the same reason.
      const t0 = Date.now();
      const mine = await addRecord(app, attempt(c.code, ana.id, { answer: '=1+1', verdict: 'wrong', tries: 2 }));
      const ev = await s.until(() => s.events.find((e) => (e.data as Rec).id === mine.id));
      const latency = Date.now() - t0;
      expect(ev.event).toBe('progress');
      expect(ev.data).toMatchObject({ id: mine.id, answer: '=1+1', verdict: 'wrong', tries: 2, student: { id: ana.id, name: 'Ana' } });
      expect(ev.id, 'a record that moves the position forward carries it').toBeTruthy();
      expect(progressIds(s).filter((id) => id === first.id).length).toBeLessThanOrEqual(1);

      // A second server instance on the same database (same SQLite file, same PostgreSQL):
      // a student joins there and sends an attempt through its routes (progress.mjs grades it).
      const other = await build();
      try {
        const joined = await other.inject({ method: 'POST', url: `/api/classes/${c.code}/students`, payload: { name: 'Bo' } });
        expect(joined.statusCode, joined.body).toBe(201);
        const bo = joined.json() as { student_id: string; receipt: string };
        await s.until(() => s.events.some((e) => e.event === 'student' && (e.data as { name: string }).name === 'Bo'));
        const theirs = { id: newId(), type: 'attempt', lesson: 'ept-and-npt', exercise: 0, kind: 'count-refs', seed: 7, answer: '24', tries: 1, hint: true, shown: false, at: new Date().toISOString() };
        const sent = await other.inject({ method: 'POST', url: `/api/classes/${c.code}/progress`, headers: { authorization: `Bearer ${bo.receipt}` }, payload: { records: [theirs] } });
        expect(sent.statusCode, sent.body).toBe(200);
        const verdict = sent.json().records[0].verdict;
        await s.until(() => progressIds(s).includes(theirs.id));
        expect(s.events.find((e) => (e.data as Rec).id === theirs.id)!.data).toMatchObject({ exercise: 0, seed: 7, answer: '24', hint: true, shown: false, verdict, student: { id: bo.student_id, name: 'Bo' } });
        const direct = await addRecord(other, attempt(c.code, bo.student_id, { exercise: 3 }));
        await s.until(() => progressIds(s).includes(direct.id));
      } finally { await other.close(); }

      // A record stamped before the newest one sent that becomes visible only now (a slow
      // commit, another instance's clock): within the late window it still comes, once.
      const newest = s.events.filter((e) => e.event === 'progress').map((e) => (e.data as Rec).received_at).sort().at(-1)!;
      const late = await addRecord(app, attempt(c.code, ana.id, { exercise: 1, received_at: new Date(Date.parse(newest) - 2000).toISOString() }));
      await s.until(() => progressIds(s).includes(late.id));
      await sleep(FAST.pollMs * 4);
      expect(new Set(progressIds(s)).size, 'every record once').toBe(progressIds(s).length);
      const lateEv = s.events.find((e) => (e.data as Rec).id === late.id)!;
      expect(lateEv.id, 'an earlier record does not move the position back').toBeUndefined();

      // Nothing else happening: a comment line says the stream is alive.
      const n = s.comments.filter((x) => x === 'keep-alive').length;
      await s.until(() => s.comments.filter((x) => x === 'keep-alive').length > n, FAST.commentMs * 5);
      console.log(`dashboard stream (${kind}): a new record reached the client in ${latency} ms (polling every ${FAST.pollMs} ms)`);
    } finally { s.close(); }
  });

  it('resumes from the last event id, ends when the client goes (its place freed), and holds at most N per class and per address', async () => {
    const limited = await build({ dashboard: { ...FAST, streamsPerClass: 2, streamsPerAddress: 3 } });
    let closed = false;
    await limited.listen({ port: 0, host: '127.0.0.1' });
    const lbase = `http://127.0.0.1:${(limited.server.address() as { port: number }).port}`;
    try {
      const c = (await limited.inject({ method: 'POST', url: '/api/classes', payload: { name: 'limits' } })).json();
      const d = (await limited.inject({ method: 'POST', url: '/api/classes', payload: { name: 'limits 2' } })).json();
      const a = (await openStream(lbase, c.code, c.teacher_token)).stream!;
      const b = (await openStream(lbase, c.code, c.teacher_token)).stream!;
      const third = await openStream(lbase, c.code, c.teacher_token);
      expect(third.status).toBe(429);
      expect(third.headers.get('retry-after')).toBe('15');
      expect((third.body as { message: string }).message).toMatch(/this class has 2 dashboard streams open/);
      const other = (await openStream(lbase, d.code, d.teacher_token)).stream!;
      const fourth = await openStream(lbase, d.code, d.teacher_token);
      expect(fourth.status).toBe(429);
      expect((fourth.body as { message: string }).message).toMatch(/your address has 3 dashboard streams open/);
      // a client that goes frees its place
      a.close();
      await sleep(300);
      const again = await openStream(lbase, c.code, c.teacher_token);
      expect(again.status).toBe(200);
      // resuming: the id of the last event as `after` (what the page sends after a reconnect)
      const st = await addStudent(limited, c.code, 'Cy');
      const r1 = await addRecord(limited, attempt(c.code, st.id));
      const ev = await again.stream!.until(() => again.stream!.events.find((e) => (e.data as Rec).id === r1.id));
      again.stream!.close(); b.close(); other.close();
      await sleep(300);
      const r2 = await addRecord(limited, attempt(c.code, st.id, { exercise: 1 }));
      const resumed = (await openStream(lbase, c.code, c.teacher_token, ev.id)).stream!;
      await resumed.until(() => progressIds(resumed).includes(r2.id));
      // The server closing ends the stream at once, as a finished reply.
      const t0 = Date.now();
      const closing = limited.close(); closed = true;
      await resumed.until(() => resumed.ended, 1000);
      console.log(`dashboard stream (${kind}): ended ${Date.now() - t0} ms after the server began to close`);
      await closing;
    } finally { if (!closed) await limited.close(); }
  });

  it('past the backlog\'s bound says overflow, and the page\'s client lists the skipped records from where the stream stopped: every record', async () => {
    const bounded = await build({ dashboard: { ...FAST, backlogMax: 5 } });
    await bounded.listen({ port: 0, host: '127.0.0.1' });
    const bbase = `http://127.0.0.1:${(bounded.server.address() as { port: number }).port}`;
    const realFetch = globalThis.fetch;
    // the page's client asks by path, as in the browser
    vi.stubGlobal('fetch', (url: string, init?: RequestInit) => realFetch(`${bbase}${url}`, init));
    const ac = new AbortController();
    try {
      const c = await newClass('Overflow');
      const st = await addStudent(app, c.code, 'Ana');
      const first = await addRecord(app, attempt(c.code, st.id));
      // the page loads the list, then is away while 12 records arrive
      const have = new Set<string>();
      const take = (recs: { id: string }[]) => { for (const r of recs) have.add(r.id); };
      const end = await listRecords(c.code, c.teacher_token, null, take, ac.signal);
      expect([...have.keys()]).toEqual([first.id]);
      const away = [];
      for (let i = 0; i < 12; i++) away.push(await addRecord(app, attempt(c.code, st.id, { exercise: i % 6 })));
      const streamed: string[] = []; const relisted: string[] = [];
      let from: string | null | undefined; let relist: Promise<unknown> | null = null;
      const following = followProgress(c.code, c.teacher_token, end, {
        records: (r) => { streamed.push(...r.map((x) => x.id)); take(r); },
        students: () => {}, state: () => {},
        overflow: (f) => { from = f; relist = listRecords(c.code, c.teacher_token, f, (r) => { relisted.push(...r.map((x) => x.id)); take(r); }, ac.signal); },
      }, ac.signal);
      const t0 = Date.now();
      while (!relist && Date.now() - t0 < 5000) await sleep(20);
      expect(relist, 'an overflow event within 5 s').toBeTruthy();
      await relist;
      // the stream sent its bound (the late window's record again, then the first of those
      // that arrived), stopped at `from`; the list after `from` has the rest, none twice
      expect(streamed.length).toBeLessThanOrEqual(5);
      expect(from).toBeTruthy();
      expect(relisted).toEqual(away.map((r) => r.id).filter((id) => !streamed.includes(id)));
      expect([...have.keys()].sort()).toEqual([first, ...away].map((r) => r.id).sort());
      // and the stream goes on from now
      const after = await addRecord(app, attempt(c.code, st.id, { exercise: 5 }));
      const t1 = Date.now();
      while (!streamed.includes(after.id) && Date.now() - t1 < 5000) await sleep(20);
      expect(streamed).toContain(after.id);
      ac.abort();
      await following;
    } finally { ac.abort(); vi.unstubAllGlobals(); await bounded.close(); }
  });

  it('ends the stream with "gone" when the class is deleted', async () => {
    const c = await newClass('to delete');
    const s = (await openStream(base, c.code, c.teacher_token)).stream!;
    try {
      await s.until(() => s.comments.includes('live'));
      const ana = await addStudent(app, c.code, 'Ana');
      await addRecord(app, attempt(c.code, ana.id));
      const del = await app.inject({ method: 'DELETE', url: `/api/classes/${c.code}`, headers: { authorization: `Bearer ${c.teacher_token}` } });
      expect(del.statusCode, del.body).toBe(200);
      await s.until(() => s.events.some((e) => e.event === 'gone'), FAST.commentMs * 5);
      await s.until(() => s.ended);
    } finally { s.close(); }
  });

  it('exports the records as CSV: BOM, neutralised cells, names as they are, numbers as numbers, every record once over several pages', async () => {
    const c = await newClass('csv');
    const auth = c.teacher_token;
    const hostile = await addStudent(app, c.code, '=HYPERLINK("x")');
    const yamada = await addStudent(app, c.code, '山田太郎');
    const zhang = await addStudent(app, c.code, '张伟');
    const special = [
      await addRecord(app, attempt(c.code, hostile.id, { answer: '=1+1', verdict: 'wrong', tries: 3, hint: 1, shown: 1 })),
      await addRecord(app, attempt(c.code, yamada.id, { answer: 'a,b "c";@x', seed: 2_000_000_001 })),
      await addRecord(app, attempt(c.code, zhang.id, { answer: '-5', exercise: 4 })),
      await addRecord(app, attempt(c.code, zhang.id, { answer: 'guest_page_fault', exercise: 1, kind: 'predict-exit' })),
      await addRecord(app, attempt(c.code, yamada.id, { answer: '{}', kind: 'walk-grid', verdict: 'wrong', hint_opened: 1, score_right: 23, score_of: 26 })),
    ];
    // more than one page of the export (500 rows a page)
    const many = Array.from({ length: 1100 }, (_, i) => attempt(c.code, [yamada, zhang][i % 2].id, { exercise: i % 7, answer: String(i) }));
    for (let i = 0; i < many.length; i += 200) await app.store.db.insertInto('progress').values(many.slice(i, i + 200)).execute();

    const res = await get(`/api/classes/${c.code}/progress.csv`, auth);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="vmemlab-${c.code}-progress.csv"`);
    expect(res.rawPayload.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
    const [head, ...rows] = parseCsv(res.rawPayload.subarray(3).toString('utf8'));
    expect(head).toEqual(PROGRESS_CSV_COLUMNS);
    expect(rows).toHaveLength(1105);
    const col = (name: string) => PROGRESS_CSV_COLUMNS.indexOf(name);
    const csvId = (id: string) => (id.startsWith('-') ? `'${id}` : id);
    expect(new Set(rows.map((r) => r[col('id')])).size).toBe(1105);
    const byId = (id: string) => rows.find((r) => r[col('id')] === csvId(id))!;
    const h = byId(special[0].id);
    expect(h[col('name')]).toBe(`'=HYPERLINK("x")`);
    expect(h[col('answer')]).toBe("'=1+1");
    expect([h[col('verdict')], h[col('tries')], h[col('hint')], h[col('shown')], h[col('type')], h[col('lesson')]]).toEqual(['wrong', '3', '1', '1', 'attempt', 'ept-and-npt']);
    const y = byId(special[1].id);
    expect(y[col('name')]).toBe('山田太郎');
    expect(y[col('answer')]).toBe(`a,b "c";'@x`);
    expect(y[col('seed')]).toBe('2000000001');
    const z = byId(special[2].id);
    expect(z[col('name')]).toBe('张伟');
    expect(z[col('answer')]).toBe("'-5");
    expect(z[col('exercise')]).toBe('5'); // numbered as the grid numbers it (stored from 0)
    expect(z[col('answer_id')]).toBe("'-5");
    // a choice: in the page's words, the id beside it
    const w = byId(special[3].id);
    expect([w[col('answer')], w[col('answer_id')], w[col('exercise')]]).toEqual(['guest page fault (#PF)', 'guest_page_fault', '2']);
    // a grid's partial credit as two numbers (a spreadsheet would read "23/26" as a date), and
    // whether the hint was opened; empty cells where there is no score
    const g = byId(special[4].id);
    expect([g[col('hint_opened')], g[col('score_right')], g[col('score_of')]]).toEqual(['1', '23', '26']);
    expect([h[col('hint_opened')], h[col('score_right')], h[col('score_of')]]).toEqual(['0', '', '']);
    // the raw text: the quoted cell as RFC 4180 writes it
    expect(res.body).toContain(`,"a,b ""c"";'@x",`);
    // in arrival order
    expect(rows.map((r) => r[col('received_at')])).toEqual([...rows.map((r) => r[col('received_at')])].sort());
    const plain = await get(`/api/classes/${c.code}/progress.csv?bom=0`, auth);
    expect(plain.rawPayload[0]).toBe('i'.charCodeAt(0));
    expect((await get(`/api/classes/${c.code}/progress.csv?bom=2`, auth)).statusCode).toBe(400);
  });
});
