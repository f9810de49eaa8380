// @vitest-environment jsdom
/* The "Your program" panel with the real engine (the .wasm the page loads), the replay run
 * in this thread (jsdom has no Worker): the figures it shows are the native CLI's for the
 * same trace and settings; two traces side by side; settings that differ are not mixed;
 * bad files get a translated message with the engine's words and never break the page;
 * cancel stops a replay; no English left in Japanese and Chinese. */
import { execFileSync } from 'node:child_process';
import { Blob as NodeBlob } from 'node:buffer';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import i18n from '../i18n';
import { testEngine } from '../test/engine';
import { englishRuns, translatedText } from '../test/english';
import { writeTrace as writeTraceIn } from '../test/traceFiles';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { runReplay, type FromWorker, type ReplayOptions } from './protocol';
import type { Runner } from './runner';
import { TracePanel } from './TracePanel';

const root = join(__dirname, '..', '..', '..');
const vmsim = join(root, 'wasm-core', 'build', 'vmsim');
const examples = join(root, 'hw-lab', 'build', 'traces');
let engine: Vmsim;
let work: string;

/** The replay in this thread, as the worker runs it; cancel drops what comes after. */
const inThread: Runner = (blob, options, onMessage) => {
  const ctl = new AbortController();
  let over = false;
  const say = (m: FromWorker) => { if (!over) onMessage(m); };
  void (async () => {
    const b = new NodeBlob([new Uint8Array(await blob.arrayBuffer())]) as unknown as Blob;
    await runReplay(engine.openReplay, b, options, say, ctl.signal);
  })();
  return { cancel: () => { over = true; ctl.abort(); } };
};

const writeTrace = (name: string, accesses: [number, number][], fields: Record<string, unknown> = {}) => writeTraceIn(work, name, accesses, fields);
const fileOf = (path: string, name = path.split('/').pop()!) => new File([readFileSync(path)], name);
const cli = (path: string, ...args: string[]) => JSON.parse(execFileSync(vmsim, ['replay', path, '--quiet', '--format', 'json', ...args], { encoding: 'utf8' }));

let chase: string; let scan: string; let small: string;
beforeAll(async () => {
  engine = await testEngine();
  work = mkdtempSync(join(tmpdir(), 'vmemlab-panel-'));
  small = writeTrace('small.vmtrace', Array.from({ length: 4000 }, (_, i): [number, number] => [i % 4, 0x400000 + 4096 * ((i * 13) % 300) + (i * 8) % 4096]), { program: 'small', args: ['test'] });
  chase = existsSync(join(examples, 'pointer-chase.vmtrace')) ? join(examples, 'pointer-chase.vmtrace') : small;
  scan = existsSync(join(examples, 'sequential-scan.vmtrace')) ? join(examples, 'sequential-scan.vmtrace') : small;
  // the examples come from the built app's traces/ folder: here, from hw-lab/build
  vi.stubGlobal('fetch', async (url: string) => {
    const m = /traces\/([\w-]+)\.vmtrace$/.exec(String(url));
    const p = m ? join(examples, `${m[1]}.vmtrace`) : '';
    return p && existsSync(p) ? new Response(readFileSync(p)) : new Response('not found', { status: 404 });
  });
});
afterEach(() => cleanup());
afterAll(async () => { vi.unstubAllGlobals(); rmSync(work, { recursive: true, force: true }); await i18n.changeLanguage('en'); });

const drop = (files: File[]) => fireEvent.drop(screen.getByTestId('trace-dropzone'), { dataTransfer: { files } });
const done = (n: number) => waitFor(() => expect(screen.getByTestId('trace-list').querySelectorAll('li[data-status="done"]').length).toBe(n), { timeout: 30_000 });

function rowsOf(trace: number) {
  return [...document.querySelectorAll(`[data-testid="trace-table"] tr[data-trace="${trace}"]`)].map((tr) => ({
    mode: tr.getAttribute('data-mode'),
    refs: tr.querySelector('[data-field="refs_per_access"]')!.textContent,
    miss: tr.querySelector('[data-field="tlb_miss_pct"]')!.textContent,
    exits: tr.querySelector('[data-field="exits"]')!.textContent,
    overhead: tr.querySelector('[data-field="overhead_pct"]')!.textContent,
  }));
}
function expected(report: { modes: { mode: string; refs_per_access: number; tlb_miss_pct: number; exits: number; overhead_pct: number | null }[] }) {
  return report.modes.map((m) => ({ mode: m.mode, refs: m.refs_per_access.toFixed(3), miss: m.tlb_miss_pct.toFixed(3),
    exits: m.exits.toLocaleString('en'), overhead: m.overhead_pct === null ? '–' : `${m.overhead_pct.toFixed(2)} %` }));
}

