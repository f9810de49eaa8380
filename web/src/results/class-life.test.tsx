// @vitest-environment jsdom
/* The class panel's chart and a class's life, over a mocked class server: the chart starts
 * on the published method's minimum with the published figures marked and cited, says for
 * each measure how fair a comparison with them is, names the points for the teacher only,
 * and files uploads measured inside a VM under "the host's setting is not visible" (the
 * VM's own KVM backend only in the table). The teacher closes, reopens and deletes the
 * class (a confirmation that names it); a student of a closed class is told so and has no
 * upload buttons. In English, Japanese and Chinese. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import fixture from '../../../tests/server/fixtures/result-quick.json';
import i18n from '../i18n';
import { classViewDrawn } from '../test/classView';
import { englishRuns, translatedText } from '../test/english';
import { ClassPanel } from './ClassPanel';
import { METRICS, TDP_IN_VM, summarize, type MetricKey } from './extract.mjs';
import { referencesFor } from './references';
import type { Stored } from './store';

const CODE = 'ABCD-EFGH';
const TOKEN = 'teacher-token-0123456789';
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type R = any;
const cpuid = (r: R, min: number) => {
  r.benchmarks.find((b: R) => b.name === 'cpuid_exit').cases.unshift({ name: 'cpuid_leaf0', status: 'ok', params: { method: 'published: unfenced rdtsc; cpuid; rdtsc' }, metrics: [{ name: 'cycles', unit: 'tsc_cycles', per: 'sample', min, median: min + 40, mean: min + 90, max: min * 3, count: 65536 }] });
  return r;
};
/** Firecracker on AMD EPYC (no VT-x; /dev/kvm in the VM is kvm_pvm), and a bare-metal host. */
const pvm = cpuid(Object.assign(structuredClone(fixture) as R, {}), 2284);
pvm.probe.kvm.backend = 'kvm_pvm';
const host = cpuid(structuredClone(fixture) as R, 310);
Object.assign(host.probe.virtualization, { in_vm: false });
Object.assign(host.probe.kvm, { tdp: 'Y', backend: 'kvm_amd' });

/** A class server with one class of two uploads that can be closed, reopened and deleted. */
function classServer() {
  const state = { closed_at: null as string | null, deleted: false };
  const calls: string[] = [];
  const rows = [
    { id: 'vm1abcdef', created_at: '2026-01-01', ...summarize(pvm), name: 'Ana' },
    { id: 'host1abcd', created_at: '2026-01-02', ...summarize(host), name: 'Bo' },
  ];
  const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  const fetch = vi.fn(async (url: string, init?: RequestInit) => {
    const headers = (init?.headers ?? {}) as Record<string, string>;
    const teacher = headers.Authorization === `Bearer ${TOKEN}`;
    const method = init?.method ?? 'GET';
    if (url === '/api/health') return json({ ok: true });
    const path = url.split('?')[0];
    if (path.startsWith(`/api/classes/${CODE}`) && state.deleted) return json({ statusCode: 404, error: 'Not Found', message: `there is no class with the code "${CODE}"` }, 404);
    if (path === `/api/classes/${CODE}/results`) {
      return json({ class: { code: CODE, name: 'Lab 1', closed_at: state.closed_at }, metrics: METRICS, results: rows.map(({ name, ...r }) => (teacher ? { ...r, name } : r)), next_cursor: null });
    }
    if (method !== 'GET' && path.startsWith(`/api/classes/${CODE}`)) {
      calls.push(`${method} ${path}${teacher ? ' teacher' : ''}`);
      if (!teacher) return json({ statusCode: 403, error: 'Forbidden', message: 'this token is not the teacher token of this class' }, 403);
      if (path.endsWith('/close')) { state.closed_at = '2026-03-01T10:00:00.000Z'; return json({ code: CODE, closed_at: state.closed_at }); }
      if (path.endsWith('/reopen')) { state.closed_at = null; return json({ code: CODE, closed_at: null }); }
      if (path === `/api/classes/${CODE}`) { state.deleted = true; return json({ deleted: CODE, rows: { results: 2 } }); }
    }
    return json({ statusCode: 404, error: 'Not Found', message: 'not found' }, 404);
  });
  vi.stubGlobal('fetch', fetch);
  return { state, calls, fetch };
}

