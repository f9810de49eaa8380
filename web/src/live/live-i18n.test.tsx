// @vitest-environment jsdom
/* The Live guest tab in English, Japanese and Chinese without a real guest: v86 and xterm.js
 * are replaced by a fake emulator whose memory holds hand-made 32-bit or PAE page tables
 * and whose serial console answers the prompt and `markpage`; the walks are the real
 * engine's. In ja and zh no English prose may be left on the page (englishRuns) through
 * download, boot, ready, markpage, every host mode, a fault and the errors; in English the
 * page says what the Chromium test (tests/live/live-tab.browser.test.ts) looks for. Every
 * key the live sources use exists in en/live.json, and every key there is used. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { act, cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import type { Outcome } from '../../../wasm-core/js/types';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import i18n, { resources, type T } from '../i18n';
import { testEngine } from '../test/engine';
import { englishRuns } from '../test/english';
import { SerialTimeout, type CpuRegs } from './guestDriver';
import timings from './boot-timings.json';
import { BACKINGS, errorText, LiveError, MODES, outcomeLine, pagingText, PhaseLine, Registers, shadowNote, snapText, type Phase } from './liveText';
import LiveView from './LiveView';

/* ---- a fake guest: page tables in memory, a console that knows two commands ---- */

// the fake emulator is made before the mocked imports (vi.mock is hoisted above them)
const { guest, FakeV86, MARK_VA, MARK_PA } = vi.hoisted(() => {
  const MARK_VA = 0x08049000, MARK_PA = 0x345000;
  const guest = { mem: new Uint8Array(0), cr: new Int32Array(8), fetchStatus: 200, hang: false };
  class FakeV86 {
    private listeners = new Map<string, ((x: unknown) => void)[]>();
    v86 = { cpu: { cr: guest.cr, mem8: guest.mem, translate_address_system_read: (va: number) => va } };
    add_listener(ev: string, f: (x: unknown) => void) {
      this.listeners.set(ev, [...(this.listeners.get(ev) ?? []), f]);
      if (ev === 'emulator-ready') setTimeout(() => f(undefined), 0);
    }
    remove_listener() {}
    private say(s: string) {
      setTimeout(() => { for (const ch of s) for (const f of this.listeners.get('serial0-output-byte') ?? []) f(ch.charCodeAt(0)); }, 5);
    }
    serial0_send(s: string) {
      if (guest.hang) return;
      if (s.startsWith('markpage')) {
        const marker = 'VMEMLAB-MARK pid=42';
        this.v86.cpu.mem8.set(new TextEncoder().encode(marker), MARK_PA);
        this.say(`${s}\r\n[1] 42\r\nMARK va=0x${MARK_VA.toString(16)} pid=42 text=${marker}\r\nvmemlab# `);
      } else this.say(`${s}\r\nvmemlab# `);
    }
    save_state() { return Promise.resolve(new ArrayBuffer(0)); }
    restore_state() { return Promise.resolve(); }
    run() {}
    stop() {}
    destroy() { return Promise.resolve(); }
    is_running() { return true; }
  }
  return { guest, FakeV86, MARK_VA, MARK_PA };
});
const KERNEL_VA = 0xc0100000;

function image(pae: boolean) {
  const mem = new Uint8Array(8 << 20);
  const dv = new DataView(mem.buffer);
  const CR3 = 0x100000;
  if (!pae) {
    const put = (a: number, v: number) => dv.setUint32(a, v >>> 0, true);
    put(CR3 + 4 * (KERNEL_VA >>> 22), 0x00400000 | 0x1e3); // 4 MiB kernel page
    put(CR3 + 4 * (MARK_VA >>> 22), 0x200000 | 0x067);     // the user page table
    put(0x200000 + 4 * ((MARK_VA >>> 12) & 1023), MARK_PA | 0x067);
  } else {
    const put = (a: number, v: number) => dv.setBigUint64(a, BigInt(v >>> 0), true);
    put(CR3, 0x101000 | 1);                                 // PDPT[0] → directory 0
    put(CR3 + 8 * 3, 0x102000 | 1);                         // PDPT[3] → directory 3
    put(0x101000 + 8 * ((MARK_VA >>> 21) & 511), 0x200000 | 0x067);
    put(0x200000 + 8 * ((MARK_VA >>> 12) & 511), MARK_PA | 0x067);
    put(0x102000 + 8 * ((KERNEL_VA >>> 21) & 511), 0x00400000 | 0x1e3); // 2 MiB kernel page
  }
  guest.mem = mem;
  guest.cr.set([0x80050033, 0, 0, CR3, pae ? 0x6b0 : 0x690]);
}

