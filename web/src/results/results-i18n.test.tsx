// @vitest-environment jsdom
/* The Results tab in English, Japanese and Chinese: the page with real hw-lab results (the
 * class server's fixture, a bare-metal variant and a refused file of each kind), the class
 * panel over a mocked class server (teacher view, upload, a server error, no server), and
 * the published figures' charts. In Japanese and Chinese no English prose may be left
 * (englishRuns) apart from what is marked lang="en": the titles of the published works,
 * the browser's JSON.parse message and the class server's messages. In English the page
 * says what it said before translation. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import fixture from '../../../tests/server/fixtures/result-quick.json';
import i18n from '../i18n';
import { classViewDrawn } from '../test/classView';
import { englishRuns, translatedText } from '../test/english';
import { GROUPS, METRICS, summarize, tdpLabel } from './extract.mjs';
import { tEn } from './labels';
import { checkResult } from './validate';
import type { Stored } from './store';
import { ResultsView } from './ResultsView';
import { ResultsLoading, ResultsTab } from './ResultsTab';

/* IndexedDB is not in jsdom: the store keeps results in memory; receipts and teacher tokens
 * stay in (jsdom's) localStorage as in the page. */
const db = vi.hoisted(() => ({ rows: new Map<number, unknown>(), next: 1 }));
vi.mock('./store', async (orig) => ({
  ...(await orig<typeof import('./store')>()),
  listResults: async () => [...db.rows.values()] as Stored[],
  addResult: async (label: string, result: unknown) => { const key = db.next++; db.rows.set(key, { key, label, added: '2026-01-01T00:00:00Z', result }); return key; },
  putResult: async (r: Stored) => { db.rows.set(r.key, r); return r.key; },
  deleteResult: async (key: number) => { db.rows.delete(key); return undefined; },
}));

type R = typeof fixture;
const variant = (f: (r: R) => void) => { const r = structuredClone(fixture); f(r); return r; };
const bare = variant((r) => { r.probe.virtualization.in_vm = false; r.probe.cpu.vendor = 'GenuineIntel'; r.probe.cpu.model_name = 'Intel Xeon'; (r.probe.kvm as { tdp: unknown }).tdp = 'Y'; });
const file = (name: string, text: string) => new File([text], name, { type: 'application/json' });
const BROKEN = '{"format": "vmemlab-hw-lab-result", ';
/* Instruction names in code, as in <code>rdtsc; cpuid; rdtsc</code>: not prose. */
const CODE_WORDS = [/^(?:rdtsc|cpuid)$/];

/* A result as today's hw-lab writes cpuid_exit: the published (unfenced) method first, whose
 * minimum is the class chart's first measure. */
const withPublished = (r: R, min: number) => {
  const b = r.benchmarks.find((x) => x.name === 'cpuid_exit')!;
  b.cases = [{ name: 'cpuid_leaf0', status: 'ok', params: { method: 'published: unfenced rdtsc; cpuid; rdtsc', samples: 65536 } as never, metrics: [{ name: 'cycles', unit: 'tsc_cycles', per: 'sample', min, median: min + 40, mean: min + 90, max: min * 3, count: 65536 }] }, ...b.cases] as never;
  return r;
};

/* A full run of the same machine: 16 times the memory of the quick fixture (1 GiB). */
const full = variant((r) => {
  r.mode = 'full';
  for (const b of r.benchmarks) for (const c of (b.cases ?? []) as { params?: Record<string, number> }[]) {
    if (c.params?.bytes) c.params.bytes *= 16;
    if (c.params?.working_set_bytes) c.params.working_set_bytes *= 16;
  }
});

/* A class server: health, one class with three uploads (one of them mine; two quick runs and
 * one full run; students' names only for the teacher's token), uploads that the server
 * refuses with its own (English) message or (uploads: true) stores once per
 * Idempotency-Key, a CSV export. The class list comes in pages (next_cursor); pageSize
 * makes them smaller than the page asks for, and every page after the first waits for
 * `hold` when one is given. */
