/* The "Live guest" tab: a real 32-bit Linux running in v86, its serial console in xterm.js,
 * an inspector for CR0/CR3/CR4, and walks of real guest addresses through the engine, on
 * their own (native) or with a host half (EPT, NPT, flat; shadow as the VMM sees it).
 * This module and everything it imports (v86, xterm.js, the guest assets) load only when
 * the tab is opened. */
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { V86 } from 'v86';
import v86WasmUrl from 'v86/build/v86.wasm?url';
import { Terminal } from '@xterm/xterm';
import '@xterm/xterm/css/xterm.css';
import type { Result } from '../../../wasm-core/js/types';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { WalkView } from '../views/WalkView';
import { CMDLINE, MEMORY_SIZE, PROMPT, readRegs, SerialConsole, stripAnsi, type CpuRegs, type V86Emulator } from './guestDriver';
import type { Backing, HostMode } from './liveTables';
import { build, pages, realTable, snapshot, type LiveSnap } from './liveSnap';
import './live.css';

const hex = (n: number, w = 8) => '0x' + (n >>> 0).toString(16).padStart(w, '0');

/** Fetches one asset with progress. */
async function fetchWithProgress(url: string, onBytes: (n: number, total: number) => void): Promise<ArrayBuffer> {
  const res = await fetch(url);
  if (!res.ok || !res.body) throw new Error(`${url}: HTTP ${res.status}`);
  const total = Number(res.headers.get('content-length') ?? 0);
  const reader = res.body.getReader();
  const parts: Uint8Array[] = [];
  let got = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value); got += value.length; onBytes(got, total);
  }
  const out = new Uint8Array(got);
  let o = 0; for (const p of parts) { out.set(p, o); o += p.length; }
  return out.buffer;
}

type Phase = { kind: 'loading'; what: string; frac: number } | { kind: 'booting'; what: string } | { kind: 'ready'; ms: number } | { kind: 'error'; message: string };

const MODES: [HostMode, string][] = [['native', 'guest only (native)'], ['ept', 'Intel EPT'], ['npt', 'AMD NPT'], ['flat', 'flat nested (swFNPT)'], ['shadow', 'shadow paging']];