vi.mock('v86', () => ({ V86: FakeV86 }));
vi.mock('v86/build/v86.wasm?url', () => ({ default: 'v86.wasm' }));
vi.mock('@xterm/xterm', () => ({
  Terminal: class { open() {} write() {} onData() {} dispose() {} },
}));

let engine: Vmsim;
beforeAll(async () => {
  engine = await testEngine();
  vi.stubGlobal('fetch', vi.fn(async () => (guest.hang
    ? new Promise(() => {})
    : new Response(new Uint8Array(64), { status: guest.fetchStatus, headers: { 'content-length': '64' } }))));
});
afterEach(async () => {
  cleanup();
  guest.fetchStatus = 200; guest.hang = false;
  window.history.replaceState(null, '', '/');
  await act(async () => { await i18n.changeLanguage('en'); });
});
afterAll(() => { vi.unstubAllGlobals(); });

const setLang = (l: string) => act(async () => { await i18n.changeLanguage(l); });

/** The page's text and its labels and titles, without the embedded walk view (the views
 * namespace, checked by the views' own tests). */
function pageText(container: HTMLElement): { text: string; attrs: string } {
  const copy = container.cloneNode(true) as HTMLElement;
  copy.querySelectorAll('[data-testid="walk-view"]').forEach((e) => e.remove());
  const attrs = [...copy.querySelectorAll('[title],[aria-label]')].map((e) => `${e.getAttribute('title') ?? ''} ${e.getAttribute('aria-label') ?? ''}`).join(' | ');
  // text node by text node, so that words of neighbouring elements do not run together
  const walker = document.createTreeWalker(copy, NodeFilter.SHOW_TEXT);
  const texts: string[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) texts.push(n.textContent ?? '');
  return { text: texts.join(' '), attrs };
}
function expectNoEnglish(container: HTMLElement, what: string) {
  const { text, attrs } = pageText(container);
  expect(englishRuns(text), what).toEqual([]);
  expect(englishRuns(attrs), `${what} (titles, labels)`).toEqual([]);
}

async function boot(pae = false) {
  image(pae);
  if (pae) window.history.replaceState(null, '', '/?view=live&kernel=pae');
  const view = render(<LiveView engine={engine} onOpen={() => {}} />);
  await waitFor(() => expect(document.body.dataset.liveReady).toBe('1'), { timeout: 5_000 });
  await waitFor(() => expect(view.container.querySelector('#live-paging')).not.toBeNull(), { timeout: 5_000 });
  return view;
}
async function markpage() {
  fireEvent.click(document.getElementById('live-markpage')!);
  await waitFor(() => expect(document.getElementById('live-outcome')).not.toBeNull(), { timeout: 10_000 });
}
const outcome = () => document.getElementById('live-outcome')!.textContent ?? '';
const pickMode = (m: string) => fireEvent.change(document.getElementById('live-mode')!, { target: { value: m } });