const mine: Stored[] = [{ key: 1, label: 'laptop', added: '2026-01-01T00:00:00Z', result: fixture } as unknown as Stored];
const asTeacher = () => { localStorage.setItem(`vmemlab-teacher:${CODE}`, JSON.stringify(TOKEN)); };
async function open() {
  render(<ClassPanel mine={mine} />);
  return classViewDrawn();
}
const measure = (m: MetricKey) => fireEvent.change(screen.getByRole('combobox', { name: i18n.t('class.measure', { ns: 'results' }) }), { target: { value: m } });
const groupBy = (g: string) => fireEvent.change(screen.getByRole('combobox', { name: i18n.t('class.groupBy', { ns: 'results' }) }), { target: { value: g } });

beforeEach(() => { localStorage.clear(); history.replaceState(null, '', `/?view=results&class=${CODE}`); });
afterEach(async () => { cleanup(); vi.unstubAllGlobals(); await act(async () => { await i18n.changeLanguage('en'); }); });

describe('the class chart in English', () => {
  it('starts on the published minimum, with each published figure marked and the fair comparison said', async () => {
    asTeacher(); classServer();
    const view = await open();
    expect((screen.getByRole('combobox', { name: 'measure' }) as HTMLSelectElement).value).toBe('cpuid_published_min_cycles');
    await waitFor(() => expect(view.querySelectorAll('svg .ref-mark')).toHaveLength(4));
    const marks = [...view.querySelectorAll('svg .ref-mark')];
    expect(marks.map((m) => m.querySelector('.ref-label')!.textContent)).toEqual(['native (min) 288', 'bitvisor (min) 1,792–1,856', 'kvm (min) 1,952–2,271', 'kvm on bitvisor (min) 7,551–7,776']);
    expect(marks[2].querySelector('title')!.textContent).toBe('kvm (min) 1,952–2,271 cycles: published, Qiita article, 2019, AMD Ryzen 7 2700');
    expect(marks[0].querySelectorAll('line')).toHaveLength(1);    // one figure: a line
    expect(marks[2].querySelectorAll('rect, line')).toHaveLength(3); // a set of runs: a band between two lines
    const note = screen.getByTestId('ref-note');
    expect(note.querySelector('cite')!.textContent).toBe('Estimating VMM<->VM switch time on BitVisor');
    expect(note.textContent).toContain('so the comparison is fair: cycles against cycles');

    // the fenced median: nothing published compares; the note names the measure that does
    measure('cpuid_exit_cycles');
    expect(view.querySelectorAll('svg .ref-mark')).toHaveLength(0);
    expect(screen.getByTestId('ref-note').textContent).toBe('No published figure is measured this way: the published runs had no fences and give minimums. To compare with them, pick the measure “cpuid exit, the published method: unfenced rdtsc;cpuid;rdtsc (min)”.');
    // picker names, as the lessons quote them
    expect([...screen.getByRole('combobox', { name: 'measure' }).querySelectorAll('option')].map((o) => o.textContent)).toEqual(Object.values(METRICS).map((m) => m.label));
    measure('memtouch_4k_first_ns');
    expect([...view.querySelectorAll('svg .ref-label')].map((e) => e.textContent)).toEqual(['blog: EPT on (real) 1,286', 'blog: EPT off (real) 4,559']);
    expect(screen.getByTestId('ref-note').textContent).toMatch(/^Orange lines: the blog's time to touch 1 GiB .* a rough comparison/);
    measure('vmcall_ns');
    expect(screen.queryByTestId('ref-note')).toBeNull(); // no upload has a vmcall figure: no chart, no note
    expect(referencesFor('vmcall_ns', i18n.getFixedT('en', 'results')).marks.map((m) => m.label)).toEqual(['ELISA: VMCALL round trip 699', 'ELISA: VMFUNC gate 196']);
    measure('ptrchase_4k_largest_ns');
    expect(screen.getByTestId('ref-note').textContent).toBe('No published figure is measured this way: compare the uploads with each other.');
  });

  it('names the points for the teacher only; a student sees short ids in the table and no names', async () => {
    asTeacher(); classServer();
    let view = await open();
    expect([...view.querySelectorAll('svg text.point-name')].map((e) => e.textContent).sort()).toEqual(['Ana', 'Bo']);
    expect(screen.getByTestId('names-note').textContent).toBe('The names beside the points are shown only to you, the teacher; students see their own points marked and no names.');
    cleanup();
    localStorage.clear();
    classServer();
    view = await open();
    expect(view.querySelectorAll('svg text.point-name')).toHaveLength(0);
    expect(screen.queryByTestId('names-note')).toBeNull();
    expect(view.textContent).not.toMatch(/Ana|Bo\b/);
    expect([...view.querySelectorAll('td.who')].map((e) => e.textContent)).toEqual(['#vm1abc', '#host1a']);
  });

  it('files an upload measured inside a VM under "host\'s setting not visible", never under the VM\'s own KVM backend', async () => {
    asTeacher(); classServer();
    const view = await open();
    groupBy('tdp');
    const axis = [...view.querySelectorAll('svg .group-axis .tick title')].map((e) => e.textContent);
    expect(axis.sort()).toEqual(['NPT on', "measured inside a VM: the host's EPT/NPT setting is not visible"]);
    expect(view.textContent).not.toContain('shadow paging');
    // the backend the probe found in the VM stays in the table and the point's details
    const vmRow = view.querySelector('tr[data-id=vm1abcdef]')!;
    expect(vmRow.textContent).toContain("measured inside a VM: the host's EPT/NPT setting is not visible · the VM's own KVM: kvm_pvm");
    expect(view.querySelector('circle.point[data-id=vm1abcdef] title')!.textContent).toContain("the VM's own KVM: kvm_pvm");
    expect(summarize(pvm)).toMatchObject({ tdp: TDP_IN_VM, kvm_backend: 'kvm_pvm', hypervisor: 'kvm' });
  });
});

describe('closing, reopening and deleting a class', () => {
  it('the teacher closes and reopens it; students of a closed class are told so and have no upload buttons', async () => {
    asTeacher(); const { calls } = classServer();
    const view = await open();
    expect(screen.getByTestId('class-state').textContent).toBe('Open: students can upload results, traces and progress.');
    expect(view.querySelector('.upload-row')).toBeTruthy();
    await act(async () => { fireEvent.click(within(screen.getByTestId('class-admin')).getByRole('button', { name: 'Close class' })); });
    await waitFor(() => expect(screen.getByTestId('class-state').textContent).toMatch(/^Closed since .+: uploads of results, traces and progress are refused; everything stored can still be read\.$/));
    expect(calls).toEqual([`POST /api/classes/${CODE}/close teacher`]);
    expect(view.querySelector('.upload-row')).toBeNull();
    await act(async () => { fireEvent.click(screen.getByRole('button', { name: 'Reopen class' })); });
    await waitFor(() => expect(screen.getByTestId('class-state').textContent).toMatch(/^Open/));
    expect(calls[1]).toBe(`POST /api/classes/${CODE}/reopen teacher`);

    // a student's view of the closed class
    await act(async () => { fireEvent.click(screen.getByRole('button', { name: 'Close class' })); });
    cleanup(); localStorage.clear();
    await open();
    expect(screen.queryByTestId('class-admin')).toBeNull();
    expect(screen.getByTestId('class-closed').textContent).toBe('This class is closed: its teacher has stopped uploads. What is stored can still be read.');
    expect(screen.getByTestId('class-view').querySelector('.upload-row')).toBeNull();
  });

  it('deletes it only after a confirmation that names the class; then nothing of it is kept in the page', async () => {
    asTeacher(); localStorage.setItem(`vmemlab-receipts:${CODE}`, JSON.stringify([{ id: 'x', receipt: 'r', label: 'l' }]));
    localStorage.setItem('vmemlab-class', JSON.stringify(CODE));
    const { calls } = classServer();
    await open();
    await act(async () => { fireEvent.click(screen.getByRole('button', { name: 'Delete class…' })); });
    const confirm = screen.getByTestId('class-delete-confirm');
    expect(confirm.getAttribute('role')).toBe('alertdialog');
    expect(confirm.querySelector('p')!.textContent).toBe(`Delete the class “Lab 1” (${CODE}) with everything in it: 2 uploads, its traces, and its students' names and progress? This cannot be undone.`);
    await act(async () => { fireEvent.click(within(confirm).getByRole('button', { name: 'Cancel' })); });
    expect(screen.queryByTestId('class-delete-confirm')).toBeNull();
    expect(calls).toEqual([]);
    await act(async () => { fireEvent.click(screen.getByRole('button', { name: 'Delete class…' })); });
    await act(async () => { fireEvent.click(screen.getByRole('button', { name: 'Delete “Lab 1” for good' })); });
    await waitFor(() => expect(screen.queryByTestId('class-view')).toBeNull());
    expect(calls).toEqual([`DELETE /api/classes/${CODE} teacher`]);
    expect(screen.getByRole('status').textContent).toBe(`The class “Lab 1” (${CODE}) was deleted with everything in it.`);
    for (const k of [`vmemlab-teacher:${CODE}`, `vmemlab-receipts:${CODE}`, 'vmemlab-class']) expect(localStorage.getItem(k), k).toBeNull();
    expect(location.search).toBe('?view=results');
    expect(location.hash).toBe('');
  });

  it('a refusal is shown with the server\'s words', async () => {
    localStorage.setItem(`vmemlab-teacher:${CODE}`, JSON.stringify('wrong-token-0123456789'));
    classServer();
    await open();
    await act(async () => { fireEvent.click(screen.getByRole('button', { name: 'Close class' })); });
    const err = await screen.findByTestId('class-admin-error');
    expect(err.textContent).toBe('Could not change the class: this token is not the teacher token of this class');
    expect(err.querySelector('[lang="en"]')!.textContent).toBe('this token is not the teacher token of this class');
  });
});

for (const lang of ['ja', 'zh'] as const) {
  describe(`the class chart and its life in ${lang}`, () => {
    beforeEach(async () => { await act(async () => { await i18n.changeLanguage(lang); }); });

    it('marks, notes, VM grouping and the teacher\'s controls leave no English', async () => {
      asTeacher(); classServer();
      const view = await open();
      const t = i18n.getFixedT(lang, 'results');
      const check = (what: string) => {
        expect(englishRuns(translatedText(view), [/^(?:rdtsc|cpuid)$/]), what).toEqual([]);
        for (const c of view.querySelectorAll('[lang="en"]')) expect(c.tagName, what).toBe('CITE');
      };
      for (const m of Object.keys(METRICS) as MetricKey[]) { measure(m); check(m); }
      measure('cpuid_published_min_cycles');
      for (const g of ['hypervisor', 'tdp']) { groupBy(g); check(g); }
      groupBy('tdp');
      expect(view.textContent).toContain(t('summary.tdpInVm'));
      expect(view.textContent).toContain(t('summary.ownKvm', { backend: 'kvm_pvm' }));
      await act(async () => { fireEvent.click(screen.getByRole('button', { name: t('life.delete') })); });
      expect(screen.getByTestId('class-delete-confirm').textContent).toContain('Lab 1');
      check('confirmation');
      await act(async () => { fireEvent.click(screen.getByRole('button', { name: t('life.close') })); });
      await waitFor(() => expect(screen.getByRole('button', { name: t('life.reopen') })).toBeTruthy());
      check('closed');
      cleanup(); localStorage.clear();
      await open();
      expect(englishRuns(screen.getByTestId('class-closed').textContent!)).toEqual([]);
    });
  });
}
