// @vitest-environment jsdom
/* The views driven by real engine traces (the WebAssembly engine, run in the test).
 * The expectations come from the trace itself or from independent arithmetic on the
 * model (24 = g + (g+1)n, qualification bits by shifting), never from the view code. */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, fireEvent, render, screen, waitFor, within, act } from '@testing-library/react';
import type { Result } from '../../../wasm-core/js/types';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { EXAMPLES, EXAMPLE_NAMES } from '../model/examples';
import { exampleRuns } from '../test/engine';
import { WalkView } from './WalkView';
import { MemoryView } from './MemoryView';
import { CachePanel } from './CachePanel';
import { CompareView } from './CompareView';
import { Playground } from './Playground';
import { Controls } from './Controls';
import { App } from '../App';
import { DEFAULT_COMPARE } from '../model/compare';
import { parseUrl, toSearch } from '../model/url';
import i18n from '../i18n';

let engine: Vmsim;
let runs: Record<string, Result> = {};
beforeAll(async () => { ({ engine, runs } = await exampleRuns()); });
afterEach(() => cleanup());

describe('walk view on the ept-4k trace', () => {
  it('highlights the cell of every step and shows the entry it read', () => {
    const r = runs['ept-4k'];
    const a = r.accesses[0];
    expect(a.memory_refs).toBe(4 + 5 * 4);
    const { container, rerender } = render(<WalkView result={r} access={a} step={0} />);
    expect(container.querySelectorAll('td[aria-current="step"]')).toHaveLength(0);
    for (const s of a.steps) {
      rerender(<WalkView result={r} access={a} step={s.n} />);
      const cur = container.querySelectorAll('td[aria-current="step"]');
      expect(cur, `step ${s.n}`).toHaveLength(1);
      const cell = cur[0] as HTMLElement;
      if (s.dim === 'guest') {
        expect(cell.dataset.col).toBe('G');
        expect(Number(cell.dataset.row)).toBe(s.level);
      } else {
        expect(cell.dataset.col).toBe(`N${s.level}`);
        expect(Number(cell.dataset.row)).toBe(s.stage);
      }
      if (s.ref !== null) expect(cell.textContent).toContain(String(s.ref));
      const entry = container.querySelector('#entry')!;
      expect(entry.querySelector('[data-field="entry"]')!.textContent).toBe(s.entry);
      expect(entry.querySelector('[data-field="entry_hpa"]')!.textContent).toBe(s.entry_hpa);
      expect(entry.querySelector('[data-field="result"]')!.textContent).toBe(s.result.replace(/_/g, ' '));
    }
    // All 24 reference numbers appear exactly once in the grid at the end.
    const refs = [...container.querySelectorAll('table.grid .ref')].map((e) => e.textContent).filter((t) => /^\d+$/.test(t!));
    expect(refs.map(Number).sort((x, y) => x - y)).toEqual(Array.from({ length: 24 }, (_, i) => i + 1));
    expect(container.querySelector('[data-field="outcome"]')!.textContent).toBe('translated');
  });

  it('splits the gva into 9-bit indices and an offset', () => {
    const r = runs['ept-4k'];
    render(<WalkView result={r} access={r.accesses[0]} step={0} />);
    const split = screen.getByLabelText('address split');
    // (the gpa row below is held in place, hidden, until a nested step shows it)
    const values = [...split.querySelectorAll('.split-row:not(.reserved) .field .f-value')].map((e) => e.textContent);
    const gva = BigInt(r.accesses[0].gva!);
    const want = [39n, 30n, 21n, 12n].map((sh) => String((gva >> sh) & 511n));
    expect(values).toEqual([...want, '0x' + (gva & 0xfffn).toString(16)]);
  });
});

describe('every example, every access, renders', () => {
  it('walk, memory and cache views draw every trace without throwing', () => {
    let drawn = 0;
    for (const n of EXAMPLE_NAMES) {
      const r = runs[n];
      r.accesses.forEach((a, i) => {
        for (const step of [0, Math.ceil(a.steps.length / 2), a.steps.length]) {
          const { unmount, container } = render(
            <>
              <WalkView result={r} access={a} step={step} />
              <MemoryView result={r} access={a} step={step} />
              <CachePanel result={r} accessIndex={i} />
            </>,
          );
          // The step list is the fallback that shows every step, whatever the mode.
          expect(container.querySelectorAll('table.steplist tbody tr'), `${n} #${i}`).toHaveLength(a.steps.length);
          unmount();
          drawn++;
        }
      });
    }
    expect(drawn).toBeGreaterThan(100);
  });
});