describe('Live guest tab with a fake guest', () => {
  it('says in English what the Chromium test expects', async () => {
    const { container } = await boot();
    expect(screen.getByRole('button', { name: 'read the current tables' })).toBeTruthy();
    expect(container.querySelector('#live-paging')!.textContent).toContain('32-bit');
    // what happened (restored, which kernel, the download and the start), then the other starts
    expect(container.querySelector('#live-status')!.textContent).toMatch(/^Guest ready: the 32-bit kernel, restored from a saved state; \d+\.\d MB of files downloaded in \d+\.\d\d s, then \d+\.\d\d s to the prompt\. Start it another way: boot cold · switch to the PAE kernel\.$/);
    expect(container.textContent).toContain('Press markpage to walk a marked user page, or read the current tables to walk kernel addresses.');
    await markpage();
    expect(outcome()).toMatch(/^step \d+\/\d+ · ok · gpa 0x[0-9a-f]+ · 2 references$/);
    expect(container.textContent).toContain(`"VMEMLAB-MARK pid=42" found at physical 0x00345000`);
    pickMode('ept');
    await waitFor(() => expect(outcome()).toMatch(/ok · gpa 0x[0-9a-f]+ · hpa 0x[0-9a-f]+ · 14 references/));
    pickMode('shadow');
    await waitFor(() => expect(document.getElementById('live-shadow')!.textContent).toMatch(/write-protects \d+ guest page-table pages \(1 directory \+ 1 page table\)/));
    expect([...container.querySelectorAll('#live-mode option')].map((o) => o.textContent))
      .toEqual(['guest only (native)', 'Intel EPT', 'AMD NPT', 'flat nested (swFNPT)', 'shadow paging']);
  });

  for (const lang of ['ja', 'zh']) {
    it(`leaves no English on the page in ${lang} (32-bit kernel)`, async () => {
      await setLang(lang);
      const { container } = await boot();
      expectNoEnglish(container, 'ready');
      await markpage();
      expectNoEnglish(container, 'markpage');
      for (const m of MODES) {
        pickMode(m);
        if (m === 'ept' || m === 'npt') {
          for (const b of BACKINGS) {
            fireEvent.change(container.querySelector('#live-mode')!.parentElement!.nextElementSibling!.querySelector('select')!, { target: { value: b } });
            await waitFor(() => expect(outcome()).toMatch(/0x/));
            expectNoEnglish(container, `${m} ${b}`);
          }
        }
        await waitFor(() => expect(outcome()).toMatch(/0x/));
        expectNoEnglish(container, m);
      }
      // an unmapped address: a fault natively, the reflected #PF under shadow paging
      fireEvent.change(document.getElementById('live-gva')!, { target: { value: '0x00001000' } });
      await waitFor(() => expect(document.getElementById('live-shadow')).not.toBeNull());
      expectNoEnglish(container, 'unmapped, shadow');
      pickMode('native');
      expectNoEnglish(container, 'unmapped, native');
      fireEvent.change(document.getElementById('live-gva')!, { target: { value: 'nonsense' } });
      expectNoEnglish(container, 'bad address');
      fireEvent.change(document.getElementById('live-gva')!, { target: { value: '0xc0100000' } });
      fireEvent.click(document.getElementById('live-snapshot')!);
      await waitFor(() => expect(outcome()).toMatch(/0x/));
      expectNoEnglish(container, 'current tables');
    });

    it(`leaves no English on the page in ${lang} (PAE kernel)`, async () => {
      await setLang(lang);
      const { container } = await boot(true);
      expect(container.querySelector('#live-paging')!.textContent).toContain('PAE');
      expectNoEnglish(container, 'ready');
      await markpage();
      pickMode('shadow');
      await waitFor(() => expect(document.getElementById('live-shadow')).not.toBeNull());
      expectNoEnglish(container, 'shadow');
      pickMode('npt');
      await waitFor(() => expect(outcome()).toMatch(/hpa/));
      expectNoEnglish(container, 'npt');
    });

    it(`shows the download and the failure in ${lang}`, async () => {
      await setLang(lang);
      image(false);
      guest.hang = true;
      const loading = render(<LiveView engine={engine} />);
      expectNoEnglish(loading.container, 'starting');
      expect(loading.container.querySelector('.live-progress')).not.toBeNull();
      loading.unmount();
      guest.hang = false;
      guest.fetchStatus = 404;
      const failed = render(<LiveView engine={engine} />);
      await waitFor(() => expect(screen.getByRole('alert').textContent).toContain('HTTP 404'));
      expect(screen.getByRole('alert').textContent).toContain('make -C public guest');
      expectNoEnglish(failed.container, 'failed');
    });
  }
});