const CODE = 'ABCD-EFGH';
const TOKEN = 'teacher-token-0123456789';
function classServer(opts: { up?: boolean; uploads?: boolean; pageSize?: number; hold?: Promise<void>; classKey?: string } = {}) {
  const rows = [
    { id: 'r1', created_at: '2026-01-01', ...summarize(variant((r) => withPublished(r, 2284))), name: 'Ana' },
    { id: 'r2', created_at: '2026-01-02', ...summarize(variant((r) => { Object.assign(r, structuredClone(bare)); withPublished(r, 310); })), name: null },
    { id: 'r3', created_at: '2026-01-03', ...summarize(variant((r) => { Object.assign(r, structuredClone(full)); r.probe.cpu.model_name = ''; r.probe.virtualization.hypervisor = null as never; withPublished(r, 2410); })), name: 'Bo' },
  ];
  const stored = new Map<string, string>(); // Idempotency-Key → id
  const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  const fetch = vi.fn(async (url: string, init?: RequestInit) => {
    if (opts.up === false) throw new TypeError('Failed to fetch');
    const headers = (init?.headers ?? {}) as Record<string, string>;
    if (url === '/api/health') return json({ ok: true });
    if (url === '/api/classes' && init?.method === 'POST' && opts.classKey !== undefined && headers['X-Vmemlab-Class-Key'] !== opts.classKey) {
      const given = headers['X-Vmemlab-Class-Key'] !== undefined;
      return json({ statusCode: given ? 403 : 401, error: given ? 'Forbidden' : 'Unauthorized', message: given ? 'this is not the class key of this server' : 'creating a class on this server needs its class key', need: 'class_key' }, given ? 403 : 401);
    }
    if (url === '/api/classes' && init?.method === 'POST') return json({ code: 'WXYZ-2345', teacher_token: TOKEN, teacher_url: `http://127.0.0.1:8080/?view=results&class=WXYZ-2345#teacher=${TOKEN}` });
    const [path, qs] = url.split('?');
    const query = new URLSearchParams(qs);
    if (path === '/api/classes/WXYZ-2345/results') return json({ class: { code: 'WXYZ-2345', name: 'New' }, metrics: METRICS, results: [], next_cursor: null });
    if (path === `/api/classes/${CODE}/results`) {
      const teacher = headers.Authorization === `Bearer ${TOKEN}`;
      const from = Number(query.get('cursor') ?? 0);
      if (from > 0 && opts.hold) await opts.hold;
      const to = Math.min(rows.length, from + Math.min(Number(query.get('limit') ?? 500), opts.pageSize ?? 500));
      return json({ class: { code: CODE, name: 'Lab 1' }, metrics: METRICS, results: rows.slice(from, to).map(({ name, ...r }) => (teacher ? { ...r, name } : r)), next_cursor: to < rows.length ? String(to) : null });
    }
    if (url.startsWith('/api/classes/')) return json({ statusCode: 404, error: 'Not Found', message: 'there is no class with this code' }, 404);
    if (url === '/api/results' && init?.method === 'POST' && opts.uploads) {
      await new Promise((r) => setTimeout(r, 50));
      const key = headers['Idempotency-Key'];
      const again = stored.has(key);
      if (!again) stored.set(key, `u${stored.size + 1}`);
      return json({ id: stored.get(key), receipt: 'receipt-0123456789', class: CODE, url: '', message: 'stored' }, again ? 200 : 201);
    }
    if (url === '/api/results' && init?.method === 'POST') return json({ statusCode: 429, error: 'Too Many Requests', message: 'rate limit: at most 10 requests per 1 minute from one client; try again in 30 s' }, 429);
    return json({ message: 'not found' }, 404);
  });
  vi.stubGlobal('fetch', fetch);
  return fetch;
}

beforeEach(() => {
  db.rows.clear(); db.next = 1;
  localStorage.clear();
  history.replaceState(null, '', `/?view=results&class=${CODE}&mine=r1#teacher=${TOKEN}`);
});
afterEach(async () => {
  cleanup();
  vi.unstubAllGlobals();
  await act(async () => { await i18n.changeLanguage('en'); });
});

async function pick(...files: File[]) {
  await act(async () => { fireEvent.change(screen.getByTestId('result-file'), { target: { files } }); });
}
const message = () => screen.getByTestId('results-message');
/** Titles, labels and placeholders: what a screen reader or a hover shows. */
const attrs = (el: Element) => [...el.querySelectorAll('[title],[aria-label],[placeholder]')]
  .map((e) => ['title', 'aria-label', 'placeholder'].map((a) => e.getAttribute(a) ?? '').join(' | ')).join('\n');

/** The Results tab with the broken and the schema-invalid file refused, two results kept and
 * the class view (as its teacher) drawn. Returns the container. */
async function fullPage() {
  classServer();
  const { container } = render(<ResultsView />);
  await classViewDrawn();
  await screen.findByText(i18n.t('mine.empty', { ns: 'results' }));
  return container;
}