export default function LiveView({ engine, onOpen }: { engine: Vmsim; onOpen?: (scenarioJson: string) => void }) {
  const termEl = useRef<HTMLDivElement>(null);
  const emuRef = useRef<V86Emulator | null>(null);
  const serialRef = useRef<SerialConsole | null>(null);
  const [phase, setPhase] = useState<Phase>({ kind: 'loading', what: 'starting', frac: 0 });
  const [regs, setRegs] = useState<CpuRegs | null>(null);
  const [live, setLive] = useState<{ pages: number; cr3s: number } | null>(null);
  const [snap, setSnap] = useState<LiveSnap | null>(null);
  const [snapNote, setSnapNote] = useState('');
  const [gvaText, setGvaText] = useState('0xc0100000');
  const [mode, setMode] = useState<HostMode>('native');
  const [backing, setBacking] = useState<Backing>('4K');
  const [step, setStep] = useState(0);
  const [busy, setBusy] = useState('');
  const cr3sSeen = useRef(new Set<number>());
  const params = new URLSearchParams(typeof location !== 'undefined' ? location.search : '');
  const cold = params.get('boot') === 'cold';
  // ?kernel=pae: the -686-pae kernel (PAE paging), built by `make -C public guest-pae` (into public/guest/pae)
  const dir = params.get('kernel') === 'pae' ? 'guest/pae' : 'guest';

  // Boot (or restore) once per mount; the emulator is destroyed when the tab closes.
  useEffect(() => {
    let disposed = false;
    const term = new Terminal({ convertEol: false, fontSize: 13, rows: 22, cols: 90, scrollback: 2000 });
    term.open(termEl.current!);
    (async () => {
      try {
        const files = cold ? ['bios.bin', 'vmlinuz', 'initramfs.cpio.gz'] : ['bios.bin', 'state.bin.zst'];
        const bufs: Record<string, ArrayBuffer> = {};
        for (let i = 0; i < files.length; i++) {
          const f = files[i];
          bufs[f] = await fetchWithProgress(`${dir}/${f}`, (n, t) => !disposed && setPhase({ kind: 'loading', what: f, frac: (i + (t ? n / t : 0.5)) / files.length }));
        }
        if (disposed) return;
        setPhase({ kind: 'booting', what: cold ? 'cold boot (about 10 s)' : 'restoring the saved state' });
        const t0 = performance.now();
        const emu = new (V86 as any)({
          wasm_path: v86WasmUrl,
          bios: { buffer: bufs['bios.bin'] },
          ...(cold ? { bzimage: { buffer: bufs['vmlinuz'] }, initrd: { buffer: bufs['initramfs.cpio.gz'] }, cmdline: CMDLINE } : { initial_state: { buffer: bufs['state.bin.zst'] } }),
          memory_size: MEMORY_SIZE, vga_memory_size: 2 * 1024 * 1024,
          autostart: true, disable_keyboard: true, disable_mouse: true, disable_speaker: true,
        }) as V86Emulator;
        emuRef.current = emu;
        const serial = new SerialConsole(emu);
        serialRef.current = serial;
        serial.listeners.add((ch) => term.write(ch));
        term.onData((d) => emu.serial0_send(d));
        await new Promise<void>((r) => emu.add_listener('emulator-ready', () => r()));
        if (cold) await serial.waitFor((s) => s.includes(PROMPT), 120_000);
        else await serial.prompt(15_000);
        if (disposed) return;
        setPhase({ kind: 'ready', ms: performance.now() - t0 });
        document.body.dataset.liveReady = '1';
      } catch (e) {
        if (!disposed) setPhase({ kind: 'error', message: (e as Error).message });
      }
    })();
    return () => {
      disposed = true;
      delete document.body.dataset.liveReady;
      emuRef.current?.destroy().catch(() => {});
      emuRef.current = null;
      term.dispose();
    };
  }, [cold, dir]);

  // The inspector samples the registers between execution slices.
  useEffect(() => {
    if (phase.kind !== 'ready') return;
    const t = setInterval(() => {
      const emu = emuRef.current; if (!emu) return;
      const r = readRegs(emu.v86.cpu);
      setRegs(r);
      const s = snapshot(emu.v86.cpu.mem8, r);
      if (s) {
        cr3sSeen.current.add(r.cr3);
        setLive({ pages: pages(s).total, cr3s: cr3sSeen.current.size });
      }
    }, 400);
    return () => clearInterval(t);
  }, [phase.kind]);

  const take = useCallback(() => {
    const emu = emuRef.current; if (!emu) return;
    const r = readRegs(emu.v86.cpu);
    setSnap(snapshot(emu.v86.cpu.mem8, r));
    setSnapNote(`tables of CR3 ${hex(r.cr3)} (whatever ran last: the idle task's kernel tables when the shell waits)`);
    setStep(0);
  }, []);

  /** Runs markpage, then samples CR3 until the marked process is on the CPU with its
   * marker where the engine's walk says it is. */
  const markPage = useCallback(async () => {
    const emu = emuRef.current, serial = serialRef.current; if (!emu || !serial) return;
    setBusy('running markpage…');
    try {
      const from = serial.text.length;
      serial.send('markpage 20 &\n');
      const m = await serial.waitLine(/MARK va=0x([0-9a-f]+) pid=(\d+) text=/, 15_000, from);
      const va = parseInt(m[1], 16), marker = `VMEMLAB-MARK pid=${m[2]}`;
      for (let i = 0; i < 200; i++) {
        await new Promise((r) => setTimeout(r, 25));
        const r = readRegs(emu.v86.cpu);
        const s = snapshot(emu.v86.cpu.mem8, r);
        if (!s) continue;
        const a = engine.run(build(s, [va])).accesses[0];
        if (a.outcome !== 'ok') continue;
        const pa = Number(a.hpa);
        if (new TextDecoder().decode(emu.v86.cpu.mem8.subarray(pa, pa + marker.length)) === marker) {
          setSnap(s); setGvaText(hex(va)); setStep(0);
          setSnapNote(`tables of markpage (pid ${m[2]}, CR3 ${hex(r.cr3)}); "${marker}" found at physical ${hex(pa)}`);
          setBusy('');
          return;
        }
      }
      setBusy('markpage never ran while sampled; try again');
    } catch (e) { setBusy((e as Error).message); }
  }, [engine]);

  const send = (cmd: string) => serialRef.current?.send(cmd + '\n');

  const gva = useMemo(() => { const n = Number(gvaText.trim()); return Number.isInteger(n) && n >= 0 && n < 2 ** 32 ? n : null; }, [gvaText]);
  const walk = useMemo((): { result: Result | null; json: string; error: string | null; shadowNote?: string } => {
    if (!snap || gva === null) return { result: null, json: '', error: null };
    try {
      // The engine's shadow mode models 64-bit guests only: for this 32-bit guest show the
      // walk the VMM does in software, and where the shadow entry would point (via its slots).
      const m = mode === 'shadow' ? 'native' : mode;
      const sc = build(snap, [gva], { mode: m, backing });
      const json = JSON.stringify(sc, null, 2);
      const result = engine.run(sc);
      let shadowNote: string | undefined;
      if (mode === 'shadow') {
        const host = engine.run(build(snap, [gva], { mode: 'flat' })).accesses[0];
        const tp = pages(snap);
        shadowNote = host.outcome === 'ok'
          ? `Shadow entry: gva ${hex(gva)} → hpa ${host.hpa} (the guest walk below gives gpa ${host.gpa}; the VMM's memory slots give the host frame). The MMU then walks only the shadow table: 2 references instead of ${(2 + 1) * (4 + 1) - 1} for EPT/NPT (the engine's shadow mode models 64-bit guests, so the walk below is the one the VMM does in software).`
          : 'This address is not mapped by the guest: a hidden page fault is reflected into the guest as #PF.';
        shadowNote += ` To keep shadows of this address space in sync the hypervisor write-protects ${tp.total} guest page-table pages (${tp.directory} ${snap.kind === 'pae' ? 'PDPT + directories' : 'directory'} + ${tp.tables} page tables); every guest write to them exits.`;
      }
      return { result, json, error: null, shadowNote };
    } catch (e) { return { result: null, json: '', error: (e as Error).message }; }
  }, [snap, gva, mode, backing, engine]);
  const access = walk.result?.accesses[0] ?? null;
  const total = access?.steps.length ?? 0;
  const shownStep = Math.min(step, total);
  useEffect(() => { if (access) setStep(access.steps.length); }, [access]);
  useEffect(() => { if (walk.result) document.body.dataset.liveWalk = '1'; }, [walk.result]);
  const pt = snap && gva !== null ? realTable(snap, gva) : null;

  return (
    <div className="live" data-testid="live-view">
      <p className="desc">A real Debian i386 Linux (kernel 6.1, {dir === 'guest' ? '32-bit paging' : 'PAE paging'}) running in v86 in this tab. The lab reads its CR3 and memory between
        emulator slices and hands the real page tables to the same engine as the other views.</p>
      {phase.kind === 'loading' && (
        <div className="live-progress"><progress max={1} value={phase.frac} aria-label="guest download" /> downloading {phase.what}…</div>
      )}
      {phase.kind === 'booting' && <div className="live-progress"><progress aria-label="guest boot" /> {phase.what}…</div>}
      {phase.kind === 'ready' && <p className="muted" id="live-status">Guest ready in {(phase.ms / 1000).toFixed(2)} s ({cold ? 'cold boot' : 'restored from the saved state'}; <a href={`?view=live&boot=cold${dir === 'guest' ? '' : '&kernel=pae'}`}>cold boot</a> · <a href={dir === 'guest' ? '?view=live&kernel=pae' : '?view=live'}>{dir === 'guest' ? 'the PAE kernel' : 'the 32-bit kernel'}</a>).</p>}
      {phase.kind === 'error' && <p className="error" role="alert">The live guest failed to start: {phase.message}. Build it with <code>make -C public guest</code>.</p>}
      <div className="live-grid">
        <div className="live-term" ref={termEl} data-testid="live-terminal" />
        <aside className="live-inspector" aria-label="inspector">
          <h3>CPU</h3>
          {regs ? (
            <dl>
              <dt>CR0</dt><dd><code>{hex(regs.cr0)}</code> {regs.cr0 & 0x80000000 ? 'PG' : ''} {regs.cr0 & 0x10000 ? 'WP' : ''} {regs.cr0 & 1 ? 'PE' : ''}</dd>
              <dt>CR3</dt><dd><code id="live-cr3">{hex(regs.cr3)}</code></dd>
              <dt>CR4</dt><dd><code>{hex(regs.cr4)}</code> {regs.cr4 & 0x10 ? 'PSE' : ''} {regs.cr4 & 0x20 ? 'PAE' : ''} {regs.cr4 & 0x80 ? 'PGE' : ''}</dd>
              <dt>paging</dt><dd id="live-paging">{regs.paging === '32bit' ? '32-bit, 2 levels (4 KiB and 4 MiB pages)' : regs.paging === 'pae' ? 'PAE: 4 PDPTE registers + 2 levels of 8-byte entries (4 KiB and 2 MiB pages)' : regs.paging}</dd>
              {live && <><dt>shadow</dt><dd>{live.pages} guest page-table pages to write-protect for this CR3; {live.cr3s} address spaces seen</dd></>}
            </dl>
          ) : <p className="muted">waiting for the guest…</p>}
          <h3>Experiments</h3>
          <div className="live-buttons">
            <button type="button" disabled={phase.kind !== 'ready'} onClick={markPage} id="live-markpage">markpage</button>
            <button type="button" disabled={phase.kind !== 'ready'} onClick={() => send('memtouch 8')}>memtouch 8</button>
            <button type="button" disabled={phase.kind !== 'ready'} onClick={() => send('cpuidloop 1000')}>cpuidloop</button>
            <button type="button" disabled={phase.kind !== 'ready'} onClick={() => send('churn 30 &')}>churn (watch the counts)</button>
          </div>
          <p className="muted small">This guest's time is emulator time (its TSC counts wall-clock in v86, about 1 GHz), not hardware: cpuid never exits to a hypervisor here and page touches cost emulation. Use hw-lab for real figures.</p>
          {busy && <p className="muted">{busy}</p>}
        </aside>
      </div>
      <section className="live-walk" aria-label="walk a guest address">
        <div className="pickers">
          <button type="button" disabled={phase.kind !== 'ready'} onClick={take} id="live-snapshot">read the current tables</button>
          <label>gva <input value={gvaText} onChange={(e) => setGvaText(e.target.value)} aria-label="guest virtual address" size={12} id="live-gva" /></label>
          <label>host
            <select value={mode} onChange={(e) => setMode(e.target.value as HostMode)} aria-label="host mode" id="live-mode">
              {MODES.map(([m, l]) => <option key={m} value={m}>{l}</option>)}
            </select>
          </label>
          {(mode === 'ept' || mode === 'npt') && (
            <label>backing
              <select value={backing} onChange={(e) => setBacking(e.target.value as Backing)} aria-label="host page size">
                <option value="4K">4 KiB (scattered)</option><option value="2M">2 MiB (scattered)</option><option value="1G">1 GiB</option>
              </select>
            </label>
          )}
          {walk.json && onOpen && <button type="button" onClick={() => onOpen(walk.json)}>open in the Walk tab</button>}
        </div>
        {snapNote && <p className="muted">{snapNote}{pt !== null && <> · the real page table of this gva is at <code>{hex(pt)}</code>; the model places it after the top-level table, with the real entries in it</>}</p>}
        {gva === null && <p className="error">Type a 32-bit address such as 0xc0100000.</p>}
        {walk.error && <p className="error" role="alert">{walk.error}</p>}
        {walk.shadowNote && <p className="desc" id="live-shadow">{walk.shadowNote}</p>}
        {walk.result && access && (
          <>
            <div className="controls">
              <button type="button" onClick={() => setStep(0)} disabled={shownStep === 0}>|◀</button>
              <button type="button" onClick={() => setStep(shownStep - 1)} disabled={shownStep === 0}>◀</button>
              <button type="button" onClick={() => setStep(shownStep + 1)} disabled={shownStep >= total}>▶</button>
              <button type="button" onClick={() => setStep(total)} disabled={shownStep >= total}>▶|</button>
              <span id="live-outcome">step {shownStep}/{total} · {access.outcome}{access.gpa ? ` · gpa ${access.gpa}` : ''}{access.hpa && mode !== 'native' ? ` · hpa ${access.hpa}` : ''} · {access.memory_refs} references</span>
            </div>
            <WalkView result={walk.result} access={access} step={shownStep} onStep={setStep} />
          </>
        )}
        {!snap && phase.kind === 'ready' && <p className="muted">Press <b>markpage</b> to walk a marked user page, or <b>read the current tables</b> to walk kernel addresses.</p>}
      </section>
    </div>
  );
}

export { stripAnsi };
