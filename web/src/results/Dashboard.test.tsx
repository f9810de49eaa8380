// @vitest-environment jsdom
/* The teacher dashboard over a mocked class server (dashboard.mjs's routes): the grid is
 * built from the students and records lists (each page followed), a record or a student
 * that arrives on the event stream changes its row without a reload, a stream that ends
 * is opened again from the last position it delivered, a refused token stops it, one that
 * skipped records (overflow) is said, with the CSV, and the skipped records listed; selecting
 * a name lists that student's attempts with links to their variants; in Japanese and
 * Chinese no English is left; 200 students over 40 exercises draw (the time is printed:
 * 0.4-0.7 s here), and a live record redraws its own row, not the grid; the Answer sheet
 * button lists every student's variants with the engine's answers. The model (board.ts)
 * and the event-stream parser are checked on their own. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import i18n from '../i18n';
import { englishRuns, translatedText } from '../test/english';
import { LESSON_ORDER, LESSONS } from '../lessons/content';
import { Board, type LessonColumns, type ProgressRecord, type Student } from './board';
import { Dashboard } from './Dashboard';
import { parseSse } from './progressStream';
import { seedFor } from '../progress/seed';
import { generate } from '../lessons/exercises';
import { testEngine } from '../test/engine';

// the answer sheet loads the page's engine; here the same .wasm read from disk
vi.mock('../engine', () => ({ getEngine: () => testEngine() }));

const CODE = 'ABCD-EFGH';
const TOKEN = 'teacher-token-0123456789';
let n = 0;
const at = () => new Date(Date.UTC(2026, 3, 1, 9, 0, 0) + 1000 * n).toISOString();
function attempt(student: Student, lesson: string, exercise: number, over: Partial<ProgressRecord> = {}): ProgressRecord {
  n++;
  return { id: `rec${String(n).padStart(19, '0')}`, type: 'attempt', lesson, exercise, kind: 'count-refs', seed: 1000 + n, answer: String(n), verdict: 'wrong', tries: 1, hint: false, shown: false, at: at(), received_at: at(), student: { id: student.id, name: student.name }, ...over };
}
const done = (student: Student, lesson: string, isDone = true): ProgressRecord => ({ ...attempt(student, lesson, 0), type: 'done', exercise: null, kind: null, seed: null, answer: null, tries: null, verdict: isDone ? 'done' : 'undone' });

/** A mocked class server: the students and records lists (in pages of `page`), and event
 * streams the test writes into (`push`) and ends (`end`). */