/* ---- the text pieces on their own ---- */

const OUTCOMES: Record<Outcome, true> = {
  ok: true, guest_page_fault: true, ept_violation: true, ept_misconfig: true, npt_fault: true, flat_fault: true,
  vmfunc_exit: true, invalid_opcode: true, vmcall_exit: true, shadow_unmapped: true,
};

describe('boot progress', () => {
  it('shows the seconds so far beside the figure bench-guest.mjs measured, in every language', async () => {
    for (const lang of ['en', 'ja', 'zh']) {
      await setLang(lang);
      for (const cold of [true, false]) {
        const { container, unmount } = render(<PhaseLine phase={{ kind: 'booting', cold, since: performance.now() - 3200 }} cold={cold} kernel="guest" />);
        const text = container.textContent!;
        expect(text).toMatch(/\b3\b/);                       // elapsed, whole seconds
        const measured = cold ? timings.cold_boot_s.toFixed(0) : timings.restore_s.toFixed(1);
        expect(text).toContain(measured);
        expect(text).toContain(String(timings.cores));
        expect(text).toContain(timings.date);
        unmount();
      }
    }
  });
  it('says once what happened when ready: restored or cold, which kernel, the download and the start; the other starts apart', async () => {
    await setLang('en');
    const phase: Phase = { kind: 'ready', ms: 360, download: { bytes: 8_312_000, ms: 1234 } };
    const line = (cold: boolean, kernel: 'guest' | 'pae') => {
      const { container, unmount } = render(<PhaseLine phase={phase} cold={cold} kernel={kernel} />);
      const out = { text: container.textContent!, ready: container.querySelector('[data-field="ready"]')!.textContent!,
        links: [...container.querySelectorAll('a')].map((a) => [a.textContent, a.getAttribute('href')]) };
      unmount();
      return out;
    };
    const restored = line(false, 'guest');
    expect(restored.ready).toBe('Guest ready: the 32-bit kernel, restored from a saved state; 8.3 MB of files downloaded in 1.23 s, then 0.36 s to the prompt.');
    expect(restored.links).toEqual([['boot cold', '?view=live&boot=cold'], ['switch to the PAE kernel', '?view=live&kernel=pae']]);
    const cold = line(true, 'pae');
    expect(cold.ready).toBe('Guest ready: the PAE kernel, booted cold; 8.3 MB of files downloaded in 1.23 s, then 0.36 s to the prompt.');
    expect(cold.links).toEqual([['restore the saved state', '?view=live&kernel=pae'], ['switch to the 32-bit kernel', '?view=live']]);
    expect(cold.text.match(/cold/g)).toHaveLength(1);
  });
  it('was measured, not written by hand', () => {
    expect(timings.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(timings.cold_boot_s).toBeGreaterThan(timings.restore_s);
    expect(timings.browser).toMatch(/^Chromium /);
  });
});

describe('live text pieces', () => {
  const tIn = (l: string) => i18n.getFixedT(l, 'live') as unknown as T;
  const regs: CpuRegs = { cr0: 0x80050033, cr3: 0x1234000, cr4: 0x690, paging: '32bit' };
  const phases: Phase[] = [
    { kind: 'loading', file: null, frac: 0 }, { kind: 'loading', file: 'state.bin.zst', frac: 0.5 },
    { kind: 'booting', cold: true, since: 0 }, { kind: 'booting', cold: false, since: 0 }, { kind: 'ready', ms: 1234, download: { bytes: 8_300_000, ms: 1500 } },
    { kind: 'error', error: new LiveError('error.http', { url: 'guest/bios.bin', status: 404 }, 'guest/bios.bin: HTTP 404') },
    { kind: 'error', error: new SerialTimeout(15000, 'vmemlab# ') },
  ];

  it('keeps the English of the page as it was', () => {
    const t = tIn('en');
    expect(errorText(new LiveError('error.http', { url: 'guest/bios.bin', status: 404 }, 'x'), t)).toBe('guest/bios.bin: HTTP 404');
    const timeout = new SerialTimeout(15000, 'abc');
    expect(errorText(timeout, t)).toBe(timeout.message);
    expect(timeout.message).toBe('serial: timed out after 15000 ms; last output: "abc"');
    expect(errorText(new Error('engine says no'), t)).toBe('engine says no');
    expect(outcomeLine({ outcome: 'ok', gpa: '0x345000', hpa: '0x40345000', memory_refs: 14 }, 'ept', 3, 14, t))
      .toBe('step 3/14 · ok · gpa 0x345000 · hpa 0x40345000 · 14 references');
    expect(outcomeLine({ outcome: 'guest_page_fault', gpa: null, hpa: null, memory_refs: 1 }, 'native', 1, 1, t))
      .toBe('step 1/1 · guest_page_fault · 1 reference');
    expect(snapText({ kind: 'current', cr3: 0x1234000 }, t))
      .toBe("tables of CR3 0x01234000 (whatever ran last: the idle task's kernel tables when the shell waits)");
    expect(shadowNote({ gva: 0xc0100000, host: { outcome: 'ok', gpa: '0x100000', hpa: '0x40100000' }, pages: { directory: 1, tables: 12, total: 13 }, kind: '32bit' }, t))
      .toBe("The walk below is the first touch under shadow paging: the MMU misses in the empty shadow table, exits (a hidden page fault), the VMM walks the guest's real tables in software and fills a PAE-format shadow entry, gva 0xc0100000 → hpa 0x40100000 (gpa 0x100000 through its memory slots); the retried walk reads 2 shadow entries, where EPT or NPT would read 14. To keep shadows of this address space in sync the hypervisor write-protects 13 guest page-table pages (1 directory + 12 page tables); every guest write to them exits.");
    expect(shadowNote({ gva: 0, host: { outcome: 'guest_page_fault', gpa: null, hpa: null }, pages: { directory: 3, tables: 7, total: 10 }, kind: 'pae' }, t))
      .toBe('This address is not mapped by the guest: a hidden page fault is reflected into the guest as #PF. To keep shadows of this address space in sync the hypervisor write-protects 10 guest page-table pages (3 PDPT + directories + 7 page tables); every guest write to them exits.');
    expect(pagingText('32bit', t)).toBe('32-bit, 2 levels (4 KiB and 4 MiB pages)');
  });

  for (const lang of ['ja', 'zh']) {
    it(`says every piece in ${lang}`, async () => {
      const t = tIn(lang);
      const say = (s: string, what: string) => { expect(s.trim(), what).not.toBe(''); expect(englishRuns(s), what).toEqual([]); };
      for (const o of Object.keys(OUTCOMES) as Outcome[]) {
        for (const m of MODES) say(outcomeLine({ outcome: o, gpa: '0x1000', hpa: '0x2000', memory_refs: 24 }, m, 5, 24, t), `${o} ${m}`);
        expect(t(`outcome.${o}`)).not.toBe(o);
      }
      for (const kind of ['32bit', 'pae'] as const)
        for (const ok of [true, false])
          for (const n of [1, 2])
            say(shadowNote({ gva: 0x1000, host: ok ? { outcome: 'ok', gpa: '0x1000', hpa: '0x40001000' } : { outcome: 'guest_page_fault', gpa: null, hpa: null }, pages: { directory: n, tables: n, total: 2 * n }, kind }, t), `shadow ${kind} ${ok} ${n}`);
      say(snapText({ kind: 'current', cr3: 0x1000 }, t), 'snap current');
      say(snapText({ kind: 'marked', pid: '42', cr3: 0x1000, marker: 'VMEMLAB-MARK pid=42', pa: 0x345000 }, t), 'snap marked');
      for (const p of ['32bit', 'pae', 'off'] as const) say(pagingText(p, t), p);
      say(errorText(new LiveError('error.http', { url: 'guest/bios.bin', status: 404 }, 'x'), t), 'http');
      say(errorText(new SerialTimeout(15000, 'vmemlab# '), t), 'timeout');

      await setLang(lang);
      for (const kernel of ['guest', 'pae'] as const) {
        for (const phase of phases) {
          for (const cold of [false, true]) {
            const { container, unmount } = render(<PhaseLine phase={phase} cold={cold} kernel={kernel} />);
            expectNoEnglish(container, `${phase.kind} ${kernel} ${cold}`);
            expect(container.textContent!.trim()).not.toBe('');
            unmount();
          }
        }
      }
      for (const live of [null, { pages: 1, cr3s: 1 }, { pages: 40, cr3s: 3 }]) {
        for (const r of [null, regs, { ...regs, cr4: 0x6b0, paging: 'pae' as const }, { ...regs, cr0: 0x11, paging: 'off' as const }]) {
          const { container, unmount } = render(<Registers regs={r} live={live} />);
          expectNoEnglish(container, `registers ${r?.paging} ${live?.pages}`);
          unmount();
        }
      }
    });
  }
});

/* ---- every key used exists, every key that exists is used ---- */

describe('live keys', () => {
  type Tree = Record<string, unknown>;
  const leaves = (t: Tree, prefix = ''): string[] => Object.entries(t).flatMap(([k, v]) =>
    v && typeof v === 'object' ? leaves(v as Tree, `${prefix}${k}.`) : [`${prefix}${k}`]);
  const en = new Set(leaves(resources.en.live as Tree));
  const has = (k: string) => en.has(k) || (en.has(`${k}_one`) && en.has(`${k}_other`));
  const dir = __dirname;
  const sources = readdirSync(dir).filter((f) => /\.tsx?$/.test(f) && !/\.test\.tsx?$/.test(f) && !f.endsWith('.d.ts'))
    .map((f) => readFileSync(join(dir, f), 'utf8')).join('\n');
  // t('key' …), i18nKey="key", { key: 'key' } (messages kept in state), LiveError('key', …),
  // and the keys chosen by a ternary inside t(…)
  const literal = [
    ...sources.matchAll(/\bt\(\s*'([\w.]+)'/g), ...sources.matchAll(/i18nKey="([\w.]+)"/g),
    ...sources.matchAll(/\bkey: '([\w.]+)'/g), ...sources.matchAll(/LiveError\('([\w.]+)'/g),
    ...sources.matchAll(/\?\s*'([a-z]\w*\.\w+)'\s*:/g), ...sources.matchAll(/:\s*'([a-z]\w*\.\w+)'\s*\)/g),
  ].map((m) => m[1]);
  const dynamic = [...MODES.map((m) => `mode.${m}`), ...BACKINGS.map((b) => `backingSize.${b}`), ...Object.keys(OUTCOMES).map((o) => `outcome.${o}`), 'walk.pdpte.ept', 'walk.pdpte.npt'];
  const used = new Set([...literal, ...dynamic]);

  it('finds the keys in the sources', () => {
    expect(literal.length).toBeGreaterThan(40);
    expect(literal).toContain('phase.failed');
    expect(literal).toContain('inspector.pagingPae');
  });
  it('every key the live sources use is in en/live.json', () => {
    expect([...used].filter((k) => !has(k))).toEqual([]);
  });
  it('every key of en/live.json is used', () => {
    const base = (k: string) => k.replace(/_(one|other)$/, '');
    expect([...en].map(base).filter((k) => !used.has(k))).toEqual([]);
  });
  it('every dynamic family is in the source as such', () => {
    expect(sources).toContain('t(`mode.${m}`)');
    expect(sources).toContain('t(`backingSize.${b}`)');
    expect(sources).toContain('t(`outcome.${access.outcome}`');
    expect(sources).toContain("(mode === 'ept' || mode === 'npt') && <p className=\"desc\" id=\"live-pdpte\">{t(`walk.pdpte.${mode}`)}");
  });
});