describe('outcome details', () => {
  const bitsOf = (hex: string) => [...Array(40).keys()].filter((b) => (BigInt(hex) >> BigInt(b)) & 1n);
  const setBits = (c: HTMLElement) => [...c.querySelectorAll('.bits li.set')].map((e) => Number(/bit (\d+)/.exec(e.textContent!)![1]));

  it('decodes the EPT violation qualification into words', () => {
    const r = runs['ept-violation'];
    const a = r.accesses.find((x) => x.outcome === 'ept_violation')!;
    const { container } = render(<WalkView result={r} access={a} step={a.steps.length} />);
    const q = (a.fault as { qualification: string }).qualification;
    expect(setBits(container)).toEqual(bitsOf(q).filter((b) => [0, 1, 2, 3, 4, 5, 7, 8].includes(b)));
    expect(container.textContent).toContain('Exit qualification');
    expect(container.textContent).toContain('guest linear address valid');
  });

  it('decodes NPT EXITINFO1 and the guest #PF error code', () => {
    for (const [name, field, outcome] of [['npt-fault', 'exitinfo1', 'npt_fault'], ['guest-page-fault', 'error_code', 'guest_page_fault']] as const) {
      const r = runs[name];
      const a = r.accesses.find((x) => x.outcome === outcome)!;
      const { container, unmount } = render(<WalkView result={r} access={a} step={a.steps.length} />);
      const v = (a.fault as unknown as Record<string, string>)[field];
      expect(setBits(container), name).toEqual(bitsOf(v).filter((b) => [0, 1, 2, 3, 4, 32, 33].includes(b)));
      unmount();
    }
  });
});

describe('memory view', () => {
  it('draws one frame per distinct host frame and outlines the current one', () => {
    const r = runs['ept-4k'];
    const a = r.accesses[0];
    const frames = new Set(a.steps.map((s) => BigInt(s.entry_hpa) >> 12n));
    frames.add(BigInt(a.hpa!) >> 12n);
    const { container, rerender } = render(<MemoryView result={r} access={a} step={1} />);
    expect(container.querySelectorAll('g.frame')).toHaveLength(frames.size);
    for (const s of [a.steps[0], a.steps[4], a.steps[19]]) {
      rerender(<MemoryView result={r} access={a} step={s.n} />);
      const cur = container.querySelectorAll('g.frame.current');
      expect(cur).toHaveLength(1);
      expect(BigInt(cur[0].getAttribute('data-pfn')!)).toBe(BigInt(s.entry_hpa) >> 12n);
      expect(cur[0].getAttribute('data-role')).toBe(s.dim === 'guest' ? 'guest' : 'nested');
    }
  });

  it('draws no frame for steps a cache answered', () => {
    const r = runs['caches-ept'];
    const a = r.accesses[2];
    const read = new Set(a.steps.filter((s) => s.kind === 'read' || s.kind === 'ad_write').map((s) => BigInt(s.entry_hpa) >> 12n));
    read.add(BigInt(a.hpa!) >> 12n);
    const { container } = render(<MemoryView result={r} access={a} step={0} />);
    const pfns = [...container.querySelectorAll('g.frame')].map((g) => BigInt(g.getAttribute('data-pfn')!));
    expect(new Set(pfns)).toEqual(read);
    expect(pfns).not.toContain(0n);
  });

  it('names shadow and flat tables by their role', () => {
    const roles = (name: string) => {
      const r = runs[name];
      const { container, unmount } = render(<MemoryView result={r} access={r.accesses[0]} step={0} />);
      const out = new Set([...container.querySelectorAll('g.frame')].map((g) => g.getAttribute('data-role')));
      unmount();
      return out;
    };
    expect(roles('shadow').has('shadow')).toBe(true);
    expect(roles('flat-x86-lazy').has('flat')).toBe(true);
  });
});