for (const lang of ['ja', 'zh'] as const) {
  describe(`Results tab in ${lang}`, () => {
    beforeEach(async () => { await act(async () => { await i18n.changeLanguage(lang); }); });

    it('refuses a schema-invalid file with every problem in the language', async () => {
      await fullPage();
      const r = variant((x) => { (x.timer as { freq_hz: unknown }).freq_hz = 'fast'; x.mode = 'slow'; (x as Record<string, unknown>).extra = 1; delete (x as Partial<R>).probe; });
      await pick(file('bad-field.json', JSON.stringify(r)));
      const text = message().textContent!;
      expect(message().getAttribute('role')).toBe('alert');
      for (const p of ['bad-field.json', '/timer/freq_hz', '/mode', '/extra', '/probe']) expect(text).toContain(p);
      expect(message().querySelector('[lang="en"]')).toBeNull();
      expect(englishRuns(text)).toEqual([]);
      expect(text).not.toContain('must');
    });

    it('refuses broken JSON: line and column in the language, the browser\'s words marked English', async () => {
      await fullPage();
      await pick(file('broken.json', BROKEN));
      expect(message().textContent).toContain('broken.json');
      expect(message().textContent).toMatch(/1\D+37/);
      expect(message().querySelector('li [lang="en"]')?.textContent, 'JSON.parse message').toBeTruthy();
      expect(englishRuns(translatedText(message()))).toEqual([]);
      // the other refusals a file can meet
      for (const text of ['[1]', '{"format": "x"}', '{"format": "vmemlab-hw-lab-result", "schema_version": 2}']) {
        await pick(file('other.json', text));
        expect(englishRuns(message().textContent!), text).toEqual([]);
      }
    });

    it('shows kept results, the class (teacher view) and the published figures with no English left', async () => {
      const container = await fullPage();
      await pick(file('laptop.json', JSON.stringify(fixture)));
      expect(message().getAttribute('role')).toBe('status');
      expect(message().textContent).toContain('laptop.json');
      expect(englishRuns(message().textContent!)).toEqual([]);
      await pick(file('server.json', JSON.stringify(bare)));
      await waitFor(() => expect(screen.getByTestId('my-results').querySelectorAll('tbody tr')).toHaveLength(2));
      await waitFor(() => expect(container.querySelectorAll('svg[data-chart=ptrchase] path').length).toBeGreaterThan(2));
      // both results come from hw-lab before the published method: one fenced min each
      expect(container.querySelectorAll('svg[data-chart=cpuid] path.mine')).toHaveLength(2);
      expect(container.querySelectorAll('svg[data-chart=class-strip] circle.point')).toHaveLength(3);
      expect(container.querySelector('svg[data-chart=class-strip] text.you')).toBeTruthy();
      expect(screen.getByTestId('class-uploads').querySelectorAll('button')).toHaveLength(3);

      // The only English: the titles of the published works.
      const english = [...container.querySelectorAll('[lang="en"]')];
      expect(english.length).toBeGreaterThan(0);
      for (const e of english) expect(e.tagName, e.outerHTML).toBe('CITE');
      expect(englishRuns(translatedText(container), CODE_WORDS)).toEqual([]);
      expect(englishRuns(attrs(container))).toEqual([]);
      // the CPU models, codes and units stay as they are
      expect(container.textContent).toContain('AMD EPYC');
      expect(container.textContent).toContain('rdtsc; cpuid; rdtsc');
      // every group-by choice and measure, with the group axis translated
      for (const g of Object.keys(GROUPS)) {
        fireEvent.change(screen.getByRole('combobox', { name: i18n.t('class.groupBy', { ns: 'results' }) }), { target: { value: g } });
        for (const m of Object.keys(METRICS)) {
          fireEvent.change(screen.getByRole('combobox', { name: i18n.t('class.measure', { ns: 'results' }) }), { target: { value: m } });
          const view = screen.getByTestId('class-view');
          expect(englishRuns(translatedText(view)), `${g} / ${m}`).toEqual([]);
          expect(englishRuns(attrs(view)), `${g} / ${m}`).toEqual([]);
        }
      }
      expect(screen.getByTestId('class-view').textContent).toContain(i18n.t('summary.bareMetal', { ns: 'results' }));
    });

    it('a class server\'s refusal: translated, with the server\'s own words marked English', async () => {
      await fullPage();
      await pick(file('laptop.json', JSON.stringify(fixture)));
      const view = screen.getByTestId('class-view');
      await waitFor(() => expect(view.querySelector('.upload-row button')).toBeTruthy());
      await act(async () => { fireEvent.click(view.querySelector('.upload-row button')!); });
      const err = await screen.findByTestId('class-error');
      expect(err.querySelector('[lang="en"]')?.textContent).toMatch(/^rate limit/);
      expect(translatedText(err).trim()).not.toBe('');
      expect(englishRuns(translatedText(err))).toEqual([]);
      // a class that does not exist
      fireEvent.change(screen.getByTestId('join-code'), { target: { value: 'nope-nope' } });
      await act(async () => { fireEvent.submit(screen.getByTestId('join-code').closest('form')!); });
      await waitFor(() => expect(screen.getByTestId('class-error').textContent).toContain('NOPE-NOPE'));
      expect(englishRuns(translatedText(screen.getByTestId('class-error')))).toEqual([]);
    });

    it('a new class: the teacher\'s link and an empty class view', async () => {
      await fullPage();
      fireEvent.change(screen.getByTestId('class-name'), { target: { value: 'New' } });
      await act(async () => { fireEvent.submit(screen.getByTestId('class-name').closest('form')!); });
      await screen.findByTestId('class-created');
      const join = screen.getByTestId('join-panel');
      expect(screen.getByTestId('join-code-shown').textContent).toBe('WXYZ-2345');
      expect([...join.querySelectorAll('input')].map((i) => i.value)).toEqual([`${location.origin}/?view=results&class=WXYZ-2345`, `hw-lab/run --upload ${location.origin}/api/results --class WXYZ-2345`, `${location.origin}/?view=results&class=WXYZ-2345#teacher=${TOKEN}`]);
      expect(englishRuns(join.textContent!)).toEqual([]);
      await waitFor(() => expect(screen.getByTestId('class-view').querySelector('h3')!.textContent).toContain('WXYZ-2345'));
      await waitFor(() => expect(screen.getByTestId('class-view').querySelector('svg text')).toBeTruthy());
      expect(englishRuns(screen.getByTestId('class-view').textContent!)).toEqual([]);
      expect(screen.getByTestId('class-view').textContent).toContain(i18n.t('chart.noUploads', { ns: 'results' }));
    });

    it('without a class server, and while loading', async () => {
      classServer({ up: false });
      const { container } = render(<ResultsView />);
      await screen.findByTestId('no-server');
      expect(screen.getByTestId('no-server').querySelector('code')?.textContent).toBe('make start');
      expect([...container.querySelectorAll('[lang="en"]')].map((e) => e.tagName)).toEqual(['CITE', 'CITE', 'CITE', 'CITE']);
      expect(englishRuns(translatedText(container), CODE_WORDS)).toEqual([]);
      expect(englishRuns(attrs(container))).toEqual([]);
      cleanup();
      render(<ResultsLoading />);
      expect(englishRuns(document.body.textContent!)).toEqual([]);
      expect(document.body.textContent).toBe(i18n.t('loading', { ns: 'results' }));
      cleanup();
      render(<ResultsTab />);
      await screen.findByTestId('dropzone');
    });

    it('checkResult words its problems with the t it is given', () => {
      const t = i18n.getFixedT(lang, 'results');
      const c = checkResult(JSON.stringify(variant((x) => { (x.tool as { name: string }).name = 'other'; (x.benchmarks as unknown[]).push({}); })), t, lang);
      expect(c.ok).toBe(false);
      if (!c.ok) for (const p of c.problems) expect(englishRuns(p.message), p.path).toEqual([]);
    });

    it('a file with 80,000 benchmarks is one problem, found at once, in this language', () => {
      const t = i18n.getFixedT(lang, 'results');
      const text = JSON.stringify(variant((x) => { (x as { benchmarks: unknown[] }).benchmarks = Array.from({ length: 80_000 }, () => ({})); }));
      const t0 = performance.now();
      const c = checkResult(text, t, lang);
      expect(performance.now() - t0).toBeLessThan(2000);
      expect(c.ok).toBe(false);
      if (c.ok) return;
      expect(c.problems).toEqual([{ path: '/benchmarks', message: t('check.tooMany', { count: 80_000, max: 1024 }) }]);
      expect(englishRuns(c.problems[0].message)).toEqual([]);
    });
  });
}