function server(students: Student[], records: ProgressRecord[], opts: { page?: number; events?: 'ok' | 403 } = {}) {
  const page = opts.page ?? 500;
  const streams: { url: string; controller: ReadableStreamDefaultController<Uint8Array> }[] = [];
  const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  const fetch = vi.fn(async (url: string, init?: RequestInit) => {
    const headers = (init?.headers ?? {}) as Record<string, string>;
    if (headers.Authorization !== `Bearer ${TOKEN}`) return json({ statusCode: 401, error: 'Unauthorized', message: 'the dashboard needs the teacher token' }, 401);
    const [path, qs] = url.split('?');
    const q = new URLSearchParams(qs);
    const from = Number(q.get('cursor') ?? 0);
    const base = `/api/classes/${CODE}`;
    if (path === `${base}/progress/students`) {
      const to = Math.min(students.length, from + page);
      return json({ class: { code: CODE, name: 'Lab' }, students: students.slice(from, to), next_cursor: to < students.length ? String(to) : null });
    }
    if (path === `${base}/progress`) {
      const to = Math.min(records.length, from + page);
      return json({ class: { code: CODE, name: 'Lab' }, records: records.slice(from, to), next_cursor: to < records.length ? String(to) : null, end_cursor: to > from ? `end-${to}` : null });
    }
    if (path === `${base}/progress/events`) {
      expect(headers.Accept).toBe('text/event-stream');
      if (opts.events === 403) return json({ statusCode: 403, error: 'Forbidden', message: 'this token is not the teacher token of this class' }, 403);
      let controller!: ReadableStreamDefaultController<Uint8Array>;
      const body = new ReadableStream<Uint8Array>({ start(c) { controller = c; } });
      streams.push({ url, controller });
      controller.enqueue(new TextEncoder().encode(': live\n\n'));
      return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' } });
    }
    // the teacher's hand (progress.mjs): rename (a name taken is 409) and remove
    const student = path.startsWith(`${base}/students/`) ? students.find((x) => x.id === decodeURIComponent(path.slice(base.length + 10))) : undefined;
    if (student && init?.method === 'PATCH') {
      const { name } = JSON.parse(String(init.body));
      if (students.some((x) => x.name === name)) return json({ statusCode: 409, error: 'Conflict', message: 'taken' }, 409);
      return json({ id: student.id, name, joined_at: '2026-04-01T08:00:00.000Z' });
    }
    if (student && init?.method === 'DELETE') return json({ deleted: student.id, name: student.name, records: 0 });
    return json({ statusCode: 404, error: 'Not Found', message: 'no API route' }, 404);
  });
  vi.stubGlobal('fetch', fetch);
  const last = () => streams[streams.length - 1];
  return {
    fetch, streams,
    push: async (text: string) => { await act(async () => { last().controller.enqueue(new TextEncoder().encode(text)); await new Promise((r) => setTimeout(r, 10)); }); },
    end: async () => { await act(async () => { last().controller.close(); await new Promise((r) => setTimeout(r, 10)); }); },
  };
}
const event = (name: string, data: unknown, id?: string) => `${id ? `id: ${id}\n` : ''}event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;

const ana: Student = { id: 'sAna', name: 'Ana' };
const bo: Student = { id: 'sBo', name: '山田太郎' };
const cy: Student = { id: 'sCy', name: 'Cy' };
/** Ana: exercise 1 of ept-and-npt solved on the second check with the hint; Bo: exercise 2
 * wrong, then the answer shown, and four-address-spaces' first solved; ept-and-npt marked
 * done by Ana; Cy joined and did nothing. */
function classRecords() {
  n = 0;
  return [
    attempt(ana, 'ept-and-npt', 0, { hint: false, hint_opened: true, answer: '23' }),
    attempt(ana, 'ept-and-npt', 0, { verdict: 'correct', hint: true, answer: '24', seed: 777 }),
    attempt(bo, 'ept-and-npt', 1, { answer: '7' }),
    attempt(bo, 'ept-and-npt', 1, { shown: true, answer: '', verdict: 'empty' }), // the answer shown: not a check
    attempt(bo, 'four-address-spaces', 0, { verdict: 'correct' }),
    done(ana, 'ept-and-npt'),
  ];
}

const grid = () => screen.getByTestId('dashboard-grid');
const rowOf = (name: string) => within(grid()).getByRole('button', { name }).closest('tr')!;
/** The cells of a student's row for one lesson (its exercises, then done), as the eye and as a screen reader sees them. */
function cellsOf(name: string, lesson: string) {
  const row = rowOf(name);
  const lessons = LESSON_ORDER;
  let col = 1;
  for (const id of lessons) {
    const width = LESSONS.en[id].parts.filter((p) => p.type === 'exercise').length + 1;
    if (id === lesson) {
      return [...row.children].slice(col, col + width).map((td) => ({
        shown: td.textContent === '·' ? '' : td.textContent,
        said: td.getAttribute('aria-label'),
      }));
    }
    col += width;
  }
  throw new Error(`no lesson ${lesson}`);
}

beforeEach(() => { n = 0; });
afterEach(async () => {
  cleanup();
  vi.unstubAllGlobals();
  await act(async () => { await i18n.changeLanguage('en'); });
});

describe('the teacher dashboard', () => {
  it('builds the grid from the lists: a row per student, the lessons\' exercises and done marks, state in symbols and in words', async () => {
    const srv = server([ana, bo, cy], classRecords(), { page: 2 });
    render(<Dashboard code={CODE} token={TOKEN} />);
    await screen.findByTestId('dashboard-grid', {}, { timeout: 5000 });
    // every page of both lists was read, then the stream opened from the list's end
    const urls = srv.fetch.mock.calls.map(([u]) => u as string);
    expect(urls.filter((u) => u.includes('/progress/students'))).toHaveLength(2);
    expect(urls.filter((u) => u.includes('/progress?'))).toHaveLength(3);
    expect(urls.filter((u) => u.includes('/progress?')).at(-1)).toBe(`/api/classes/${CODE}/progress?limit=500&cursor=4`);
    await waitFor(() => expect(srv.streams).toHaveLength(1));
    expect(srv.streams[0].url).toBe(`/api/classes/${CODE}/progress/events?after=end-6`);
    await waitFor(() => expect(screen.getByTestId('dashboard-live').dataset.state).toBe('live'));
    expect(screen.getByTestId('dashboard-live').textContent).toBe('Live: new attempts appear as students send them.');

    // rows by name, every lesson of the page with its exercises and a done column
    expect([...grid().querySelectorAll('tbody th')].map((th) => th.textContent)).toEqual(['Ana', 'Cy', '山田太郎']);
    const heads = [...grid().querySelectorAll('thead tr:first-child th[scope=colgroup]')].map((th) => th.textContent);
    expect(heads).toEqual(LESSON_ORDER.map((id, i) => `${i + 1}. ${LESSONS.en[id].meta.title}`));
    const exercises = LESSON_ORDER.reduce((s, id) => s + LESSONS.en[id].parts.filter((p) => p.type === 'exercise').length, 0);
    expect(rowOf('Cy').querySelectorAll('td')).toHaveLength(exercises + LESSON_ORDER.length);
    expect(cellsOf('Ana', 'ept-and-npt').slice(0, 2)).toEqual([{ shown: '✓2?', said: 'solved, checked 2 times, hint used' }, { shown: '', said: 'not tried' }]);
    expect(cellsOf('Ana', 'ept-and-npt').at(-1)).toEqual({ shown: '✓', said: 'lesson done' });
    expect(cellsOf('山田太郎', 'ept-and-npt')[1]).toEqual({ shown: '✗1!', said: 'not solved yet, checked 1 time, answer shown' });
    expect(cellsOf('山田太郎', 'four-address-spaces')[0]).toEqual({ shown: '✓1', said: 'solved, checked 1 time' });
    expect(cellsOf('Cy', 'ept-and-npt').every((c) => c.shown === '')).toBe(true);
    expect(cellsOf('Cy', 'ept-and-npt').at(-1)!.said).toBe('lesson not marked done');
    // a header per exercise that names it for a screen reader
    expect(grid().querySelector('thead tr:nth-child(2) th .sr-only')!.textContent).toBe(`1. ${LESSONS.en[LESSON_ORDER[0]].meta.title}: exercise 1`);
    expect(screen.getByRole('region', { name: /^Exercises by student/ }).getAttribute('tabindex')).toBe('0');
  });

  it('shows a walk grid not yet solved with its best try\'s cells right of all (23/26), in symbols and in words', async () => {
    const lesson = 'ept-and-npt';
    const g = LESSONS.en[lesson].parts.filter((p) => p.type === 'exercise').findIndex((p) => p.type === 'exercise' && p.spec.kind === 'walk-grid');
    expect(g).toBeGreaterThan(-1);
    const grid_ = (st: Student, over: Partial<ProgressRecord>) => attempt(st, lesson, g, { kind: 'walk-grid', ...over });
    server([ana, bo], [
      grid_(ana, { score: { right: 20, of: 26 } }), grid_(ana, { score: { right: 23, of: 26 } }), grid_(ana, { score: { right: 21, of: 26 } }),
      grid_(bo, { score: { right: 25, of: 26 } }), grid_(bo, { verdict: 'correct', score: { right: 26, of: 26 } }),
    ]);
    render(<Dashboard code={CODE} token={TOKEN} />);
    await screen.findByTestId('dashboard-grid', {}, { timeout: 5000 });
    expect(cellsOf('Ana', lesson)[g]).toEqual({ shown: '✗3 23/26', said: 'not solved yet, checked 3 times, best try 23 of 26 cells right' });
    // solved: no fraction
    expect(cellsOf('山田太郎', lesson)[g]).toEqual({ shown: '✓2', said: 'solved, checked 2 times' });
    expect(screen.getByText(/23\/26: a walk grid's best try/)).toBeTruthy();
    await act(async () => { await i18n.changeLanguage('ja'); });
    expect(cellsOf('Ana', lesson)[g]).toEqual({ shown: '✗3 23/26', said: 'まだ正解していない、答え合わせ 3 回, 最良の回で 26 マス中 23 マス正解' });
  });

  it('changes a row when a record or a student arrives on the stream, and reopens a stream that ends from the last position', async () => {
    const srv = server([ana, bo], classRecords());
    render(<Dashboard code={CODE} token={TOKEN} />);
    await screen.findByTestId('dashboard-grid', {}, { timeout: 5000 });
    await waitFor(() => expect(srv.streams).toHaveLength(1));
    const boRow = rowOf('山田太郎');
    await srv.push(event('progress', attempt(ana, 'ept-and-npt', 1, { verdict: 'correct' }), 'pos-1'));
    await waitFor(() => expect(cellsOf('Ana', 'ept-and-npt')[1]).toEqual({ shown: '✓1', said: 'solved, checked 1 time' }));
    expect(rowOf('山田太郎')).toBe(boRow);
    // a record sent again (the stream re-reads a short window) is counted once
    const again = attempt(bo, 'ept-and-npt', 2);
    await srv.push(event('progress', again) + event('progress', again) + event('student', cy));
    await waitFor(() => expect(cellsOf('山田太郎', 'ept-and-npt')[2].shown).toBe('✗1'));
    expect([...grid().querySelectorAll('tbody th')].map((th) => th.textContent)).toEqual(['Ana', 'Cy', '山田太郎']);
    // a record of a lesson the page does not know gets columns of its own
    await srv.push(event('progress', attempt(cy, 'new-lesson', 1, { verdict: 'correct' }), 'pos-2'));
    await waitFor(() => expect(grid().querySelector('thead tr:first-child')!.textContent).toContain('new-lesson'));
    // the stream ends: the page says so and opens it again from the last id it got
    await srv.end();
    await waitFor(() => expect(screen.getByTestId('dashboard-live').dataset.state).toBe('retrying'));
    expect(screen.getByTestId('dashboard-live').textContent).toMatch(/^Not live: the connection was lost; trying again in 1 s\.$/);
    await waitFor(() => expect(srv.streams).toHaveLength(2), { timeout: 3000 });
    expect(srv.streams[1].url).toBe(`/api/classes/${CODE}/progress/events?after=pos-2`);
    await waitFor(() => expect(screen.getByTestId('dashboard-live').dataset.state).toBe('live'));
    await srv.push(event('progress', attempt(bo, 'vmfunc', 0, { verdict: 'correct' })));
    await waitFor(() => expect(cellsOf('山田太郎', 'vmfunc')[0].shown).toBe('✓1'));
  });

  it('when the stream skipped records (its overflow event), says so, offers the CSV and lists them from where it skipped, so the grid is whole', async () => {
    const records = classRecords();
    const srv = server([ana, bo, cy], records, { page: 2 });
    render(<Dashboard code={CODE} token={TOKEN} />);
    await screen.findByTestId('dashboard-grid', {}, { timeout: 5000 });
    await waitFor(() => expect(srv.streams).toHaveLength(1));
    expect(screen.queryByTestId('dashboard-overflow')).toBeNull();
    // one record comes on the stream (position 7 of the list), then more than the stream
    // catches up on while the page was away: it sends the first of them and skips the rest
    const seen = attempt(ana, 'ept-and-npt', 1, { verdict: 'correct' });
    const missed = [attempt(cy, 'ept-and-npt', 0, { verdict: 'correct' }), attempt(bo, 'vmfunc', 0, { verdict: 'correct' }), attempt(cy, 'ept-and-npt', 2), done(cy, 'ept-and-npt')];
    records.push(seen, ...missed);
    await srv.push(event('progress', seen, '7') + event('progress', missed[0], '8'));
    const calls = srv.fetch.mock.calls.length;
    await srv.push(event('overflow', { message: 'more than 500 records arrived since this position', list: `/api/classes/${CODE}/progress`, csv: `/api/classes/${CODE}/progress.csv` }, '11'));
    // listed from the position the stream had reached, page after page
    await waitFor(() => expect(screen.getByTestId('dashboard-overflow').dataset.state).toBe('done'));
    const listed = srv.fetch.mock.calls.slice(calls).map((c) => String(c[0])).filter((u) => u.startsWith(`/api/classes/${CODE}/progress?`));
    expect(listed).toEqual([`/api/classes/${CODE}/progress?limit=500&cursor=8`, `/api/classes/${CODE}/progress?limit=500&cursor=10`]);
    expect(cellsOf('Cy', 'ept-and-npt').map((c) => c.shown)).toEqual(['✓1', '', '✗1', '', '', '', '✓']);
    expect(cellsOf('山田太郎', 'vmfunc')[0].shown).toBe('✓1');
    const note = screen.getByTestId('dashboard-overflow');
    expect(note.getAttribute('role')).toBe('status');
    expect(note.textContent).toContain('it skipped the older ones; 3 records were loaded again from the class list, and the grid has every record.');
    // the CSV is offered in the note, with the teacher token
    fireEvent.click(within(note).getByRole('button', { name: 'Download every record (CSV)' }));
    await waitFor(() => expect(srv.fetch.mock.calls.some((c) => String(c[0]) === `/api/classes/${CODE}/progress.csv` && (c[1]?.headers as Record<string, string>).Authorization === `Bearer ${TOKEN}`)).toBe(true));
    // the stream goes on from the overflow's position
    await srv.push(event('progress', attempt(ana, 'vmfunc', 0, { verdict: 'correct' }), '12'));
    await waitFor(() => expect(cellsOf('Ana', 'vmfunc')[0].shown).toBe('✓1'));
    // it happens again and the list fails: said, with the CSV and a full reload offered
    srv.fetch.mockImplementationOnce(async () => new Response(JSON.stringify({ message: 'the database is busy' }), { status: 503, headers: { 'content-type': 'application/json' } }));
    await srv.push(event('overflow', { message: 'more than 500 records' }, '20'));
    await waitFor(() => expect(screen.getByTestId('dashboard-overflow').dataset.state).toBe('failed'));
    const failed = screen.getByTestId('dashboard-overflow');
    expect(failed.getAttribute('role')).toBe('alert');
    expect(failed.textContent).toContain('loading them from the class list failed (the database is busy): the grid may lack some records.');
    expect(within(failed).getByRole('button', { name: 'Download every record (CSV)' })).toBeTruthy();
    const streams = srv.streams.length;
    fireEvent.click(within(failed).getByRole('button', { name: 'Try again' }));
    await waitFor(() => expect(srv.streams.length).toBe(streams + 1)); // loaded again whole, then followed
    expect(screen.queryByTestId('dashboard-overflow')).toBeNull();
    expect(cellsOf('Cy', 'ept-and-npt').map((c) => c.shown)).toEqual(['✓1', '', '✗1', '', '', '', '✓']);
  });

  it('stops following when the server refuses the token, and says so', async () => {
    server([ana], [], { events: 403 });
    render(<Dashboard code={CODE} token={TOKEN} />);
    await waitFor(() => expect(screen.getByTestId('dashboard-live').dataset.state).toBe('stopped'));
    expect(screen.getByTestId('dashboard-live').textContent).toBe('Not live: the class server did not accept this teacher link.');
  });

  it('lists a student\'s attempts on selecting the name, with a link to each variant', async () => {
    server([ana, bo, cy], classRecords());
    render(<Dashboard code={CODE} token={TOKEN} />);
    await screen.findByTestId('dashboard-grid', {}, { timeout: 5000 });
    const name = within(grid()).getByRole('button', { name: 'Ana' });
    expect(name.getAttribute('aria-expanded')).toBe('false');
    fireEvent.click(name);
    const panel = await screen.findByTestId('dashboard-attempts');
    expect(name.getAttribute('aria-expanded')).toBe('true');
    expect(within(panel).getByRole('heading').textContent).toBe('Attempts of Ana');
    expect(document.activeElement).toBe(within(panel).getByRole('heading'));
    const rows = [...panel.querySelectorAll('tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent));
    const title = `3. ${LESSONS.en['ept-and-npt'].meta.title}`;
    expect(rows.map((r) => r.slice(0, 5))).toEqual([
      // the hint the page opened after a wrong try, told apart from the one pressed
      [`${title}: exercise 1`, '1001', '23', 'wrong', 'hint opened after a wrong try'],
      [`${title}: exercise 1`, '777', '24', 'correct', 'hint used'],
    ]);
    const link = within(panel).getAllByRole('link', { name: 'Open in Lessons' })[1];
    // the variant's page is told whose it was and their answer
    expect(link.getAttribute('href')).toBe('/?view=lessons&lesson=ept-and-npt&seeds=777&who=Ana&ex=0&answer=24');
    expect(link.getAttribute('target')).toBe('_blank');
    // another student; then closing
    fireEvent.click(within(grid()).getByRole('button', { name: '山田太郎' }));
    await waitFor(() => expect(within(screen.getByTestId('dashboard-attempts')).getByRole('heading').textContent).toBe('Attempts of 山田太郎'));
    expect(screen.getByTestId('dashboard-attempts').textContent).toContain('answer shown');
    expect(within(screen.getByTestId('dashboard-attempts')).getAllByRole('link')[0].getAttribute('href')).toMatch(/^\/\?view=lessons&lesson=ept-and-npt&seeds=,1003&who=%E5%B1%B1%E7%94%B0%E5%A4%AA%E9%83%8E&ex=1&answer=/);
    fireEvent.click(within(screen.getByTestId('dashboard-attempts')).getByRole('button', { name: 'Close' }));
    expect(screen.queryByTestId('dashboard-attempts')).toBeNull();
  });

  it('renames and removes a student from their panel (a name taken is said); a removal on the stream drops the row', async () => {
    const srv = server([ana, bo, cy], classRecords());
    render(<Dashboard code={CODE} token={TOKEN} />);
    await screen.findByTestId('dashboard-grid', {}, { timeout: 5000 });
    fireEvent.click(within(grid()).getByRole('button', { name: 'Cy' }));
    const form = await screen.findByTestId('dashboard-student');
    const input = within(form).getByRole('textbox');
    fireEvent.change(input, { target: { value: 'Ana' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Rename' }));
    expect((await within(form).findByRole('alert')).textContent).toBe('The name Ana is taken in this class.');
    fireEvent.change(input, { target: { value: 'Cyd' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Rename' }));
    await waitFor(() => expect(within(grid()).getByRole('button', { name: 'Cyd' })).toBeTruthy());
    const patch = srv.fetch.mock.calls.find(([, init]) => init?.method === 'PATCH' && String(init.body).includes('Cyd'))!;
    expect(patch[0]).toBe(`/api/classes/${CODE}/students/sCy`);
    // removing asks first; a "no" sends nothing
    const confirm = vi.fn(() => false);
    vi.stubGlobal('confirm', confirm);
    fireEvent.click(within(screen.getByTestId('dashboard-student')).getByRole('button', { name: 'Remove from the class' }));
    expect(confirm).toHaveBeenCalledWith(expect.stringContaining('Remove Cyd from the class'));
    expect(srv.fetch.mock.calls.some(([, init]) => init?.method === 'DELETE')).toBe(false);
    confirm.mockReturnValue(true);
    fireEvent.click(within(screen.getByTestId('dashboard-student')).getByRole('button', { name: 'Remove from the class' }));
    await waitFor(() => expect(within(grid()).queryByRole('button', { name: 'Cyd' })).toBeNull());
    expect(screen.queryByTestId('dashboard-attempts')).toBeNull();
    // another teacher tab removed Bo: the stream says so
    await srv.push(event('removed', { id: bo.id }));
    await waitFor(() => expect(within(grid()).queryByRole('button', { name: '山田太郎' })).toBeNull());
    expect(within(grid()).getByRole('button', { name: 'Ana' })).toBeTruthy();
  });

  for (const lang of ['ja', 'zh'] as const) {
    it(`leaves no English in ${lang}: grid, states, attempts, an empty class and a server without the routes`, async () => {
      await act(async () => { await i18n.changeLanguage(lang); });
      const srv = server([ana, bo, cy], classRecords());
      const attrs = (el: Element) => [...el.querySelectorAll('[title],[aria-label],[placeholder]')].map((e) => ['title', 'aria-label', 'placeholder'].map((a) => e.getAttribute(a) ?? '').join(' | ')).join('\n');
      const { container } = render(<Dashboard code={CODE} token={TOKEN} />);
      await screen.findByTestId('dashboard-grid', {}, { timeout: 5000 });
      await waitFor(() => expect(screen.getByTestId('dashboard-live').dataset.state).toBe('live'));
      fireEvent.click(within(grid()).getByRole('button', { name: 'Ana' }));
      await screen.findByTestId('dashboard-attempts');
      expect(grid().querySelector('thead')!.textContent).toContain(LESSONS[lang]['ept-and-npt'].meta.title);
      expect(container.querySelector('[lang="en"]')).toBeNull();
      expect(englishRuns(container.textContent!)).toEqual([]);
      expect(englishRuns(attrs(container))).toEqual([]);
      // the stream skipped records: the note and its CSV button
      await srv.push(event('overflow', { message: 'more than 500 records arrived since this position' }, '9'));
      await waitFor(() => expect(screen.getByTestId('dashboard-overflow').dataset.state).toBe('done'));
      expect(englishRuns(screen.getByTestId('dashboard-overflow').textContent!)).toEqual([]);
      await srv.end();
      await waitFor(() => expect(screen.getByTestId('dashboard-live').dataset.state).toBe('retrying'));
      expect(englishRuns(screen.getByTestId('dashboard-live').textContent!)).toEqual([]);
      cleanup();
      // an empty class; a server that has no dashboard routes; one that fails
      server([], []);
      render(<Dashboard code={CODE} token={TOKEN} />);
      expect(englishRuns(screen.getByTestId('dashboard').textContent!)).toEqual([]);
      await screen.findByTestId('dashboard-empty');
      expect(englishRuns(screen.getByTestId('dashboard').textContent!)).toEqual([]);
      cleanup();
      vi.stubGlobal('fetch', vi.fn(async () => new Response(JSON.stringify({ message: 'no API route GET /api/classes/X/progress/students' }), { status: 404 })));
      render(<Dashboard code={CODE} token={TOKEN} />);
      await screen.findByTestId('dashboard-error');
      expect(screen.getByTestId('dashboard').querySelector('[lang="en"]')).toBeNull();
      expect(englishRuns(screen.getByTestId('dashboard').textContent!)).toEqual([]);
      cleanup();
      vi.stubGlobal('fetch', vi.fn(async () => new Response(JSON.stringify({ message: 'the class server\'s database is not reachable right now' }), { status: 503 })));
      render(<Dashboard code={CODE} token={TOKEN} />);
      const err = await screen.findByTestId('dashboard-error');
      expect(err.querySelector('[lang="en"]')!.textContent).toMatch(/^the class server's database/);
      expect(englishRuns(translatedText(err))).toEqual([]);
    });
  }

  it('draws 200 students over 40 exercises (time printed), and a live record redraws only its row', async () => {
    const lessons: LessonColumns[] = Array.from({ length: 5 }, (_, i) => ({ id: `lesson-${i}`, title: `Lesson ${i}`, exercises: 8 }));
    const students: Student[] = Array.from({ length: 200 }, (_, i) => ({ id: `s${i}`, name: `学生${String(i).padStart(3, '0')}` }));
    n = 0;
    const records: ProgressRecord[] = [];
    for (const s of students) {
      for (const l of lessons) for (let e = 0; e < l.exercises; e++) {
        if ((Number(s.id.slice(1)) + e) % 5 === 0) continue; // some not tried
        records.push(attempt(s, l.id, e, { verdict: e % 3 ? 'correct' : 'wrong', hint: e % 4 === 0, shown: e % 7 === 0 }));
      }
      records.push(done(s, lessons[0].id));
    }
    // A small class first: in the page React and the code are warm before a class opens.
    server(students.slice(0, 5), records.slice(0, 100));
    render(<Dashboard code={CODE} token={TOKEN} lessons={lessons} />);
    await screen.findByTestId('dashboard-grid', {}, { timeout: 10_000 });
    // The best of three: the machines that run the tests are shared, and others' work
    // only ever adds to a run's time.
    const runs: number[] = [];
    let srv = server([], []);
    for (let i = 0; i < 3; i++) {
      cleanup();
      srv = server(students, records);
      const t0 = performance.now();
      render(<Dashboard code={CODE} token={TOKEN} lessons={lessons} />);
      await waitFor(() => expect(screen.getByTestId('dashboard-grid')).toBeTruthy(), { timeout: 10_000, interval: 5 });
      runs.push(performance.now() - t0);
    }
    const ms = Math.min(...runs);
    expect(grid().querySelectorAll('tbody tr')).toHaveLength(200);
    expect(grid().querySelectorAll('tbody td')).toHaveLength(200 * (40 + 5));
    // of that, folding the records into rows alone
    const b = new Board(); b.addStudents(students);
    const f0 = performance.now(); b.add(records); const fold = performance.now() - f0;
    await waitFor(() => expect(srv.streams).toHaveLength(1));
    // a live record: from the chunk reaching the page to its cell changing
    const row = rowOf('学生007');
    let changed = 0;
    new MutationObserver(() => { changed ||= performance.now(); }).observe(row.children[44], { childList: true, characterData: true, subtree: true });
    const u0 = performance.now();
    await srv.push(event('progress', attempt(students[7], 'lesson-4', 7, { verdict: 'correct' })));
    await waitFor(() => expect(row.children[44].textContent).toBe('✓2!'));
    expect(rowOf('学生007')).toBe(row);
    const update = changed - u0;
    console.log(`dashboard (jsdom): 200 students x 40 exercises (${records.length} records) loaded and drawn in ${runs.map((r) => r.toFixed(0)).join(', ')} ms (folding the records: ${fold.toFixed(0)} ms); a live record drawn in ${update.toFixed(0)} ms`);
    // Speed is a measured figure (printed above; about 0.4-0.7 s here on a quiet machine),
    // not a pass mark: a loaded machine (a whole test suite on 2 cores) takes longer. What
    // fails the test is a grid that grows with the square of the class (seconds, not
    // tenths) or a live record that redraws every row.
    expect(ms).toBeLessThan(8000);
    expect(update).toBeLessThan(ms / 5);
  });
});

describe('the class\'s answer sheet', () => {
  it('lists every student with the seed of each exercise they get and the engine\'s answer, for the lesson picked', async () => {
    server([ana, bo, cy], classRecords());
    render(<Dashboard code={CODE} token={TOKEN} />);
    await screen.findByTestId('dashboard-grid', {}, { timeout: 5000 });
    fireEvent.click(screen.getByTestId('dashboard-sheet'));
    const sheet = await screen.findByTestId('answer-sheet', {}, { timeout: 20_000 });
    fireEvent.change(within(sheet).getByRole('combobox'), { target: { value: 'vmfunc' } });
    await waitFor(() => expect(screen.getByTestId('answer-sheet').dataset.lesson).toBe('vmfunc'));
    const table = within(screen.getByTestId('answer-sheet')).getByRole('table');
    await waitFor(() => expect(table.dataset.state).toBe('done'), { timeout: 20_000 });
    const rows = [...table.querySelectorAll('tbody tr')];
    expect(rows.map((r) => r.querySelector('th')!.textContent)).toEqual(['Ana', 'Cy', '山田太郎']);
    const engine = await testEngine();
    for (const r of rows) {
      const name = r.querySelector('th')!.textContent!;
      r.querySelectorAll('td').forEach((td, k) => {
        const seed = seedFor(CODE, name, 'vmfunc', k);
        expect(Number(td.dataset.seed), `${name} ${k}`).toBe(seed);
        const ex = generate(LESSONS.en.vmfunc.parts.flatMap((p) => (p.type === 'exercise' ? [p.spec] : []))[k], seed);
        const want = ex.expected(ex.scenarios.map((x) => engine.run(x)));
        const shown = td.querySelector('.sheet-answer')!.textContent!;
        // a choice is printed in its words
        expect(shown, `${name} ${k}`).toBe(ex.input.type === 'choice' ? i18n.getFixedT('en', 'exercises')(`choice.${want}`) : want);
      });
    }
  }, 60_000);
});

describe('the dashboard model and the event-stream parser', () => {
  it('takes each record once, keeps the newest done mark, and copies only the rows that change', () => {
    const b = new Board();
    b.addStudents([ana, bo]);
    const before = b.get('sBo');
    n = 0;
    const r1 = attempt(ana, 'l', 0);
    expect(b.add([r1, r1])).toBe(true);
    expect(b.add([r1])).toBe(false);
    expect(b.get('sAna')!.cells.get('l#0')).toEqual({ n: 1, solved: false, last: 'wrong', hint: false, shown: false });
    expect(b.get('sBo')).toBe(before);
    const unmark = done(ana, 'l', false);
    const mark = { ...done(ana, 'l', true), at: '2026-01-01T00:00:00.000Z' }; // older on the student's clock, arriving later
    b.add([unmark, mark]);
    expect(b.get('sAna')!.done.get('l')).toBe(false);
    // a record of a student the list did not have yet brings the row with it
    b.add([attempt(cy, 'l', 3)]);
    expect(b.get('sCy')!.name).toBe('Cy');
    expect(b.columns([{ id: 'l', title: 'L', exercises: 2 }, { id: 'm', title: 'M', exercises: 1 }])).toEqual([{ id: 'l', title: 'L', exercises: 4 }, { id: 'm', title: 'M', exercises: 1 }]);
  });

  it('parses events across chunk boundaries, CRLF, comments and several data lines', () => {
    const a = parseSse(': live\n\nid: x\nevent: progress\ndata: {"a":1}\n\nevent: stu');
    expect(a.events).toEqual([{ event: 'progress', id: 'x', data: '{"a":1}' }]);
    const b = parseSse(`${a.rest}dent\r\ndata: 1\r\ndata: 2\r\n\r\n: keep-alive\n\n`);
    expect(b.events).toEqual([{ event: 'student', id: undefined, data: '1\n2' }]);
    expect(b.rest).toBe('');
  });
});