describe('cache panel', () => {
  it('lists TLB hit or miss and walk-cache hits per access from the trace', () => {
    const r = runs['caches-ept'];
    const { container } = render(<CachePanel result={r} accessIndex={1} />);
    const rows = [...container.querySelectorAll('tbody tr')];
    expect(rows).toHaveLength(r.accesses.length);
    r.accesses.forEach((a, i) => {
      const cells = rows[i].querySelectorAll('td');
      expect(cells[2].textContent).toBe(a.cache?.tlb ?? '–');
      expect(Number(cells[3].textContent)).toBe(a.steps.filter((s) => s.kind === 'pwc_hit').length);
      expect(Number(cells[4].textContent)).toBe(a.steps.filter((s) => s.kind === 'ntlb_hit').length);
    });
    expect(rows[1].getAttribute('aria-current')).toBe('true');
    expect(render(<CachePanel result={runs['ept-4k']} accessIndex={0} />).container.innerHTML).toBe('');
  });
});

describe('compare view', () => {
  it('runs one mapping under six modes with the expected reference counts', () => {
    const { container } = render(<CompareView engine={engine} input={DEFAULT_COMPARE} />);
    const refs = (m: string) => Number(container.querySelector(`tr[data-mode="${m}"] [data-field="refs"]`)!.textContent);
    const exits = (m: string) => Number(container.querySelector(`tr[data-mode="${m}"] [data-field="exits"]`)!.textContent);
    const g = 4, n = 4;
    expect(refs('native')).toBe(g);
    expect(refs('ept')).toBe(g + (g + 1) * n);
    expect(refs('npt')).toBe(g + (g + 1) * n);
    // Tables built in advance (the default): no mode exits, flat reads one entry per gpa.
    for (const m of ['native', 'ept', 'npt', 'flat', 'shadow']) expect(exits(m), m).toBe(0);
    expect(refs('flat')).toBe(g + (g + 1));
    expect(refs('shadow')).toBe(g);
    cleanup();
    // Filled on demand: flat misses g+1 times, each an exit; shadow's one hidden page fault.
    const od = render(<CompareView engine={engine} input={{ ...DEFAULT_COMPARE, tables: 'on-demand' }} />).container;
    const odNum = (m: string, f: string) => Number(od.querySelector(`tr[data-mode="${m}"] [data-field="${f}"]`)!.textContent);
    expect(odNum('flat', 'exits')).toBe(g + 1);
    expect(odNum('flat', 'refs')).toBe(g + 2 * (g + 1));
    expect(odNum('shadow', 'exits')).toBe(1);
    expect(odNum('ept', 'exits')).toBe(g + 1);
  });

  it('shows the warm figures the lessons teach beside the cold ones, exits by kind, and says the ordering', () => {
    const { container } = render(<CompareView engine={engine} input={DEFAULT_COMPARE} />);
    const num = (m: string, f: string) => Number(container.querySelector(`tr[data-mode="${m}"] [data-field="${f}"]`)!.textContent);
    const text = (m: string, f: string) => container.querySelector(`tr[data-mode="${m}"] [data-field="${f}"]`)?.textContent ?? '';
    const g = 4, n = 4;
    // warm: every access walks, nothing left to fill: the lessons' 4 / 24 / 24 / 9 / 4
    // agile switched at L2: 2 shadow entries, the guest's L2 and L1 behind nested walks, the final walk
    const warm: Record<string, number> = { native: g, ept: g + (g + 1) * n, npt: g + (g + 1) * n, flat: g + (g + 1), shadow: g,
      agile: 2 + 2 * (n + 1) + n };
    for (const [m, want] of Object.entries(warm)) {
      expect(num(m, 'refs-warm'), m).toBe(want);
      expect(num(m, 'exits-warm'), m).toBe(0);
    }
    // tables built in advance: no exit of any kind, cold or warm
    for (const m of Object.keys(warm)) expect(text(m, 'exits-kinds'), m).toBe('');
    // each mode's own dimension names
    expect(text('shadow', 'split')).toBe('4 shadow');
    expect(text('flat', 'split')).toBe('4 guest + 5 flat');
    expect(text('ept', 'split')).toBe('4 guest + 20 nested');
    expect(text('agile', 'split')).toBe('2 guest + 14 shadow and nested');
    expect(text('native', 'split')).toBe('4 guest');
    // the ordering sentence, rebuilt here from the numbers
    const name: Record<string, string> = { native: 'native', ept: 'EPT', npt: 'NPT', flat: 'flat', shadow: 'shadow', agile: 'agile (switch at L2)' };
    const order = (v: Record<string, number>) => Object.entries(v).sort((a, b) => a[1] - b[1])
      .map(([m, x], i, all) => (i === 0 ? '' : x === all[i - 1][1] ? ' = ' : ' < ') + `${name[m]} ${x.toLocaleString('en')}`).join('');
    const sentence = screen.getByTestId('compare-ordering').textContent!;
    expect(sentence).toContain(`References, warm: ${order(warm)};`);
    expect(sentence).toContain('native 4 = shadow 4 < flat 9 < agile (switch at L2) 16 < EPT 24 = NPT 24');
    const cold: Record<string, number> = { native: 0, ept: 0, npt: 0, flat: 0, shadow: 0, agile: 0 };
    for (const m of Object.keys(cold)) cold[m] = 10 + 40 * num(m, 'refs') + 1700 * num(m, 'exits');
    expect(sentence).toContain(`cold: ${order(cold)}.`);
    // the two charts: references and cycles, a bar per mode and per cold/warm, labelled with the number
    for (const measure of ['refs', 'cycles']) {
      const chart = container.querySelector(`figure[data-measure="${measure}"]`)!;
      expect(chart.querySelectorAll('rect').length).toBe(6 * 2 + 2);
      expect(chart.querySelector(`g[data-mode="flat"] [data-field="${measure}-warm"]`)!.textContent)
        .toBe((measure === 'refs' ? 9 : 10 + 40 * 9).toLocaleString('en'));
    }
    expect(screen.getByTestId('compare-fair').textContent).toMatch(/warm with warm/);
  });

  it('names the exits each mode pays when its tables fill on demand', () => {
    const { container } = render(<CompareView engine={engine} input={{ ...DEFAULT_COMPARE, tables: 'on-demand' }} />);
    const text = (m: string, f: string) => container.querySelector(`tr[data-mode="${m}"] [data-field="${f}"]`)?.textContent ?? '';
    // five flat-table fills and five EPT/NPT fills (4 guest tables + the data page), one shadow fill
    for (const m of ['flat', 'ept', 'npt']) expect(text(m, 'exits-kinds'), m).toContain('5 table fills');
    expect(text('shadow', 'exits-kinds')).toContain('1 table fill');
    // agile: its shadow part's fill (a hidden page fault) and the nested fills of its 2-D part
    expect(text('agile', 'exits-kinds')).toMatch(/\d+ table fills/);
    expect(text('native', 'exits-kinds')).toBe('');
  });

  it('says what is wrong with a bad gva instead of running', () => {
    render(<CompareView engine={engine} input={{ ...DEFAULT_COMPARE, gva: 'zz' }} />);
    expect(screen.getByRole('alert').textContent).toMatch(/hex/);
  });
});

