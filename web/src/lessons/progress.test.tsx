// @vitest-environment jsdom
/* The learner's progress in the lessons view, with the real engine and an in-memory
 * IndexedDB (fake-indexeddb): each exercise and the done marks come back after a remount
 * (what a reload does), in a class or not; in a class the attempts and done marks are
 * queued and sent to the class server once it can be reached (here a fetch stand-in that
 * is offline, then answers 503, then stores), each record once; and each student of a class
 * gets their own variant of each exercise, the one seedFor gives. */
import 'fake-indexeddb/auto';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { act, cleanup, fireEvent, render, waitFor, within } from '@testing-library/react';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { testEngine } from '../test/engine';
import '../i18n';
import { LessonsView } from './LessonsView';
import { LESSONS } from './content';
import { generate } from './exercises';
import { loadDone, loadExercise, waiting, type ProgressRecord } from '../progress/db';
import { seedFor, variantLink } from '../progress/seed';
import { forgetStudent, saveStudent, setCurrentClass } from '../progress/student';
import { kick, resetSyncForTests, timing } from '../progress/sync';
import { parseUrl } from '../model/url';

let engine: Vmsim;
beforeAll(async () => { engine = await testEngine(); });
afterEach(() => {
  cleanup();
  localStorage.clear();
  vi.unstubAllGlobals();
  resetSyncForTests();
});

const LESSON = 'ept-and-npt';
const cards = () => [...document.querySelectorAll<HTMLElement>('section.exercise')];
const seedsShown = () => cards().map((c) => Number(c.dataset.seed));
const view = (seed = 1, seeds: (number | null)[] = []) => render(<LessonsView engine={engine} lesson={LESSON} seed={seed} seeds={seeds} lang="en" onNavigate={() => {}} />);
/** The engine's answer to exercise `i` of the lesson at `seed`. */
const answerOf = (i: number, seed: number) => {
  const ex = generate(LESSONS.en[LESSON].parts.filter((p) => p.type === 'exercise')[i].spec, seed);
  return ex.expected(ex.scenarios.map((s) => engine.run(s)));
};