describe('Results tab in English', () => {
  it('says what it said before translation', async () => {
    const container = await fullPage();
    expect(screen.getByRole('heading', { name: 'Your results' })).toBeTruthy();
    expect(container.textContent).toContain('No results yet. They stay in this browser (IndexedDB) until you remove them.');
    expect(container.textContent).toContain('Drop a hwlab-result.json here (from hw-lab/run), or');
    await pick(file('broken.json', BROKEN));
    expect(message().textContent).toMatch(/broken\.json is not a valid hw-lab result.*not valid JSON \(line 1, column 37\): \S/);
    await pick(file('bad-field.json', JSON.stringify(variant((r) => { (r.timer as { freq_hz: unknown }).freq_hz = 'fast'; }))));
    expect(message().textContent).toContain('bad-field.json is not a valid hw-lab result./timer/freq_hz: must be number');
    await pick(file('laptop.json', JSON.stringify(fixture)));
    expect(message().textContent).toBe('Added laptop.json (AMD EPYC, quick run of 2026-11-22T05:07:29Z).');
    await pick(file('server.json', JSON.stringify(bare)));
    await waitFor(() => expect(screen.getByTestId('my-results').querySelectorAll('tbody tr')).toHaveLength(2));
    const table = screen.getByTestId('my-results');
    expect(table.querySelector('thead')!.textContent).toBe(`comparelabel${Object.values(METRICS).map((m) => `${m.label} (${m.unit})`).join('')}`);
    expect(within(table).getByRole('checkbox', { name: 'compare Intel Xeon · bare metal · 2026-11-22 05:07' })).toBeTruthy();
    expect(within(table).getByRole('button', { name: 'remove AMD EPYC · kvm · 2026-11-22 05:07' }).textContent).toBe('Remove');
    expect(table.textContent).toContain('AMD EPYC · x86_64 · kvm · measured inside a VM: the host\'s EPT/NPT setting is not visible · quick run, 64 MiB · 2026-11-22T05:07:29Z');
    expect(table.textContent).toContain('Intel Xeon · x86_64 · none (bare metal) · EPT on · quick run, 64 MiB');
    expect(screen.queryByTestId('my-size-note')).toBeNull(); // one size: nothing to warn about

    const view = screen.getByTestId('class-view');
    expect(view.querySelector('h3')!.textContent).toBe(`Lab 1 (${CODE}, 3 uploads, you are the teacher)`);
    expect(screen.getByRole('button', { name: 'Export CSV' })).toBeTruthy();
    expect(screen.getByRole('combobox', { name: 'group by' })).toBeTruthy();
    // the first measure is the published method's minimum, with the published figures marked
    expect(view.querySelector('thead')!.textContent).toBe('whoCPU modelhypervisorEPT/NPTruncpuid exit, the published method: unfenced rdtsc;cpuid;rdtsc (min)');
    expect(view.querySelector('svg[data-chart=class-strip]')!.getAttribute('aria-label')).toBe('cpuid exit, the published method: unfenced rdtsc;cpuid;rdtsc (min) by hypervisor'); // as the teacher guide reads it: bare metal and VMs
    expect([...view.querySelectorAll('svg .ref-label')].map((e) => e.textContent)).toEqual(['native (min) 288', 'bitvisor (min) 1,792–1,856', 'kvm (min) 1,952–2,271', 'kvm on bitvisor (min) 7,551–7,776']);
    expect(screen.getByTestId('ref-note').textContent).toMatch(/^Orange lines and bands: the published minimums, .*\(Estimating VMM<->VM switch time on BitVisor \(Qiita article, 2019-12-17\).*\)\. They were measured the same way .* so the comparison is fair: cycles against cycles\./);
    expect(view.textContent).toContain('unknown VM');
    expect(view.querySelector('svg text.you')!.textContent).toBe('you');
    expect(screen.getByRole('button', { name: 'Open class' })).toBeTruthy();
    expect(screen.getByPlaceholderText('class name')).toBeTruthy();

    const pub = container.querySelector('section.published')!;
    expect(pub.getAttribute('aria-label')).toBe('compared with published figures');
    expect(pub.textContent).toContain('Grey circles: published runs (AMD Ryzen 7 2700; Estimating VMM<->VM switch time on BitVisor (Qiita article, 2019-12-17): rdtsc;cpuid;rdtsc loop, 65536 samples, AMD Ryzen 7 2700), 65,536 samples of unfenced rdtsc; cpuid; rdtsc each. Coloured diamonds: yours measured the same way (hw-lab\'s cpuid benchmark, cpuid_leaf0), so your min compares with theirs.');
    expect([...pub.querySelectorAll('code')].map((c) => c.textContent)).toEqual(expect.arrayContaining(['cpuid_leaf0', 'vmcall_bench']));   // case names as code, beside words
    expect(pub.textContent).toContain('Sha Sai et al., Software-Based Flat Nested Page Table in Sunway Architecture, J. Computer Research and Development 59(4), 2022. Overhead % against native; "<1" as published.');
    expect(pub.textContent).toContain(`a VMFUNC EPTP switch is ${(699 / 196).toFixed(1)}× faster than a VMCALL round trip.`);
    expect(pub.querySelector('svg[data-chart=cpuid]')!.getAttribute('aria-label')).toBe('cpuid exit cycles: native, BitVisor, KVM, nested vs yours');
    expect(pub.querySelector('svg[data-chart=cpuid]')!.textContent).toContain('kvm on bitvisor (avg)');
    expect(pub.querySelector('svg[data-chart=ptrchase]')!.textContent).toContain('ns per access');
    expect(pub.querySelector('svg[data-chart=spec2006]')!.textContent).toContain('x86 shadow paging');

    // the server's refusal, in English as before (with what failed)
    await act(async () => { fireEvent.click(view.querySelector('.upload-row button')!); });
    expect((await screen.findByTestId('class-error')).textContent).toBe('Upload failed: rate limit: at most 10 requests per 1 minute from one client; try again in 30 s');
  });

  it('a server with a class key asks for it once: wrong key, right key, kept for the next class', async () => {
    const fetch = classServer({ classKey: 'correct-horse' });
    render(<ResultsView />);
    await screen.findByTestId('class-view');
    const form = () => screen.getByTestId('class-name').closest('form')!;
    fireEvent.change(screen.getByTestId('class-name'), { target: { value: 'New' } });
    expect(screen.queryByTestId('class-key')).toBeNull();
    await act(async () => { fireEvent.submit(form()); });
    expect((await screen.findByTestId('class-key-why')).textContent).toBe(i18n.t('class.classKeyAsk', { ns: 'results' }));
    expect(screen.queryByTestId('class-created')).toBeNull();
    fireEvent.change(screen.getByTestId('class-key'), { target: { value: 'correct-horsE' } });
    await act(async () => { fireEvent.submit(form()); });
    await waitFor(() => expect(screen.getByTestId('class-key-why').textContent).toBe(i18n.t('class.classKeyWrong', { ns: 'results' })));
    fireEvent.change(screen.getByTestId('class-key'), { target: { value: 'correct-horse' } });
    await act(async () => { fireEvent.submit(form()); });
    await screen.findByTestId('class-created');
    expect(screen.queryByTestId('class-key')).toBeNull();
    expect(JSON.parse(localStorage.getItem('vmemlab-class-key')!)).toBe('correct-horse');
    // the next class is created without asking: the kept key goes with the request
    fetch.mockClear();
    await act(async () => { fireEvent.submit(form()); });
    const posts = fetch.mock.calls.filter(([u, i]) => u === '/api/classes' && i?.method === 'POST');
    expect(posts).toHaveLength(1);
    expect((posts[0][1]!.headers as Record<string, string>)['X-Vmemlab-Class-Key']).toBe('correct-horse');
    expect(screen.queryByTestId('class-key')).toBeNull();
  });

  it('a new class, as before', async () => {
    await fullPage();
    fireEvent.change(screen.getByTestId('class-name'), { target: { value: 'New' } });
    await act(async () => { fireEvent.submit(screen.getByTestId('class-name').closest('form')!); });
    expect((await screen.findByTestId('class-created')).textContent).toMatch(/^This page's address is now your teacher link: bookmark it\./);
    // the page's address is the teacher link (JoinPanel.test.tsx checks the panel itself)
    expect(location.href).toBe(`${location.origin}/?view=results&class=WXYZ-2345#teacher=${TOKEN}`);
    expect(screen.getByTestId('join-code-shown').textContent).toBe('WXYZ-2345');
    expect(screen.getByTestId('join-command').querySelector('input')!.value).toBe(`hw-lab/run --upload ${location.origin}/api/results --class WXYZ-2345`);
    await waitFor(() => expect(screen.getByTestId('class-view').querySelector('h3')!.textContent).toBe('New (WXYZ-2345, 0 uploads, you are the teacher)'));
    expect(screen.getByTestId('class-view').textContent).toContain('No uploads with this measurement yet.');
  });

  it('with no class server, and while loading', async () => {
    classServer({ up: false });
    render(<ResultsView />);
    expect((await screen.findByTestId('no-server')).textContent).toBe('Class uploads need the class server: run make start and open the page it prints.');
    cleanup();
    render(<ResultsLoading />);
    expect(document.body.textContent).toBe('Loading the results view…');
  });

  it('words the summary as extract.mjs does (the server stores and exports those words)', () => {
    for (const [k, m] of Object.entries(METRICS)) {
      expect(tEn(`metrics.${k}`)).toBe(m.label);
      expect(tEn(`units.${m.unit}`)).toBe(m.unit);
    }
    for (const [k, g] of Object.entries(GROUPS)) expect(tEn(`groups.${k}`)).toBe(g);
    expect(tEn('summary.bareMetal')).toBe(summarize(bare).hypervisor === 'none (bare metal)' ? 'none (bare metal)' : '?');
    expect(tEn('summary.tdpHidden')).toBe(tdpLabel({}));
    expect(tEn('summary.tdpOn', { name: 'EPT' })).toBe(tdpLabel({ kvm: { tdp: 'Y' }, cpu: { vendor: 'GenuineIntel' } }));
    expect(tEn('summary.tdpOff', { name: 'NPT' })).toBe(tdpLabel({ kvm: { tdp: '0' }, cpu: { vendor: 'AuthenticAMD' } }));
    expect(tEn('summary.unknownVm')).toBe(summarize(variant((r) => { r.probe.virtualization.hypervisor = null as never; })).hypervisor);
  });

  it('checkResult speaks English by default, as its callers expect', () => {
    const c = checkResult('{"format": "vmemlab-hw-lab-result", "schema_version": 2}');
    expect(c).toEqual({ ok: false, problems: [{ path: '/schema_version', message: '2 is not supported; this page reads schema version 1' }] });
    const d = checkResult(JSON.stringify(variant((r) => { (r.timer as { freq_hz: unknown }).freq_hz = 'fast'; })));
    expect(d.ok ? [] : d.problems).toEqual([{ path: '/timer/freq_hz', message: 'must be number' }]);
    expect(checkResult(JSON.stringify(fixture)).ok).toBe(true);
  });
});

describe('Results tab: several files, names, run sizes, one upload per file', () => {
  it('lists every file\'s outcome when several are dropped at once, and says how many problems were left out', async () => {
    await fullPage();
    const many = variant((r) => { for (const b of r.benchmarks) Object.assign(b, { teaches: 1, notes: 'none' }); (r.timer as { freq_hz: unknown }).freq_hz = 'fast'; });
    await pick(file('broken.json', BROKEN), file('laptop.json', JSON.stringify(fixture)), file('many.json', JSON.stringify(many)));
    const m = message();
    expect(m.getAttribute('role')).toBe('alert');
    const outcomes = [...m.querySelectorAll('[data-testid=file-outcome]')];
    expect(outcomes.map((o) => o.className)).toEqual(['refused', 'added', 'refused']);
    expect(outcomes[0].textContent).toMatch(/^broken\.json is not a valid hw-lab result\.not valid JSON \(line 1, column 37\)/);
    expect(outcomes[1].textContent).toBe('Added laptop.json (AMD EPYC, quick run of 2026-11-22T05:07:29Z).');
    const problems = checkResult(JSON.stringify(many));
    const n = problems.ok ? 0 : problems.problems.length;
    expect(n).toBeGreaterThan(10);
    expect(outcomes[2].querySelectorAll('li')).toHaveLength(11);
    expect(outcomes[2].querySelector('[data-testid=more-problems]')!.textContent).toBe(n === 11 ? 'and 1 more problem' : `and ${n - 10} more problems`);
    await waitFor(() => expect(screen.getByTestId('my-results').querySelectorAll('tbody tr')).toHaveLength(1));
  });

  it('gives two runs of one machine labels that tell them apart, and draws their whole names in the legend', async () => {
    const { container } = render(<ResultsView />);
    classServer({ up: false });
    await screen.findByTestId('dropzone');
    const later = variant((r) => { r.created_utc = '2026-11-23T09:00:00Z'; });
    await pick(file('a.json', JSON.stringify(fixture)), file('b.json', JSON.stringify(later)), file('a-again.json', JSON.stringify(fixture)));
    await waitFor(() => expect(screen.getByTestId('my-results').querySelectorAll('tbody tr')).toHaveLength(3));
    const labels = [...screen.getByTestId('my-results').querySelectorAll('input.label-input')].map((i) => (i as HTMLInputElement).value);
    expect(labels).toEqual(['AMD EPYC · kvm · 2026-11-22 05:07', 'AMD EPYC · kvm · 2026-11-23 09:00', 'AMD EPYC · kvm · 2026-11-22 05:07 #2']);
    await waitFor(() => expect(container.querySelectorAll('svg[data-chart=ptrchase] g.legend').length).toBe(6));
    // a full run beside quick ones: the table says which columns compare only within a size
    await pick(file('full.json', JSON.stringify(full)));
    await waitFor(() => expect(screen.getByTestId('my-size-note').textContent).toBe('Your results mix run sizes (quick run, 64 MiB, full run, 1024 MiB): compare the memtouch and pointer-chase columns only between runs of the same size.'));
    const legend = [...container.querySelectorAll('svg[data-chart=ptrchase] g.legend text')].map((e) => e.textContent);
    expect(legend).toContain('AMD EPYC · kvm · 2026-11-22 05:07 #2 4 KiB');
    expect(legend.some((l) => l!.includes('…'))).toBe(false);
  });

  it('the teacher sees who uploaded what; a measure that depends on run size is shown per size', async () => {
    await fullPage();
    const view = screen.getByTestId('class-view');
    const who = [...view.querySelectorAll('tbody td.who')].map((e) => e.textContent);
    expect(who).toEqual(['Ana', '#r2', 'Bo']);
    expect([...view.querySelectorAll('tbody td.size')].map((e) => e.textContent)).toEqual(['quick run, 64 MiB', 'quick run, 64 MiB', 'full run, 1024 MiB']);
    expect(screen.getByTestId('size-note').textContent).toBe('This measure does not depend on the run size (quick run, 64 MiB, full run, 1024 MiB); all runs are shown together.');
    expect(view.querySelector('svg circle.point[data-id=r1] title')!.textContent).toBe('Ana · AMD EPYC · kvm · measured inside a VM: the host\'s EPT/NPT setting is not visible · quick run, 64 MiB: 2,284 cycles');
    fireEvent.change(screen.getByRole('combobox', { name: 'measure' }), { target: { value: 'ptrchase_4k_largest_ns' } });
    fireEvent.change(screen.getByRole('combobox', { name: 'group by' }), { target: { value: 'cpu_model' } });
    expect(view.querySelector('thead')!.textContent).toBe('whoCPU modelhypervisorEPT/NPTrun'
      + 'pointer chase, 4 KiB pages, largest working set (median), quick run, 64 MiB'
      + 'pointer chase, 4 KiB pages, largest working set (median), full run, 1024 MiB');
    const cells = [...view.querySelectorAll('tbody tr')].map((tr) => [...tr.querySelectorAll('td.num')].map((td) => td.textContent !== '–'));
    expect(cells).toEqual([[true, false], [true, false], [false, true]]);
    expect(screen.getByTestId('size-note').textContent).toMatch(/^This measure depends on how much memory a run touches/);
    const axis = [...view.querySelectorAll('svg .group-axis .tick text')].map((e) => [...e.querySelectorAll('tspan')].map((s) => s.textContent));
    expect(axis).toContainEqual(['AMD EPYC', 'quick run, 64 MiB']);
    expect(axis).toContainEqual(['unknown', 'full run, 1024 MiB']);
  });

  it('a student (no teacher token) sees short ids, never names', async () => {
    history.replaceState(null, '', `/?view=results&class=${CODE}`);
    classServer();
    render(<ResultsView />);
    const view = await classViewDrawn();
    await waitFor(() => expect(view.querySelectorAll('tbody td.who')).toHaveLength(3));
    expect([...view.querySelectorAll('tbody td.who')].map((e) => e.textContent)).toEqual(['#r1', '#r2', '#r3']);
  });

  for (const lang of ['en', 'ja'] as const) {
    it(`uploads a file once with its key and the chosen name, however often it is clicked (${lang})`, async () => {
      await act(async () => { await i18n.changeLanguage(lang); });
      history.replaceState(null, '', `/?view=results&class=${CODE}`);
      const fetch = classServer({ uploads: true });
      render(<ResultsView />);
      const view = await classViewDrawn();
      await pick(file('laptop.json', JSON.stringify(fixture)));
      await waitFor(() => expect(view.querySelector('.upload-row button')).toBeTruthy());
      fireEvent.change(screen.getByTestId('student-name'), { target: { value: '山田 太郎' } });
      const button = view.querySelector('.upload-row button') as HTMLButtonElement;
      await act(async () => { fireEvent.click(button); fireEvent.click(button); fireEvent.click(button); });
      const posts = () => fetch.mock.calls.filter(([u, init]) => u === '/api/results' && init?.method === 'POST');
      await waitFor(() => expect(button.disabled).toBe(false));
      expect(posts()).toHaveLength(1);
      const h = posts()[0][1]!.headers as Record<string, string>;
      expect(h['Idempotency-Key']).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(h['X-Vmemlab-Name']).toBe(encodeURIComponent('山田 太郎'));
      expect(localStorage.getItem('vmemlab-name')).toBe(JSON.stringify('山田 太郎'));
      const note = () => view.parentElement!.querySelector('[role=status]')!.textContent;
      expect(note()).toBe(i18n.t('class.uploaded', { ns: 'results', label: 'AMD EPYC · kvm · 2026-11-22 05:07', code: CODE }));
      // clicked again later: the same key, the server's "already stored", one receipt kept
      await act(async () => { fireEvent.click(button); });
      await waitFor(() => expect(posts()).toHaveLength(2));
      expect((posts()[1][1]!.headers as Record<string, string>)['Idempotency-Key']).toBe(h['Idempotency-Key']);
      await waitFor(() => expect(note()).toBe(i18n.t('class.alreadyUploaded', { ns: 'results', label: 'AMD EPYC · kvm · 2026-11-22 05:07', code: CODE })));
      expect(JSON.parse(localStorage.getItem(`vmemlab-receipts:${CODE}`)!).filter((r: { id: string }) => r.id === 'u1')).toHaveLength(1);
      if (lang !== 'en') {
        expect(englishRuns(note())).toEqual([]);
        expect(englishRuns(view.querySelector('.upload-row label')!.textContent!)).toEqual([]);
        expect(englishRuns(attrs(view))).toEqual([]);
      }
    });
  }
});

describe('Results tab: a large class comes a page at a time', () => {
  it.each(['en', 'ja', 'zh'] as const)('follows next_cursor and says how many uploads have arrived (%s)', async (lang) => {
    await act(async () => { await i18n.changeLanguage(lang); });
    let release!: () => void;
    const fetch = classServer({ pageSize: 1, hold: new Promise<void>((r) => { release = r; }) });
    render(<ResultsView />);
    const loading = await screen.findByTestId('class-loading', {}, { timeout: 5000 });
    expect(loading.textContent).toBe(i18n.t('class.loading', { ns: 'results', count: 1 }));
    if (lang === 'en') expect(loading.textContent).toBe('Loaded 1 upload so far…');
    else expect(englishRuns(loading.textContent!)).toEqual([]);
    await act(async () => { release(); });
    await waitFor(() => expect(screen.getByTestId('class-uploads').querySelectorAll('tbody tr')).toHaveLength(3));
    expect(screen.queryByTestId('class-loading')).toBeNull();
    const pages = fetch.mock.calls.map(([u]) => u as string).filter((u) => u.startsWith(`/api/classes/${CODE}/results`));
    expect(pages).toEqual([0, 1, 2].map((n) => `/api/classes/${CODE}/results?limit=500${n ? `&cursor=${n}` : ''}`));
  });
});