describe('playground', () => {
  function setup(text: string) {
    let current = text;
    const runs: string[] = [];
    const view = render(<Playground engine={engine} text={current} onText={(t) => (current = t)} onRun={(j) => runs.push(j)} plainEditor />);
    return { view, runs, get text() { return current; } };
  }

  it('shows a JSON syntax error with line and column and does not run', async () => {
    const { runs } = setup('{\n  "name": "x",\n  "mode": }');
    await waitFor(() => expect(screen.getByTestId('problems').textContent).toMatch(/not valid JSON at line 3/));
    fireEvent.click(screen.getByTestId('run'));
    expect(screen.getByTestId('pg-message').textContent).toMatch(/Fix the problem listed below first/);
    expect(runs).toEqual([]);
  });

  it('shows schema errors with the JSON path', async () => {
    const s = structuredClone(EXAMPLES['ept-4k']) as unknown as Record<string, any>;
    s.guest.mappings[0].gva = 'nothex';
    s.bogus = 1;
    setup(JSON.stringify(s, null, 2));
    await waitFor(() => expect(screen.getByTestId('problems')).toBeTruthy());
    const text = screen.getByTestId('problems').textContent!;
    expect(text).toContain('/guest/mappings/0/gva');
    expect(text).toContain('unknown key "bogus"');
  });

  it('reports the engine\'s ScenarioError and keeps working', async () => {
    const s = structuredClone(EXAMPLES['ept-4k']);
    s.guest.mappings![0].gva = '0x400001'; // schema-valid, but not 4 KiB aligned: the engine says so
    const { runs } = setup(JSON.stringify(s));
    await waitFor(() => expect(screen.queryByTestId('problems')).toBeNull());
    await act(async () => { await new Promise((r) => setTimeout(r, 50)); });
    fireEvent.click(screen.getByTestId('run'));
    expect(screen.getByTestId('pg-message').textContent).toMatch(/engine rejected the scenario: .*gva/);
    expect(runs).toEqual([]);
  });

  it('runs a valid scenario and edits it through the form', async () => {
    const t = setup(JSON.stringify(EXAMPLES['native-4k'], null, 2));
    await waitFor(() => expect((screen.getByLabelText('mode') as HTMLSelectElement).value).toBe('native'));
    fireEvent.change(screen.getByLabelText('mode'), { target: { value: 'ept' } });
    const edited = JSON.parse(t.text);
    expect(edited.mode).toBe('ept');
    expect(edited.nested.mappings.length).toBeGreaterThan(0);
    expect(engine.run(edited).accesses[0].memory_refs).toBe(24);
    fireEvent.click(screen.getByTestId('run'));
    expect(t.runs).toHaveLength(1);
  });
});