describe('the Your program panel', () => {
  it('replays two traces side by side with the CLI\'s figures, then both again warm', async () => {
    render(<TracePanel where="compare" runner={inThread} />);
    fireEvent.click(screen.getByRole('button', { name: /pointer chase \(8 MiB\)/ }));
    await waitFor(() => expect(screen.getByTestId('trace-list')).toBeTruthy());
    drop([fileOf(scan, 'scan.vmtrace')]);
    await done(2);
    expect(rowsOf(1)).toEqual(expected(cli(chase)));
    expect(rowsOf(2)).toEqual(expected(cli(scan)));
    // where each reference was found, as the CLI counts it; the levels add up to the references
    const rep = cli(chase) as unknown as { modes: { mode: string; refs: number; ref_cycles: number; refs_by_where: Record<string, number> }[]; cost_model: { ref_cycles_by_where: Record<string, number> } };
    for (const m of rep.modes) {
      const tr = document.querySelector(`[data-testid="trace-where"] tr[data-trace="1"][data-mode="${m.mode}"]`)!;
      for (const w of ['walk_cache', 'l1', 'l2', 'llc', 'memory'])
        expect(tr.querySelector(`[data-field="where-${w}"]`)!.textContent).toBe(m.refs_by_where[w].toLocaleString('en'));
      expect(m.refs_by_where.l1 + m.refs_by_where.l2 + m.refs_by_where.llc + m.refs_by_where.memory).toBe(m.refs);
      const priced = Object.entries(m.refs_by_where).reduce((n, [w, k]) => n + k * rep.cost_model.ref_cycles_by_where[w], 0);
      expect(m.ref_cycles).toBe(Math.round(priced));
      expect(tr.querySelector('[data-field="ref_cycles"]')!.textContent).toBe(m.ref_cycles.toLocaleString('en'));
    }
    expect(screen.getByTestId('trace-cost').textContent).toMatch(/4 cycles from L1, 14 from L2, 60 from the LLC, 190 from memory/);
    expect(document.querySelectorAll('[data-testid="trace-charts"] figure svg rect').length).toBeGreaterThan(10);
    expect(screen.getByTestId('trace-charts').textContent).toContain('x86 server');
    expect(screen.getByTestId('trace-charts').textContent).toContain('cold');
    // another setting: the cold figures leave the charts until replayed with it
    fireEvent.change(document.querySelector('select[data-setting="start"]')!, { target: { value: 'warm' } });
    expect(screen.queryByTestId('trace-charts')).toBeNull();
    expect(screen.getAllByText(/replayed with other settings/).length).toBe(2);
    fireEvent.click(screen.getByTestId('trace-again'));
    await done(2);
    await waitFor(() => expect(rowsOf(1)).toEqual(expected(cli(chase, '--start', 'warm'))), { timeout: 30_000 });
    expect(rowsOf(2)).toEqual(expected(cli(scan, '--start', 'warm')));
  }, 120_000);

  it('refuses bad files with a clear message and keeps working', async () => {
    const good = readFileSync(small);
    const hlen = good.readUInt32LE(12);
    const wrongVersion = Buffer.from(good); wrongVersion.writeUInt16LE(4, 8);
    const corrupt = Buffer.from(good); corrupt[16 + hlen + 12] ^= 0xff;
    render(<TracePanel where="compare" runner={inThread} />);
    drop([
      new File([good.subarray(0, good.length - 9)], 'truncated.vmtrace'),
      new File([wrongVersion], 'v4.vmtrace'),
      new File([corrupt], 'corrupt.vmtrace'),
      new File(['{"format": "vmemlab-hw-lab-result"}'], 'result.json'),
      new File([good], 'good.vmtrace'),
    ]);
    await waitFor(() => expect(screen.getByTestId('trace-list').querySelectorAll('li[data-status="error"]').length).toBe(4), { timeout: 30_000 });
    await done(1);
    const alerts = within(screen.getByTestId('trace-list')).getAllByRole('alert').map((a) => a.textContent);
    expect(alerts[0]).toMatch(/^This file was refused: the trace is truncated: its header announces/);
    expect(alerts[1]).toContain('this trace is format version 4; this vmsim reads version 1');
    expect(alerts[2]).toMatch(/corrupt/);
    expect(alerts[3]).toContain('this is a JSON file, not a vmemlab trace');
    // the engine's words are marked as English
    for (const a of within(screen.getByTestId('trace-list')).getAllByRole('alert')) expect(a.querySelector('[lang="en"]')).toBeTruthy();
    expect(rowsOf(1)).toEqual(expected(cli(small)));
  }, 60_000);

  it('shows the progress and cancels a replay', async () => {
    let told: ((m: FromWorker) => void) | null = null;
    const cancelled = vi.fn();
    const stuck: Runner = (_b, _o, onMessage) => { told = onMessage; return { cancel: cancelled }; };
    render(<TracePanel where="compare" runner={stuck} />);
    drop([fileOf(small)]);
    await waitFor(() => expect(told).not.toBeNull());
    act(() => told!({ type: 'progress', progress: { pass: 2, fraction: 0.62, done: 100, accesses: 4000 } }));
    const bar = screen.getByTestId('trace-progress');
    expect(bar.textContent).toContain('pass 2 of 2');
    expect(bar.querySelector('progress')!.getAttribute('value')).toBe('0.62');
    // a screen reader hears the one live region, and only at each tenth of the bar
    const said = within(bar).getByRole('status');
    expect(said.textContent).toMatch(/pass 2 of 2 · 60 %$/);
    act(() => told!({ type: 'progress', progress: { pass: 2, fraction: 0.68, done: 200, accesses: 4000 } }));
    expect(bar.querySelector('progress')!.getAttribute('value')).toBe('0.68');
    expect(within(bar).getByRole('status').textContent).toMatch(/· 60 %$/);
    act(() => told!({ type: 'progress', progress: { pass: 2, fraction: 0.71, done: 300, accesses: 4000 } }));
    expect(within(bar).getByRole('status').textContent).toMatch(/· 70 %$/);
    expect(within(bar).getAllByRole('status')).toHaveLength(1);
    expect(screen.queryByTestId('trace-left')).toBeNull();      // too early to say (under 2 s)
    fireEvent.click(screen.getByTestId('trace-cancel'));
    expect(cancelled).toHaveBeenCalled();
    expect(screen.queryByTestId('trace-progress')).toBeNull();
    expect(screen.getByTestId('trace-list').querySelector('li')!.getAttribute('data-status')).toBe('cancelled');
  });

  it('gets the next replay ready while none runs, and lets go of it when the panel goes', async () => {
    let told: ((m: FromWorker) => void) | null = null;
    const released = vi.fn();
    const warm = vi.fn(() => released);
    const stuck: Runner = Object.assign((_b: Blob, _o: ReplayOptions, onMessage: (m: FromWorker) => void) => { told = onMessage; return { cancel: () => {} }; }, { warm });
    const view = render(<TracePanel where="compare" runner={stuck} />);
    await waitFor(() => expect(warm).toHaveBeenCalledTimes(1));
    drop([fileOf(small)]);
    await waitFor(() => expect(told).not.toBeNull());
    act(() => told!({ type: 'progress', progress: { pass: 1, fraction: 0.1, done: 1, accesses: 4000 } }));
    await new Promise((r) => setTimeout(r, 400));
    expect(warm).toHaveBeenCalledTimes(1);          // not while a replay runs
    act(() => told!({ type: 'error', stage: 'body', message: 'the trace is cut short' }));
    await waitFor(() => expect(warm).toHaveBeenCalledTimes(2));
    expect(released).not.toHaveBeenCalled();
    view.unmount();
    expect(released).toHaveBeenCalledTimes(1);
  });

  it('does not draw the finished replays\' charts again at each progress update of the next one', async () => {
    let told: ((m: FromWorker) => void) | null = null;
    let calls = 0;
    const firstThenStuck: Runner = (b, o, onMessage) => {
      if (calls++ === 0) return inThread(b, o, onMessage);
      told = onMessage;
      return { cancel: () => {} };
    };
    render(<TracePanel where="compare" runner={firstThenStuck} />);
    drop([fileOf(small)]);
    await done(1);
    const charts = screen.getByTestId('trace-charts');
    const drawn = [...charts.querySelectorAll('svg > title')];
    expect(drawn.length).toBeGreaterThan(0);
    drop([fileOf(small, 'again.vmtrace')]);
    await waitFor(() => expect(told).not.toBeNull());
    for (const fraction of [0.2, 0.4, 0.6]) {
      act(() => told!({ type: 'progress', progress: { pass: 2, fraction, done: 100, accesses: 4000 } }));
      expect(screen.getByTestId('trace-progress').querySelector('progress')!.getAttribute('value')).toBe(String(fraction));
    }
    // the same elements: modeBars removes and draws every element of a chart it draws
    const now = screen.getByTestId('trace-charts').querySelectorAll('svg > title');
    expect(now.length).toBe(drawn.length);
    drawn.forEach((el, i) => expect(el === now[i], `chart ${i} drawn again`).toBe(true));
  }, 60_000);

  it('draws only the progress bar again at each progress update, not the whole panel', async () => {
    let told: ((m: FromWorker) => void) | null = null;
    const stuck: Runner = (_b, _o, onMessage) => { told = onMessage; return { cancel: () => {} }; };
    render(<TracePanel where="compare" runner={stuck} />);
    drop([fileOf(small)]);
    await waitFor(() => expect(told).not.toBeNull());
    const how = { workers: 2, shared: true, threads: true };
    act(() => told!({ type: 'progress', progress: { pass: 1, fraction: 0.1, done: 100, accesses: 4000, ...how } }));
    // each update translates the bar's own words (its pass, the cancel button, its label): a
    // handful; the whole panel (its settings, the list) takes some dozens
    const said = vi.spyOn(i18n, 't');
    try {
      for (const fraction of [0.2, 0.4, 0.6]) {
        act(() => told!({ type: 'progress', progress: { pass: 2, fraction, done: 100, accesses: 4000, ...how } }));
        expect(screen.getByTestId('trace-progress').querySelector('progress')!.getAttribute('value')).toBe(String(fraction));
      }
      const first = said.mock.calls.length;      // the first in pass 2 draws the list too (its pass changed)
      said.mockClear();
      for (const fraction of [0.7, 0.8, 0.9]) act(() => told!({ type: 'progress', progress: { pass: 2, fraction, done: 100, accesses: 4000, ...how } }));
      expect(said.mock.calls.length, `${first} translations for 3 updates, one of them a new pass`).toBeLessThanOrEqual(3 * 6);
      expect(first).toBeGreaterThan(said.mock.calls.length);
    } finally {
      said.mockRestore();
    }
    expect(screen.getByTestId('trace-progress').textContent).toContain('pass 2 of 2');
    expect(screen.getByTestId('trace-progress').getAttribute('data-threads')).toBe('true');
    expect(screen.getByTestId('trace-list').querySelector('li')!.getAttribute('data-threads')).toBe('true');
  });

  it('says how long a replay has left once it has run a while', async () => {
    let told: ((m: FromWorker) => void) | null = null;
    let now = 1_000;
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => now);
    try {
      const stuck: Runner = (_b, _o, onMessage) => { told = onMessage; return { cancel: () => {} }; };
      render(<TracePanel where="compare" runner={stuck} />);
      drop([fileOf(small)]);
      await waitFor(() => expect(told).not.toBeNull());
      now += 1_000;
      act(() => told!({ type: 'progress', progress: { pass: 1, fraction: 0.1, done: 100, accesses: 4000 } }));
      expect(screen.queryByTestId('trace-left')).toBeNull();
      now += 5_000;       // 6 s for 0.3 of the bar: 14 s to go, said as 15
      act(() => told!({ type: 'progress', progress: { pass: 2, fraction: 0.3, done: 500, accesses: 4000 } }));
      expect(screen.getByTestId('trace-left').textContent).toBe('about 15 s left');
      now += 114_000;     // 2 min for 0.6: 1.33 min to go
      act(() => told!({ type: 'progress', progress: { pass: 2, fraction: 0.6, done: 2000, accesses: 4000 } }));
      expect(screen.getByTestId('trace-left').textContent).toBe('about 1 min left');
    } finally {
      clock.mockRestore();
    }
  });

  it('marks a partial trace as partial', async () => {
    const p = writeTrace('partial.vmtrace', [[0, 0x1000], [2, 0x2000]], { partial: true, partial_reason: 'stopped at the --limit of 2 accesses' });
    render(<TracePanel where="compare" runner={inThread} />);
    drop([fileOf(p)]);
    await done(1);
    expect(screen.getByTestId('trace-list').textContent).toContain('partial trace: stopped at the --limit of 2 accesses');
  });
});

for (const lang of ['ja', 'zh'] as const) {
  describe(`the panel in ${lang}`, () => {
    beforeAll(async () => { await act(async () => { await i18n.changeLanguage(lang); }); });
    it('shows no English, figures and errors included', async () => {
      const good = readFileSync(small);
      render(<TracePanel where="compare" runner={inThread} />);
      drop([new File([good.subarray(0, 40)], 'cut.vmtrace'), new File([good], 'good.vmtrace')]);
      await done(1);
      await waitFor(() => expect(screen.getByTestId('trace-list').querySelector('li[data-status="error"]')).toBeTruthy());
      const panel = screen.getByTestId('trace-panel');
      const text = translatedText(panel);
      expect(englishRuns(text)).toEqual([]);
      const attrs = [...panel.querySelectorAll('[title],[aria-label]')].map((e) => `${e.getAttribute('title') ?? ''} ${e.getAttribute('aria-label') ?? ''}`).join(' | ');
      expect(englishRuns(attrs)).toEqual([]);
      const svgText = [...panel.querySelectorAll('svg')].map((s) => s.textContent).join(' ');
      expect(englishRuns(svgText)).toEqual([]);
    }, 60_000);
  });
}
