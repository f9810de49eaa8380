// @vitest-environment jsdom
/* What the views say must not mislead: each claim is checked against the engine's own
 * trace or a separate run of it, never against the view's code. The walk's words (final
 * hpa, outcome, plurals, each mode's dimension names), the VMFUNC panel, the playground's
 * entry toggles, schema errors in words, the keys and the grid's keyboard access. */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { act, cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import type { Result, Scenario } from '../../../wasm-core/js/types';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import schema from '../../../wasm-core/schema/scenario.schema.json';
import { EXAMPLES, EXAMPLE_NAMES } from '../model/examples';
import { exampleRuns } from '../test/engine';
import { exitKinds, EXIT_KINDS } from '../model/decode';
import { PATTERN_WORDS, schemaProblems } from '../model/validate';
import { WalkView } from './WalkView';
import { eptpChecks, VmfuncPanel } from './VmfuncPanel';
import { Playground } from './Playground';
import { App } from '../App';
import { parseUrl } from '../model/url';
import { stepAction } from './keys';
import i18n from '../i18n';
import { englishRuns, translatedText } from '../test/english';

let engine: Vmsim;
let runs: Record<string, Result> = {};
beforeAll(async () => { ({ engine, runs } = await exampleRuns()); });
afterEach(() => cleanup());

const field = (c: ParentNode, f: string) => c.querySelector(`[data-field="${f}"]`)?.textContent ?? null;

describe('the walk in words', () => {
  it('labels the final hpa, says the outcome and counts with the right plural forms', () => {
    const r = runs['ept-4k'];
    const a = r.accesses[0];
    const { container } = render(<WalkView result={r} access={a} step={a.steps.length} />);
    expect(container.querySelector('caption.grid-hpa')!.textContent).toBe(`final hpa: ${a.hpa}`);
    expect(container.querySelector('td.cell.hpa')!.textContent).toBe('hpa');
    const counts = container.querySelector('.counts')!.textContent!;
    expect(counts).toContain(`${a.memory_refs} memory references (${a.guest_refs} guest + ${a.nested_refs} nested)`);
    expect(counts).toContain(`${a.ad_writes} A/D writes`);
    expect(counts).toContain('no VM exit');
    // why 24, in the walk itself: 4 guest references, 5 nested walks of 4
    expect(field(container, 'why')).toBe(`Why ${a.memory_refs}: each of the ${a.guest_refs} guest entries is read at a gpa, and that gpa and the final gpa (${a.guest_refs + 1} in all) each take a ${r.nested_levels}-level nested walk first: ${a.guest_refs} + ${a.guest_refs + 1} × ${r.nested_levels} = ${a.memory_refs} references, where native reads ${a.guest_refs}.`);
    expect(a.guest_refs + (a.guest_refs + 1) * r.nested_levels!).toBe(24);
    cleanup();
    // one A/D write, one exit: singular, in the shadow's own words
    const sh = runs.shadow;
    const w = sh.accesses.findIndex((x) => x.ad_writes === 1 && x.exits === 1);
    expect(w).toBeGreaterThan(0);
    const { container: c2 } = render(<WalkView result={sh} access={sh.accesses[w]} step={sh.accesses[w].steps.length} />);
    const c2counts = c2.querySelector('.counts')!.textContent!;
    expect(c2counts).toContain('1 A/D write ·');
    expect(c2counts).toContain('1 VM exit');
    expect(c2counts).toContain(`${sh.accesses[w].nested_refs} shadow)`);
    expect(c2counts).not.toMatch(/nested|1 exits|1 A\/D writes/);
  });

  it('labels the grid\'s numbers as references and its tooltips name reference and step apart', () => {
    const r = runs['ept-4k'];
    const a = r.accesses[0];
    const { container } = render(<WalkView result={r} access={a} step={a.steps.length} />);
    expect(container.querySelector('.grid-note')!.textContent).toMatch(/numbers in the cells count memory references/);
    let checked = 0;
    for (const b of container.querySelectorAll<HTMLButtonElement>('table.grid td.cell button')) {
      const shown = [...b.querySelectorAll('.ref')].map((x) => x.textContent!);
      const lines = b.title.split('\n');
      for (const line of lines) {
        const m = /^reference (\d+) \(step (\d+)\): /.exec(line) ?? /^step (\d+): .* \(not a memory reference\)$/.exec(line);
        expect(m, line).not.toBeNull();
        if (line.startsWith('reference')) {
          // the step named is the one that made this reference (the engine's trace)
          const step = a.steps[Number(m![2]) - 1];
          expect(step.ref).toBe(Number(m![1]));
          if (shown.includes(m![1])) checked++;
        } else expect(a.steps[Number(m![1]) - 1].ref).toBeNull();
      }
      // every number a cell shows is a reference its tooltip names
      for (const n of shown.filter((x) => /^\d+$/.test(x))) expect(lines.some((l) => l.startsWith(`reference ${n} (`)), `${n} in ${b.title}`).toBe(true);
    }
    expect(checked).toBe(a.memory_refs);
    // the final gpa's cell: reference 21 is step 25 in this walk, and says so
    const last = a.steps.filter((s) => s.ref !== null).at(-1)!;
    expect(last.n).not.toBe(last.ref);
    expect([...container.querySelectorAll<HTMLButtonElement>('table.grid td.cell button')].some((b) => b.title.includes(`reference ${last.ref} (step ${last.n})`))).toBe(true);
  });

  it('says whether a table address is a gpa, an hpa or physical, and heads the step list\'s numbers step and reference', () => {
    const r = runs['ept-4k'];
    const a = r.accesses[0];
    const label = (res: typeof r, acc: typeof a, n: number) => {
      const { container, unmount } = render(<WalkView result={res} access={acc} step={n} />);
      const dt = [...container.querySelectorAll('#entry dt')].find((d) => d.nextElementSibling?.getAttribute('data-field') === 'table')!.textContent;
      const head = [...container.querySelectorAll('table.steplist thead th')].slice(0, 2).map((th) => th.textContent);
      unmount();
      return { dt, head };
    };
    const guest = a.steps.find((x) => x.dim === 'guest' && x.kind === 'read')!;
    const nested = a.steps.find((x) => x.dim === 'nested')!;
    // the engine's own words for the two: a guest table's base is a gpa, a nested table's an hpa (model.md)
    expect(label(r, a, guest.n)).toEqual({ dt: 'table (at gpa)', head: ['step', 'reference'] });
    expect(label(r, a, nested.n).dt).toBe('table (at hpa)');
    const n = runs['native-4k'];
    expect(label(n, n.accesses[0], 1).dt).toBe('table (physical address)');
  });

  it('shows an A/D step\'s entry as read and after the bit is set, and counts nested A/D apart from the guest\'s', () => {
    // NPT with the guest's entries already accessed (a running guest's): the walk sets A only
    // in nested entries, as it reads them, and writes no guest A/D
    const s = structuredClone(EXAMPLES['npt-4k']) as Scenario;
    const gva = (s.accesses[0] as { gva: string }).gva;
    s.guest.overrides = [1, 2, 3, 4].map((level) => ({ gva, level, set: '0x20' }));
    s.accesses = [s.accesses[0]];
    const r = engine.run(s);
    const a = r.accesses[0];
    expect(a.ad_writes).toBe(0);
    const nestedAd = a.steps.filter((x) => x.dim === 'nested' && x.ad_set);
    expect(nestedAd.length).toBeGreaterThan(0);
    const { container } = render(<WalkView result={r} access={a} step={a.steps.length} />);
    const counts = container.querySelector('.counts')!.textContent!;
    expect(counts).toContain('no guest A/D write');
    expect(counts).toContain(`A/D bits set in ${nestedAd.length} nested entries as the walk read them`);
    expect(counts).not.toMatch(/no A\/D write/);
    cleanup();
    const st = nestedAd[0];
    const { container: c2 } = render(<WalkView result={r} access={a} step={st.n} />);
    expect(field(c2, 'entry')).toBe(st.entry);
    const bits = (st.ad_set.includes('A') ? 0x20n : 0n) | (st.ad_set.includes('D') ? 0x40n : 0n);
    expect(field(c2, 'entry-after')).toBe('0x' + (BigInt(st.entry) | bits).toString(16));
    expect([...c2.querySelectorAll('#entry dt')].map((d) => d.textContent)).toEqual(expect.arrayContaining(['entry, as read', `entry after setting ${st.ad_set}`]));
    expect(field(c2, 'ad_set')).toMatch(/set by the CPU as it reads this nested entry/);
    // the step list shows the same change: as read → after
    const row = [...c2.querySelectorAll('table.steplist tbody tr')][st.n - 1];
    expect(row.querySelector('[data-field="entry"]')!.textContent).toBe(`${st.entry} → ${field(c2, 'entry-after')}`);
    cleanup();
    // a guest ad_write step in native mode: A is bit 5 of the entry as read
    const n = runs['native-4k'].accesses[0];
    const w = n.steps.find((x) => x.kind === 'ad_write')!;
    const { container: c3 } = render(<WalkView result={runs['native-4k']} access={n} step={w.n} />);
    expect(field(c3, 'entry')).toBe(w.entry);
    expect(BigInt(field(c3, 'entry-after')!)).toBe(BigInt(w.entry) | 0x20n);
    cleanup();
    // EPT with A/D on: A is bit 8 of a nested entry
    const e = structuredClone(EXAMPLES['ept-4k']) as Scenario;
    e.nested!.ad = true;
    const er = engine.run(e);
    const es = er.accesses[0].steps.find((x) => x.dim === 'nested' && x.ad_set === 'A')!;
    const { container: c4 } = render(<WalkView result={er} access={er.accesses[0]} step={es.n} />);
    expect(BigInt(field(c4, 'entry-after')!)).toBe(BigInt(es.entry) | 0x100n);
  });

  it('names the fault\'s place in words, not as dimension, level and stage', () => {
    const r = runs['ept-violation'];
    const a = r.accesses.find((x) => x.outcome === 'ept_violation' && x.fault!.stage === 2)!;
    const { container } = render(<WalkView result={r} access={a} step={a.steps.length} />);
    const dts = [...container.querySelectorAll('#outcome dt')].map((d) => d.textContent);
    expect(dts).toContain('where');
    expect(dts).not.toContain('stage');
    expect(dts).not.toContain('dimension');
    const where = [...container.querySelectorAll('#outcome dd')][dts.indexOf('where')].textContent;
    expect(where).toBe(`nested level-${a.fault!.level} entry, while translating the gpa of the guest PD entry`);
  });

  it('says shadow and flat steps in their own words', () => {
    const sh = runs.shadow;
    const a = sh.accesses[1];   // a warm shadow walk: 4 shadow reads
    for (const s of a.steps) {
      const { container, unmount } = render(<WalkView result={sh} access={a} step={s.n} />);
      const explain = container.querySelector('#entry .explain')!.textContent!;
      expect(explain).not.toMatch(/final gpa|nested/);
      expect(explain).toContain('shadow');
      expect(field(container, 'dim')).toBe('shadow');
      expect(container.querySelector('tr[aria-current="step"] td.d-shadow')!.textContent).toBe('shadow');
      unmount();
    }
    const fl = runs['flat-x86-lazy'];
    const f = fl.accesses[1];
    const nested = f.steps.find((s) => s.dim === 'nested')!;
    const { container } = render(<WalkView result={fl} access={f} step={nested.n} />);
    expect(field(container, 'dim')).toBe('flat');
    expect(container.querySelector('#entry .explain')!.textContent).toMatch(/^Read flat-table entry \d+ \(the gfn\)/);
    expect(container.querySelector('tr[aria-current="step"] td.d-flat')).toBeTruthy();
  });

  it('counts every exit of every example under exactly one kind', () => {
    let n = 0;
    for (const name of EXAMPLE_NAMES) for (const a of runs[name].accesses) {
      const k = exitKinds(a, runs[name].mode);
      expect(EXIT_KINDS.reduce((s, x) => s + k[x], 0), `${name} ${a.op} ${a.gva}`).toBe(a.exits);
      expect(Math.min(...Object.values(k))).toBeGreaterThanOrEqual(0);
      n += a.exits;
    }
    expect(n).toBeGreaterThan(10);
    // the shadow example's kinds, from its description: hidden page faults, one pt_write, one cr3_write, one reflected #PF
    const sum = runs.shadow.accesses.map((a) => exitKinds(a, 'shadow')).reduce((s, k) => ({ fill: s.fill + k.fill, pt: s.pt + k.pt_write, cr3: s.cr3 + k.cr3, v: s.v + k.violation }), { fill: 0, pt: 0, cr3: 0, v: 0 });
    const c = runs.shadow.shadow!;
    expect(sum).toEqual({ fill: c.hidden_page_faults - c.reflected_page_faults, pt: c.pt_write_exits, cr3: c.cr3_write_exits, v: c.reflected_page_faults });
  });

  it('gives the grid and the step list one tab stop each, and every cell a name', () => {
    const r = runs['ept-4k'];
    const a = r.accesses[0];
    const { container } = render(<WalkView result={r} access={a} step={5} />);
    const cells = [...container.querySelectorAll<HTMLButtonElement>('table.grid td button')];
    expect(cells.filter((b) => b.tabIndex === 0)).toHaveLength(1);
    expect(cells.find((b) => b.tabIndex === 0)!.closest('td')!.getAttribute('aria-current')).toBe('step');
    for (const b of cells) expect(b.querySelector('.sr-only')!.textContent).toMatch(/step \d+/);
    const rows = [...container.querySelectorAll<HTMLButtonElement>('table.steplist button.rowbtn')];
    expect(rows).toHaveLength(a.steps.length);
    expect(rows.filter((b) => b.tabIndex === 0).map((b) => b.textContent)).toEqual(['5']);
    expect(rows[4].getAttribute('aria-label')).toMatch(/^step 5: Read /);
  });
});

describe('the VMFUNC panel', () => {
  const text = JSON.stringify(EXAMPLES['vmfunc-gate']);
  const r = () => runs['vmfunc-gate'];

  it('lists the EPTPs the engine reads, what each EPT reaches, and the active index', () => {
    const res = r();
    const sw = res.accesses.findIndex((a) => a.op === 'vmfunc' && a.outcome === 'ok' && a.eptp_index === 1);
    const { container } = render(<VmfuncPanel engine={engine} scenarioText={text} result={res} accessIndex={sw} step={1} />);
    const rows = [...container.querySelectorAll<HTMLElement>('table.eptp-list tbody tr[data-index]')];
    expect(rows.map((x) => x.dataset.index)).toEqual(['0', '1']);
    // entry 0 is the EPTP the machine starts with; entry 1 the one this VMFUNC read
    expect(rows[0].querySelector('code')!.textContent).toBe(res.eptp);
    expect(rows[1].querySelector('code')!.textContent).toBe(res.accesses[sw].steps[0].entry);
    // the object (gva 0x500000) only through the gate's EPT: what the example's own reads say
    const reads = (row: HTMLElement) => [...row.querySelectorAll<HTMLElement>('[data-field="reach"]')].map((d) => d.dataset.value);
    const objectIn = (idx: number) => res.accesses.find((a, i) => a.gva === '0x500000' && (i === 0 ? 0 : res.accesses[i - 1].eptp_index) === idx)!.outcome;
    expect(reads(rows[0])).toEqual(['ok', objectIn(0)]);
    expect(reads(rows[1])).toEqual(['ok', objectIn(1)]);
    expect(objectIn(0)).toBe('ept_violation');
    expect(field(container, 'current')).toMatch(/^Active EPTP index: 1\. \(this VMFUNC switched it from 0 to 1\)/);
    expect(rows[1].getAttribute('aria-current')).toBe('true');
    expect(field(container, 'event')).toMatch(/ECX = 1: .*No VM exit and no page walk\. TLB entries stay/);
    expect(container.querySelector('tr.empty-entries')!.textContent).toMatch(/^2–511/);
  });

  it('says VMCALL is an exit with no walk and a bad index exit 59 with the index unchanged', () => {
    const res = r();
    const i = res.accesses.findIndex((a) => a.op === 'vmcall');
    const { container, unmount } = render(<VmfuncPanel engine={engine} scenarioText={text} result={res} accessIndex={i} step={0} />);
    expect(field(container, 'event')).toMatch(/^VMCALL: VM exit 18 \(hypercall\)\. No table is read/);
    expect(res.accesses[i].steps).toHaveLength(0);
    unmount();
    const j = res.accesses.findIndex((a) => (a.fault as { reason?: string } | null)?.reason === 'index_out_of_range');
    const { container: c2, unmount: u2 } = render(<VmfuncPanel engine={engine} scenarioText={text} result={res} accessIndex={j} step={0} />);
    expect(field(c2, 'event')).toBe(`ECX = 512, but the list has 512 entries (0–511): VM exit 59 (index out of range). Nothing is read, and the EPTP index stays ${res.accesses[j].eptp_index}.`);
    u2();
    const k = res.accesses.findIndex((a) => (a.fault as { reason?: string } | null)?.reason === 'invalid_eptp');
    const { container: c3 } = render(<VmfuncPanel engine={engine} scenarioText={text} result={res} accessIndex={k} step={1} />);
    // the entry's own values against the rules: type 0 is fine, a walk length of 1 is not
    expect(field(c3, 'event')).toMatch(/^EPTP-list entry 7 holds 0x0, which is not a valid EPTP: memory type 0 \(uncacheable\), allowed; walk length 1, where the machine has 4 levels; no reserved bit set\. A valid EPTP has memory type 0 \(uncacheable\) or 6 \(write-back\)/);
    expect(field(c3, 'event')).not.toContain('memory type 0 or 6');
    // the same checks on EPTPs built by hand: 0x5e = WB, 4 levels, A/D on; 0x19 = type 1, 4 levels; bit 7 set
    const words = (v: string) => eptpChecks(v, 4, 46, i18n.getFixedT('en', 'views') as never);
    expect(words('0x5e')).toBe('memory type 6 (write-back), allowed; walk length 4, the machine\'s; no reserved bit set');
    expect(words('0x19')).toMatch(/^memory type 1 \(write-combining\), not allowed; walk length 4/);
    expect(words('0x400000000000009e')).toBe('memory type 6 (write-back), allowed; walk length 4, the machine\'s; reserved bits set (7, 62)');
  });

  it('sets VMFUNC against VMCALL: published nanoseconds and the cost model\'s cycles, each with its ratio', () => {
    render(<VmfuncPanel engine={engine} scenarioText={text} result={r()} accessIndex={0} step={0} />);
    const t = screen.getByTestId('vmfunc-cost');
    const cell = (path: string, f: string) => t.querySelector(`tr[data-path="${path}"] [data-field="${f}"]`)!.textContent;
    expect(cell('gate', 'published')).toBe('196 ns');
    expect(cell('vmcall', 'published')).toBe('699 ns');
    // the model: 1,700 cycles per exit; a VMFUNC at 196/699 of that per round trip, two per round trip
    const vmfunc = (1700 * 196) / 699 / 2;
    expect(cell('gate', 'model')).toBe(`${Math.round(2 * vmfunc)} cycles (2 × ${vmfunc.toFixed(1)})`);
    expect(cell('vmcall', 'model')).toBe('1,700 cycles (1 exit)');
    expect(cell('ratio', 'published')).toBe(`${(699 / 196).toFixed(1)}×`);
    expect(cell('ratio', 'model')).toBe(`${(1700 / (2 * vmfunc)).toFixed(1)}×`);
  });

  it('appears in the app for a VMFUNC scenario, and the walk says a successful VMFUNC switched with no exit', async () => {
    history.replaceState(null, '', '/?example=vmfunc-gate&access=2&step=1');
    const { container } = render(<App engine={engine} />);
    await waitFor(() => expect(screen.getByTestId('vmfunc-panel')).toBeTruthy());
    expect(container.querySelector('#outcome [data-field="outcome"]')!.textContent).toBe('switched to EPTP index 1, no VM exit');
    expect(container.querySelector('#entry [data-field="result"]')!.textContent).toBe('valid EPTP');
    expect(container.querySelector('#entry')!.textContent).not.toMatch(/locating|final gpa|MT=6/);
    history.replaceState(null, '', '/');
  });
});

describe('the playground\'s entry toggles', () => {
  function setup(s: Scenario) {
    let current = JSON.stringify(s, null, 2);
    const el = () => <Playground engine={engine} text={current} onText={(t) => { current = t; }} onRun={() => {}} plainEditor />;
    const view = render(el());
    return { get json() { return JSON.parse(current) as Scenario; }, rerender: () => view.rerender(el()) };
  }
  const box = (entry: RegExp, bit: string) => {
    const row = [...screen.getByTestId('toggles').querySelectorAll('tbody tr')].find((tr) => entry.test(tr.querySelector('th')!.textContent!))!;
    return row.querySelector(`input[data-bit="${bit}"]`) as HTMLInputElement;
  };
  const outcome = () => screen.getByTestId('toggles-outcome').dataset.value;

  it('makes guest faults, EPT violations and misconfigurations with clicks, and undoes them', async () => {
    const t = setup(EXAMPLES['ept-4k']);
    await waitFor(() => expect(screen.getByTestId('toggles')).toBeTruthy());
    expect(outcome()).toBe('ok');
    // the guest PTE's present bit: a guest #PF (no exit), written as a guest override
    fireEvent.click(box(/^guest PT entry/, 'P'));
    expect(t.json.guest.overrides).toEqual([{ gva: '0x400000', level: 1, clear: '0x1' }]);
    t.rerender();
    await waitFor(() => expect(outcome()).toBe('guest_page_fault'));
    fireEvent.click(box(/^guest PT entry/, 'P'));
    expect(t.json.guest.overrides).toBeUndefined();
    t.rerender();
    await waitFor(() => expect(outcome()).toBe('ok'));
    // the final gpa's EPT PTE: clearing R leaves W without R, a misconfiguration
    fireEvent.click(box(/^EPT level-1 entry \d+, for the final gpa/, 'R'));
    t.rerender();
    await waitFor(() => expect(outcome()).toBe('ept_misconfig'));
    expect(screen.getByTestId('ept-rule').textContent).toMatch(/^A misconfiguration, not a violation: one entry \(EPT level-1 entry \d+, for the final gpa\) allows writing but not reading \(R clear, W set\).* Clear W as well .* EPT violation \(VM exit 48\)\.$/);
    // clearing W too leaves X alone (execute-only): a read is an EPT violation
    fireEvent.click(box(/^EPT level-1 entry \d+, for the final gpa/, 'W'));
    expect(t.json.nested!.overrides).toEqual([{ gpa: '0x200000', level: 1, clear: '0x3' }]);
    t.rerender();
    await waitFor(() => expect(outcome()).toBe('ept_violation'));
    expect(screen.getByTestId('ept-rule').textContent).toMatch(/^In EPT, clearing R alone .* misconfiguration \(VM exit 49\).* Clearing R and W together .* EPT violation \(VM exit 48\)\.$/);
    // the same scenario through the engine directly agrees
    expect(engine.run(t.json).accesses[0].outcome).toBe('ept_violation');
  });

  it('puts a toggled entry into the address bar and restores it from a shared link', async () => {
    history.replaceState(null, '', '/?view=playground&example=ept-4k');
    const first = render(<App engine={engine} />);
    await waitFor(() => expect(screen.getByTestId('toggles')).toBeTruthy());
    fireEvent.click(box(/^EPT level-1 entry \d+, for the final gpa/, 'R'));
    await waitFor(() => expect(outcome()).toBe('ept_misconfig'));
    // the link carries the edited scenario: the override the click wrote
    const link = location.search;
    const shared = parseUrl(link);
    expect(shared.view).toBe('playground');
    expect((JSON.parse(shared.scenario!) as Scenario).nested!.overrides).toEqual([{ gpa: '0x200000', level: 1, clear: '0x1' }]);
    first.unmount();
    // opened again from the link: the same entry unchecked, the same outcome
    history.replaceState(null, '', '/' + link);
    render(<App engine={engine} />);
    await waitFor(() => expect(screen.getByTestId('toggles')).toBeTruthy());
    expect(outcome()).toBe('ept_misconfig');
    expect(box(/^EPT level-1 entry \d+, for the final gpa/, 'R').checked).toBe(false);
    expect(box(/^EPT level-1 entry \d+, for the final gpa/, 'W').checked).toBe(true);
    history.replaceState(null, '', '/');
  });

  it('says the run\'s counts with plural forms (one access, no exit)', async () => {
    const s = structuredClone(EXAMPLES['ept-4k']) as Scenario;
    s.accesses = [s.accesses[0]];
    setup(s);
    await waitFor(() => expect(screen.getByTestId('toggles')).toBeTruthy());
    fireEvent.click(screen.getByTestId('run'));
    const r = engine.run(s);
    expect(r.totals.exits).toBe(0);
    expect(screen.getByTestId('pg-message').textContent).toBe(`1 access, ${r.totals.memory_refs} memory references, no VM exit.`);
  });

  it('edits given tables in place', async () => {
    const s: Scenario = { name: 'given', mode: 'native', guest: { paging: '32bit', cr3: '0x1000', tables: [
      { gpa: '0x1000', entries: { '1': '0x2007' } }, { gpa: '0x2000', entries: { '0': '0x5007' } }] }, accesses: [{ gva: '0x400000', op: 'write' }] };
    const t = setup(s);
    await waitFor(() => expect(screen.getByTestId('toggles')).toBeTruthy());
    expect(outcome()).toBe('ok');
    fireEvent.click(box(/^guest PT entry 0/, 'W'));
    expect(t.json.guest.tables![1].entries['0']).toBe('0x5005');
    t.rerender();
    // a supervisor write to a read-only page with CR0.WP on (the default): a guest #PF
    await waitFor(() => expect(outcome()).toBe('guest_page_fault'));
    expect(engine.run(t.json).accesses[0].outcome).toBe('guest_page_fault');
  });
});

describe('schema errors in words', () => {
  // every pattern and enum of the scenario schema, broken once
  const base = () => structuredClone(EXAMPLES['ept-4k']) as unknown as Record<string, any>;
  const cases: [string, (s: Record<string, any>) => void][] = [
    ['pattern hex', (s) => { s.guest.mappings[0].gva = '400000'; }],
    ['pattern perm', (s) => { s.nested.mappings[0].perm = 'rwr'; }],
    ['pattern entry index', (s) => { delete s.guest.mappings; s.guest.cr3 = '0x1000'; s.guest.tables = [{ gpa: '0x1000', entries: { '01': '0x0' } }]; }],
    ['enum guest page', (s) => { s.guest.mappings[0].page = '3K'; }],
    ['enum nested page', (s) => { s.nested.mappings[0].page = '4M'; }],
    ['enum mode', (s) => { s.mode = 'vtx'; }],
    ['enum paging', (s) => { s.guest.paging = '6level'; }],
    ['enum levels', (s) => { s.nested.levels = 3; }],
    ['enum memory_type', (s) => { s.nested.memory_type = 2; }],
    ['enum op', (s) => { s.accesses[0].op = 'exec'; }],
    ['enum preset', (s) => { s.caches = { preset: 'huge' }; }],
    ['not (mode)', (s) => { s.mode = 'native'; }],
  ];
  it('has a case for every pattern and enum of the schema', () => {
    const found = { pattern: 0, enum: 0 };
    const walk = (o: unknown): void => {
      if (Array.isArray(o)) o.forEach(walk);
      else if (o && typeof o === 'object') for (const [k, v] of Object.entries(o)) {
        if (k === 'pattern') found.pattern++;
        if (k === 'enum' && !JSON.stringify(v).includes('"ept","npt"]')) found.enum++;   // the if-clause's enum is no learner's input
        walk(v);
      }
    };
    walk(schema);
    expect(found.pattern).toBe(Object.keys(PATTERN_WORDS).length);
    expect(cases.filter(([n]) => n.startsWith('pattern'))).toHaveLength(found.pattern);
    expect(cases.filter(([n]) => n.startsWith('enum'))).toHaveLength(found.enum);
  });
  for (const lang of ['en', 'ja', 'zh']) {
    it(`says each in words in ${lang}: no regex, no "must NOT be valid"`, () => {
      const t = i18n.getFixedT(lang, 'views') as never;
      for (const [name, breakIt] of cases) {
        const s = base();
        breakIt(s);
        const problems = schemaProblems(s, t, lang);
        expect(problems.length, name).toBeGreaterThan(0);
        for (const p of problems) {
          expect(p.message, `${lang} ${name}`).not.toMatch(/\^|\$\/|\\\\|\(\?|must NOT|must match pattern/);
          expect(p.message.trim(), name).not.toBe('');
        }
      }
    });
  }
  it('says exactly what a guest lacks among mappings, tables and cr3, in one problem', () => {
    const guest = (g: Record<string, unknown>) => {
      const s = base();
      s.guest = { paging: '4level', ...g } as Scenario['guest'];
      return schemaProblems(s).filter((p) => p.path === '/guest').map((p) => p.message);
    };
    const tables = [{ gpa: '0x1000', entries: {} }];
    expect(guest({})).toEqual(['has no page tables: give "mappings" (the lab builds the tables from them), or "tables" with "cr3" (the tables as they are in the guest\'s memory)']);
    expect(guest({ tables })).toEqual(['has "tables" but no "cr3": add "cr3", the gpa of the top table']);
    expect(guest({ cr3: '0x1000' })).toEqual(['has "cr3" but no "tables": add the "tables" that cr3 points into']);
    expect(guest({ tables, cr3: '0x1000', table_base: '0x100000' })).toEqual(['"table_base" goes with "mappings", not with given "tables": remove it']);
    expect(guest({ mappings: [{ gva: '0x0', gpa: '0x0' }], tables, cr3: '0x1000' })).toEqual([expect.stringMatching(/not both$/)]);
    expect(guest({ mappings: [{ gva: '0x0', gpa: '0x0' }] })).toEqual([]);
    for (const lang of ['ja', 'zh']) {
      const s = base();
      s.guest = { paging: '4level', tables } as unknown as Scenario['guest'];
      const msgs = schemaProblems(s, i18n.getFixedT(lang, 'views') as never, lang).filter((p) => p.path === '/guest');
      expect(msgs, lang).toHaveLength(1);
      expect(msgs[0].message, lang).toContain('"cr3"');
    }
  });

  it('names the key a mode does not take', () => {
    const s = base();
    s.mode = 'native';
    const msgs = schemaProblems(s).map((p) => p.message);
    expect(msgs).toContain('must not have "nested" when mode is "native"');
  });
});

describe('keys and help', () => {
  it('leaves arrows and Home/End to a focused select (its value, not the step) and steps from a button', async () => {
    history.replaceState(null, '', '/?example=ept-4k&access=0&step=3');
    const { container } = render(<App engine={engine} />);
    const counter = () => Number(container.querySelector('#counter [data-field="step"]')!.textContent);
    const picker = screen.getByLabelText('example scenario') as HTMLSelectElement;
    picker.focus();
    for (const key of ['ArrowRight', 'ArrowLeft', 'ArrowDown', 'ArrowUp', 'Home', 'End']) {
      const e = new KeyboardEvent('keydown', { key, bubbles: true, cancelable: true });
      act(() => { picker.dispatchEvent(e); });
      expect(e.defaultPrevented, key).toBe(false);   // the select does what a select does
      expect(counter(), key).toBe(3);
    }
    fireEvent.keyDown(screen.getByLabelText('playback speed'), { key: 'End' });
    expect(counter()).toBe(3);
    // a value changed from the keyboard keeps focus on the select; one picked with the
    // pointer gives it back to the walk, so → steps again
    picker.focus();
    fireEvent.keyDown(picker, { key: 'ArrowDown' });
    fireEvent.change(picker, { target: { value: 'ept-4k' } });
    expect(document.activeElement).toBe(picker);
    await new Promise((r) => setTimeout(r, 350));
    fireEvent.change(picker, { target: { value: 'ept-4k' } });
    expect(document.activeElement).not.toBe(picker);
    fireEvent.keyDown(document.activeElement ?? document.body, { key: 'ArrowRight' });
    expect(counter()).toBe(1);   // the new scenario starts at step 0
    for (const type of ['checkbox', 'range', 'number', 'radio']) {
      const input = document.createElement('input');
      input.type = type;
      expect(stepAction({ key: 'ArrowRight', altKey: false, ctrlKey: false, metaKey: false, target: input }), type).toBeNull();
    }
    // from a toolbar button the keys step
    const first = within(screen.getByRole('toolbar')).getByLabelText('first step (Home)');
    fireEvent.keyDown(first, { key: 'End' });
    expect(counter()).toBe(28);
    // Space on a focused button is the button's, not play/pause
    fireEvent.keyDown(first, { key: ' ' });
    expect(screen.getByLabelText('play (Space)')).toBeTruthy();
    history.replaceState(null, '', '/');
  });

  it('shows key help only on the tabs where the keys work', async () => {
    for (const [view, want] of [['walk', true], ['memory', true], ['compare', false], ['live', false], ['results', false], ['playground', false]] as const) {
      history.replaceState(null, '', `/?view=${view}&example=ept-4k`);
      const { container, unmount } = render(<App engine={engine} />);
      expect(container.querySelector('footer')!.textContent!.includes('←'), view).toBe(want);
      unmount();
    }
    history.replaceState(null, '', '/');
  });

  it('has no repeated id on the walk page, whatever the example', () => {
    for (const name of EXAMPLE_NAMES) {
      history.replaceState(null, '', `/?example=${name}&access=0&step=1`);
      const { container, unmount } = render(<App engine={engine} />);
      const ids = [...container.querySelectorAll('[id]')].map((e) => e.id);
      expect(ids.filter((x, i) => ids.indexOf(x) !== i), name).toEqual([]);
      unmount();
    }
    history.replaceState(null, '', '/');
  });
});

describe('the new words in Japanese and Chinese', () => {
  for (const lang of ['ja', 'zh'] as const) {
    it(`${lang}: VMFUNC panel, entry toggles, compare and the walk's counts leave no English`, async () => {
      await act(async () => { await i18n.changeLanguage(lang); });
      try {
        const res = runs['vmfunc-gate'];
        for (let i = 0; i < res.accesses.length; i++) {
          const { container, unmount } = render(<VmfuncPanel engine={engine} scenarioText={JSON.stringify(EXAMPLES['vmfunc-gate'])} result={res} accessIndex={i} step={res.accesses[i].steps.length} />);
          expect(englishRuns(translatedText(container)), `${lang} vmfunc #${i}`).toEqual([]);
          unmount();
        }
        const { container, unmount } = render(<Playground engine={engine} text={JSON.stringify(EXAMPLES['ept-4k'])} onText={() => {}} onRun={() => {}} plainEditor />);
        await waitFor(() => expect(screen.getByTestId('toggles')).toBeTruthy());
        const attrs = [...container.querySelectorAll('[aria-label],[title]')].map((e) => `${e.getAttribute('aria-label') ?? ''} ${e.getAttribute('title') ?? ''}`).join(' | ');
        expect(englishRuns(translatedText(screen.getByTestId('toggles'))), `${lang} toggles`).toEqual([]);
        expect(englishRuns(attrs), `${lang} toggles labels`).toEqual([]);
        unmount();
        for (const name of ['shadow', 'flat-x86-lazy', 'vmfunc-gate', 'vmfunc-tlb']) {
          const r = runs[name];
          for (const a of r.accesses) {
            const { container: c, unmount: u } = render(<WalkView result={r} access={a} step={a.steps.length} />);
            expect(englishRuns(c.textContent ?? ''), `${lang} ${name} ${a.op}`).toEqual([]);
            u();
          }
        }
      } finally {
        await act(async () => { await i18n.changeLanguage('en'); });
      }
    });
  }
});