describe('controls and keyboard in the app', () => {
  it('steps with the arrow keys, Home and End, and keeps the step in the URL', async () => {
    history.replaceState(null, '', '/?example=ept-4k&access=0&step=3');
    const { container } = render(<App engine={engine} />);
    const counter = () => Number(container.querySelector('#counter [data-field="step"]')!.textContent);
    expect(counter()).toBe(3);
    fireEvent.keyDown(window, { key: 'ArrowRight' });
    expect(counter()).toBe(4);
    expect(location.search).toContain('step=4');
    fireEvent.keyDown(window, { key: 'ArrowLeft' });
    fireEvent.keyDown(window, { key: 'ArrowLeft' });
    expect(counter()).toBe(2);
    fireEvent.keyDown(window, { key: 'End' });
    expect(counter()).toBe(28);
    fireEvent.keyDown(window, { key: 'Home' });
    expect(counter()).toBe(0);
    const cur = container.querySelector('td[aria-current="step"]');
    expect(cur).toBeNull();
  });

  it('buttons are disabled at the ends', () => {
    render(<Controls step={0} total={5} refOf={0} refs={4} playing={false} speed={1} onStep={() => {}} onPlay={() => {}} onSpeed={() => {}} />);
    const bar = screen.getByRole('toolbar');
    expect((within(bar).getByLabelText('step back (←)') as HTMLButtonElement).disabled).toBe(true);
    expect((within(bar).getByLabelText('step forward (→)') as HTMLButtonElement).disabled).toBe(false);
  });

  it('says what is wrong with an unknown example or a scenario the engine rejects, and switching language does not run it again', async () => {
    history.replaceState(null, '', '/?example=no-such-example');
    const { unmount } = render(<App engine={engine} />);
    expect(screen.getByRole('alert').textContent).toBe('There is no example called "no-such-example". Pick one from the list.');
    unmount();
    const bad = { ...EXAMPLES['ept-4k'], mode: 'npt', nested: { ...EXAMPLES['ept-4k'].nested!, ad: true } };
    history.replaceState(null, '', toSearch({ ...parseUrl(''), scenario: JSON.stringify(bad) }));
    let runs = 0;
    const counting = { ...engine, version: engine.version, run: (x: Parameters<Vmsim['run']>[0]) => { runs++; return engine.run(x); } } as Vmsim;
    render(<App engine={counting} />);
    const alert = screen.getByRole('alert');
    expect(alert.textContent).toMatch(/^The engine rejected this scenario: /);
    expect(alert.querySelector('[lang="en"]')!.textContent).toMatch(/nested\.ad/);
    const before = runs;
    await act(async () => { await i18n.changeLanguage('ja'); });
    expect(screen.getByRole('alert').textContent).toMatch(/^エンジンがこのシナリオを受け付けませんでした/);
    expect(runs).toBe(before);
    await act(async () => { await i18n.changeLanguage('en'); });
  });
});