describe('progress kept in the browser', () => {
  it('shows each exercise as it was left (answer, tries, verdict, hint) and the done marks after a reload, outside a class', async () => {
    const seed = 401;
    view(seed);
    const [a, b, c] = cards();
    // a: one wrong try (its hint shows); b: right; c: the answer asked for
    fireEvent.change(within(a).getByLabelText('Your answer'), { target: { value: '999' } });
    fireEvent.click(within(a).getByText('Check'));
    expect(within(a).getByRole('status').textContent).toBe('Not quite: that was try 1 of 3. Look at the hint and try again.');
    fireEvent.change(within(a).getByLabelText('Your answer'), { target: { value: '998' } });
    const right = answerOf(1, seed + 1);
    fireEvent.change(within(b).getByLabelText('Your answer'), { target: { value: right } });
    fireEvent.click(within(b).getByText('Check'));
    expect(within(b).getByRole('status').textContent).toMatch(/^Correct\./);
    fireEvent.click(within(c).getByText('Show answer'));
    fireEvent.click(document.querySelector('input[type="checkbox"]')!);
    await waitFor(async () => {
      expect((await loadExercise(LESSON, 2, seed + 2))?.status).toBe('answer');
      expect((await loadExercise(LESSON, 0, seed))?.answer).toBe('998');
      expect(await loadDone()).toEqual([expect.objectContaining({ lesson: LESSON, done: true })]);
    });
    // nothing is queued outside a class
    expect(await waiting()).toEqual([]);
    cleanup();
    // a reload: the page starts again; localStorage's copy of the done marks is gone too
    localStorage.clear();
    view(seed);
    const [a2, b2, c2] = cards();
    await waitFor(() => expect(within(a2).getByLabelText<HTMLInputElement>('Your answer').value).toBe('998'));
    expect(within(a2).getByRole('status').textContent).toBe('Not quite: that was try 1 of 3. Look at the hint and try again.');
    expect(within(a2).getByText('Hint').getAttribute('aria-expanded')).toBe('true');
    expect(a2.querySelector('.hint')).toBeTruthy();
    // one more wrong try counts as the second
    fireEvent.click(within(a2).getByText('Check'));
    expect(within(a2).getByRole('status').textContent).toBe('Not quite: that was try 2 of 3. Look at the hint and try again.');
    await waitFor(() => expect(within(b2).getByRole('status').textContent).toMatch(/^Correct\./));
    // (a choice: its menu shows the answer and is closed to changes)
    expect(within(b2).getByLabelText<HTMLSelectElement>('Your answer').value).toBe(right);
    expect(within(b2).getByLabelText<HTMLSelectElement>('Your answer').disabled).toBe(true);
    // a settled exercise shows its walk again (the engine ran once more)
    expect(within(b2).getByText('Show the walk')).toBeTruthy();
    await waitFor(() => expect(within(c2).getByRole('status').textContent).toMatch(/^The engine's answer: /));
    await waitFor(() => expect(document.querySelector<HTMLInputElement>('input[type="checkbox"]')!.checked).toBe(true));
    // another seed is another variant, with a state of its own
    cleanup();
    view(seed + 100);
    await act(async () => { await new Promise((r) => setTimeout(r, 50)); });
    expect(within(cards()[0]).getByLabelText<HTMLInputElement>('Your answer').value).toBe('');
    expect(within(cards()[0]).getByRole('status').textContent).toBe('');
  });
});

/** A stand-in for the class server's progress route: `mode` says what it does now. */
function classServer() {
  const got: ProgressRecord[][] = [];
  const state = { mode: 'offline' as 'offline' | 'busy' | 'ok', calls: 0, busy: 0 };
  const fetchStub = vi.fn(async (url: string, init: RequestInit) => {
    state.calls++;
    expect(url).toBe('/api/classes/ABCD-EFGH/progress');
    expect((init.headers as Record<string, string>).Authorization).toBe('Bearer receipt-of-ann-123');
    if (state.mode === 'offline') throw new TypeError('Failed to fetch');
    if (state.mode === 'busy') state.busy++;
    if (state.mode === 'busy') return new Response(JSON.stringify({ statusCode: 503, message: 'busy' }), { status: 503, headers: { 'Retry-After': '1' } });
    const { records } = JSON.parse(String(init.body)) as { records: ProgressRecord[] };
    got.push(records);
    return new Response(JSON.stringify({ stored: records.length, records: records.map((r) => ({ id: r.id, verdict: 'wrong' })) }), { status: 200, headers: { 'Content-Type': 'application/json' } });
  });
  vi.stubGlobal('fetch', fetchStub);
  return { got, state };
}
const joinAs = (name: string, code = 'ABCD-EFGH') => {
  saveStudent(code, { id: `id-${name}`, name, receipt: `receipt-of-${name.toLowerCase()}-123` });
  setCurrentClass(code);
};

describe('progress sent to the class', () => {
  it('queues attempts and done marks while the server cannot be reached and sends each once when it can', async () => {
    timing.firstDelayMs = 20; timing.maxDelayMs = 100;
    const server = classServer();
    joinAs('Ann');
    view();
    expect(document.querySelector('[data-testid="in-class"]')!.textContent).toContain('ABCD-EFGH as Ann');
    const [a, b] = cards();
    const seedA = Number(a.dataset.seed);
    fireEvent.change(within(a).getByLabelText('Your answer'), { target: { value: '7' } });
    fireEvent.click(within(a).getByText('Check'));
    fireEvent.click(within(b).getByText('Hint'));
    fireEvent.click(within(b).getByText('Show answer'));
    fireEvent.click(document.querySelector('input[type="checkbox"]')!);
    // offline: three records wait (the hint alone is no record)
    await waitFor(async () => expect((await waiting('ABCD-EFGH')).length).toBe(3));
    const queued = (await waiting()).map((o) => o.record);
    expect(queued[0]).toMatchObject({ type: 'attempt', lesson: LESSON, exercise: 0, kind: 'count-refs', seed: seedA, answer: '7', tries: 1, hint: false, shown: false, hint_opened: false });
    expect(queued[1]).toMatchObject({ type: 'attempt', lesson: LESSON, exercise: 1, kind: 'predict-exit', answer: '', tries: 0, hint: true, shown: true, hint_opened: false });
    expect(queued[2]).toMatchObject({ type: 'done', lesson: LESSON, done: true });
    for (const r of queued) expect(r.id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(server.got).toEqual([]);

    // the browser goes offline: nothing is tried until it is back
    vi.stubGlobal('navigator', { ...navigator, onLine: false });
    await kick(); // (a send under way when it went offline ends first)
    const before = server.state.calls;
    await kick();
    await new Promise((r) => setTimeout(r, 150)); // past any retry the backoff had planned
    expect(server.state.calls).toBe(before);
    // a reload meanwhile: the queue is kept (it is in IndexedDB), nothing is lost
    cleanup();
    view();
    // back online, the server busy (503, Retry-After) at first, then storing
    server.state.mode = 'busy';
    vi.stubGlobal('navigator', { ...navigator, onLine: true });
    window.dispatchEvent(new Event('online'));
    await waitFor(() => expect(server.state.busy).toBe(1));
    server.state.mode = 'ok';
    // the retry after Retry-After (1 s) sends the three records, in one batch, once
    await waitFor(async () => expect(await waiting()).toEqual([]), { timeout: 5000 });
    expect(server.got).toHaveLength(1);
    expect(server.got[0].map((r) => r.id)).toEqual(queued.map((r) => r.id));
    // later attempts go out at once, each once
    fireEvent.change(within(cards()[0]).getByLabelText('Your answer'), { target: { value: '8' } });
    fireEvent.click(within(cards()[0]).getByText('Check'));
    await waitFor(() => expect(server.got).toHaveLength(2));
    // the hint the page opened by itself after the wrong "7" is no hint asked for, and is
    // recorded as opened by the page (kept through the reload above)
    expect(server.got[1]).toEqual([expect.objectContaining({ type: 'attempt', answer: '8', tries: 2, hint: false, hint_opened: true })]);
    // pressed: the next check says so (Hint closes the open hint, pressed again opens it)
    fireEvent.click(within(cards()[0]).getByText('Hint'));
    fireEvent.click(within(cards()[0]).getByText('Hint'));
    fireEvent.click(within(cards()[0]).getByText('Check'));
    await waitFor(() => expect(server.got).toHaveLength(3));
    expect(server.got[2]).toEqual([expect.objectContaining({ type: 'attempt', answer: '8', tries: 3, hint: true, hint_opened: false })]);
    const ids = server.got.flat().map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('gives each student of a class their own variants, the ones seedFor gives; "Another one" still moves on', async () => {
    classServer().state.mode = 'ok';
    const n = LESSONS.en[LESSON].parts.filter((p) => p.type === 'exercise').length;
    joinAs('Ann');
    view();
    const ann = seedsShown();
    expect(ann).toEqual(Array.from({ length: n }, (_, i) => seedFor('ABCD-EFGH', 'Ann', LESSON, i)));
    cleanup();
    joinAs('Bob');
    view();
    const bob = seedsShown();
    expect(bob).toEqual(Array.from({ length: n }, (_, i) => seedFor('ABCD-EFGH', 'Bob', LESSON, i)));
    expect(bob.filter((s, i) => s !== ann[i]).length).toBe(n); // every variant differs
    // the prompts differ too (the variant is the seed's)
    cleanup();
    // "Another one": seed + 1 in the URL's seeds, the others stay the student's
    const nav: { seeds?: (number | null)[] }[] = [];
    render(<LessonsView engine={engine} lesson={LESSON} seed={1} seeds={[]} lang="en" onNavigate={(p) => nav.push(p)} />);
    fireEvent.click(within(cards()[2]).getByText('Another one'));
    expect(nav.at(-1)!.seeds).toEqual([null, null, bob[2] + 1]);
    cleanup();
    view(1, nav.at(-1)!.seeds);
    expect(seedsShown()).toEqual(bob.map((s, i) => (i === 2 ? s + 1 : s)));
    // a teacher's link to a student's variant opens that seed at that exercise
    const url = parseUrl(variantLink(LESSON, 2, ann[2]).slice(1));
    expect(url).toMatchObject({ view: 'lessons', lesson: LESSON, seeds: [null, null, ann[2]] });
    forgetStudent('ABCD-EFGH');
    cleanup();
    render(<LessonsView engine={engine} lesson={LESSON} seed={url.seed} seeds={url.seeds} lang="en" onNavigate={() => {}} />);
    expect(seedsShown()[2]).toBe(ann[2]);
    // outside a class the seeds are as before: seed + position
    expect(seedsShown().filter((_, i) => i !== 2)).toEqual([1, 2, 4, 5, 6].slice(0, n - 1));
  });

  it('seedFor: FNV-1a over the class, the name (NFC, trimmed), the lesson and the exercise, 1 to 1,000,000', () => {
    // FNV-1a 32-bit of "A\nB\nc\n0" computed by hand: offset basis 0x811c9dc5, prime 0x01000193
    let h = 0x811c9dc5;
    for (const ch of 'A\nB\nc\n0') { h ^= ch.charCodeAt(0); h = Math.imul(h, 0x01000193) >>> 0; }
    expect(seedFor('a', 'B', 'c', 0)).toBe((h % 1_000_000) + 1);
    expect(seedFor('abcd-efgh', ' Zoë ', 'x', 3)).toBe(seedFor('ABCD-EFGH', 'Zo\u0065\u0308', 'x', 3));
    const seen = new Set(Array.from({ length: 200 }, (_, i) => seedFor('ABCD-EFGH', `student ${i}`, LESSON, 0)));
    expect(seen.size).toBeGreaterThan(195);
    for (const s of seen) expect(s >= 1 && s <= 1_000_000).toBe(true);
  });
});

describe('joining a class on the Results tab', () => {
  it('joins with a name (kept with its receipt), says when a name is taken, and leaves with what was sent', async () => {
    const { StudentJoin } = await import('../progress/StudentJoin');
    const { currentClass, studentOf } = await import('../progress/student');
    const calls: { url: string; method: string; auth?: string; body?: unknown }[] = [];
    let taken = true;
    vi.stubGlobal('fetch', vi.fn(async (url: string, init: RequestInit) => {
      const auth = (init.headers as Record<string, string> | undefined)?.Authorization;
      calls.push({ url, method: init.method ?? 'GET', auth, body: init.body ? JSON.parse(String(init.body)) : undefined });
      const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
      // a class without a roster or course settings (those reads are the course's own tests')
      if ((init.method ?? 'GET') === 'GET') return json(404, { statusCode: 404, message: 'no route' });
      if (init.method === 'DELETE') return json(200, { deleted: 'sid-1', name: 'Ann Lee', records: 4 });
      if (taken) { taken = false; return json(409, { statusCode: 409, message: 'the name "Ann" is already taken' }); }
      return json(201, { student_id: 'sid-1', receipt: 'receipt-0123456789', name: 'Ann Lee', class: 'WXYZ-2345' });
    }));
    render(<StudentJoin code="WXYZ-2345" />);
    const input = document.querySelector<HTMLInputElement>('[data-testid="student-join-name"]')!;
    fireEvent.change(input, { target: { value: ' Ann ' } });
    fireEvent.submit(input.form!);
    await waitFor(() => expect(document.querySelector('[data-testid="student-error"]')!.textContent).toBe('The name “Ann” is already taken in this class. Pick another one (add a surname or an initial).'));
    expect(studentOf('WXYZ-2345')).toBe(null);
    fireEvent.change(input, { target: { value: 'Ann Lee' } });
    fireEvent.submit(input.form!);
    await waitFor(() => expect(document.querySelector('[data-testid="student-joined"]')).toBeTruthy());
    expect(document.querySelector('[data-testid="student-joined"]')!.textContent).toContain('You are in this class as Ann Lee');
    expect(calls.filter((c) => c.method !== 'GET').map((c) => [c.method, c.url, c.body])).toEqual([
      ['POST', '/api/classes/WXYZ-2345/students', { name: 'Ann' }], ['POST', '/api/classes/WXYZ-2345/students', { name: 'Ann Lee' }]]);
    expect(studentOf('WXYZ-2345')).toEqual({ id: 'sid-1', name: 'Ann Lee', receipt: 'receipt-0123456789' });
    expect(currentClass()).toMatchObject({ code: 'WXYZ-2345', name: 'Ann Lee' });
    expect(localStorage.getItem('vmemlab-name')).toBe('"Ann Lee"'); // uploads carry the same name
    // leaving deletes what was sent: asked once more first, nothing deleted on the first click
    fireEvent.click(document.querySelector('[data-testid="student-leave"]')!);
    expect(document.querySelector('[data-testid="student-leave-confirm"]')!.textContent).toContain('delete everything you sent');
    expect(calls.some((c) => c.method === 'DELETE')).toBe(false);
    expect(studentOf('WXYZ-2345')).not.toBe(null);
    fireEvent.click(document.querySelector('[data-testid="student-leave-yes"]')!);
    await waitFor(() => expect(studentOf('WXYZ-2345')).toBe(null));
    expect(calls.filter((c) => c.method !== 'GET').at(-1)).toMatchObject({ method: 'DELETE', url: '/api/classes/WXYZ-2345/students/me', auth: 'Bearer receipt-0123456789' });
    expect(currentClass()).toBe(null);
    await waitFor(() => expect(document.body.textContent).toContain('You left class WXYZ-2345; the 4 records you had sent were deleted.'));
  });
});

describe('a variant opened from the teacher\'s attempts list', () => {
  it('says whose variant it is and their answer, a choice in words', async () => {
    history.replaceState(null, '', `/?view=lessons&lesson=${LESSON}&seeds=,42&who=${encodeURIComponent('山田太郎')}&ex=1&answer=guest_page_fault`);
    view(1, [null, 42]);
    const note = document.querySelector('[data-testid="variant-of"]')!;
    expect(note.textContent).toBe('This is the variant 山田太郎 had of exercise 2. Their answer: guest page fault (#PF)');
    expect(seedsShown()[1]).toBe(42);
    history.replaceState(null, '', '/');
  });
});
