/* The "Live guest" tab: a real 32-bit Linux running in v86, its serial console in xterm.js,
 * an inspector for CR0/CR3/CR4, and walks of real guest addresses through the engine, on
 * their own (native) or with a host half (EPT, NPT, flat, shadow paging).
 * This module and everything it imports (v86, xterm.js, the guest assets) load only when
 * the tab is opened. Its words are in the `live` namespace; liveText.tsx makes the
 * sentences (progress, registers, notes, errors) from keys and values. */
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import { V86 } from 'v86';
import v86WasmUrl from 'v86/build/v86.wasm?url';
import { Terminal } from '@xterm/xterm';
import '@xterm/xterm/css/xterm.css';
import type { Result } from '../../../wasm-core/js/types';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { WalkView } from '../views/WalkView';
import { CMDLINE, MEMORY_SIZE, VGA_MEMORY_SIZE, PROMPT, readRegs, SerialConsole, stripAnsi, type CpuRegs, type V86Emulator } from './guestDriver';
import type { Backing, HostMode } from './liveTables';
import { build, pages, snapshot, type LiveSnap } from './liveSnap';
import { BACKINGS, hex, LiveError, MODES, noteText, outcomeLine, PhaseLine, Registers, shadowNote, snapText, type Kernel, type Note, type Phase, type ShadowFacts, type SnapSource } from './liveText';
import './live.css';

/** Fetches one asset with progress. */
async function fetchWithProgress(url: string, onBytes: (n: number, total: number) => void): Promise<ArrayBuffer> {
  const res = await fetch(url);
  if (!res.ok || !res.body) throw new LiveError('error.http', { url, status: res.status }, `${url}: HTTP ${res.status}`);
  // A compressed response's length is not the length of what the reader yields.
  const total = res.headers.get('content-encoding') ? 0 : Number(res.headers.get('content-length') ?? 0);
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

export default function LiveView({ engine, onOpen }: { engine: Vmsim; onOpen?: (scenarioJson: string) => void }) {
  const { t } = useTranslation('live');
  const termEl = useRef<HTMLDivElement>(null);
  const emuRef = useRef<V86Emulator | null>(null);
  const serialRef = useRef<SerialConsole | null>(null);
  const [phase, setPhase] = useState<Phase>({ kind: 'loading', file: null, frac: 0 });
  const [regs, setRegs] = useState<CpuRegs | null>(null);
  const [live, setLive] = useState<{ pages: number; cr3s: number } | null>(null);
  const [snap, setSnap] = useState<LiveSnap | null>(null);
  const [snapSource, setSnapSource] = useState<SnapSource | null>(null);
  const [gvaText, setGvaText] = useState('0xc0100000');
  const [mode, setMode] = useState<HostMode>('native');
  const [backing, setBacking] = useState<Backing>('4K');
  const [step, setStep] = useState(0);
  const [busy, setBusy] = useState<Note | null>(null);
  const cr3sSeen = useRef(new Set<number>());
  const params = new URLSearchParams(typeof location !== 'undefined' ? location.search : '');
  const cold = params.get('boot') === 'cold';
  // ?kernel=pae: the -686-pae kernel (PAE paging), built by `make -C public guest-pae` (into public/guest/pae)
  const kernel: Kernel = params.get('kernel') === 'pae' ? 'pae' : 'guest';
  const dir = kernel === 'pae' ? 'guest/pae' : 'guest';

  // Boot (or restore) once per mount; the emulator is destroyed when the tab closes.
  useEffect(() => {
    let disposed = false;
    // On a phone the terminal takes the columns its box holds, in a smaller font, so that it
    // fits without scrolling sideways (lines wrap); 90 columns of 13 px elsewhere.
    const box = termEl.current!.clientWidth - 8;   // less the padding
    const phone = innerWidth < 600 && box > 0;
    const fontSize = phone ? 10 : 13;
    const cols = phone ? Math.max(40, Math.floor(box / (fontSize * 0.62))) : 90;
    const term = new Terminal({ convertEol: false, fontSize, rows: 22, cols, scrollback: 2000 });
    term.open(termEl.current!);
    (async () => {
      try {
        const files = cold ? ['bios.bin', 'vmlinuz', 'initramfs.cpio.gz'] : ['bios.bin', 'state.bin.zst'];
        const bufs: Record<string, ArrayBuffer> = {};
        const d0 = performance.now();
        for (let i = 0; i < files.length; i++) {
          const f = files[i];
          bufs[f] = await fetchWithProgress(`${dir}/${f}`, (n, total) => !disposed && setPhase({ kind: 'loading', file: f, frac: (i + (total ? n / total : 0.5)) / files.length }));
        }
        if (disposed) return;
        const download = { bytes: Object.values(bufs).reduce((n, b) => n + b.byteLength, 0), ms: performance.now() - d0 };
        // the start's phases in the browser's performance timeline (DevTools, Playwright):
        // files in, emulator ready, prompt
        performance.mark('live-files');
        const t0 = performance.now();
        setPhase({ kind: 'booting', cold, since: t0 });
        const emu = new (V86 as any)({
          wasm_path: v86WasmUrl,
          bios: { buffer: bufs['bios.bin'] },
          ...(cold ? { bzimage: { buffer: bufs['vmlinuz'] }, initrd: { buffer: bufs['initramfs.cpio.gz'] }, cmdline: CMDLINE } : { initial_state: { buffer: bufs['state.bin.zst'] } }),
          memory_size: MEMORY_SIZE, vga_memory_size: VGA_MEMORY_SIZE,
          autostart: true, disable_keyboard: true, disable_mouse: true, disable_speaker: true,
        }) as V86Emulator;
        emuRef.current = emu;
        const serial = new SerialConsole(emu);
        serialRef.current = serial;
        serial.listeners.add((ch) => term.write(ch));
        term.onData((d) => emu.serial0_send(d));
        await new Promise<void>((r) => emu.add_listener('emulator-ready', () => r()));
        performance.mark('live-emulator-ready');
        if (cold) await serial.waitFor((s) => s.includes(PROMPT), 120_000);
        else await serial.prompt(15_000);
        if (disposed) return;
        performance.mark('live-prompt');
        setPhase({ kind: 'ready', ms: performance.now() - t0, download });
        document.body.dataset.liveReady = '1';
      } catch (e) {
        if (!disposed) setPhase({ kind: 'error', error: e });
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
    const timer = setInterval(() => {
      const emu = emuRef.current; if (!emu) return;
      const r = readRegs(emu.v86.cpu);
      setRegs(r);
      const s = snapshot(emu.v86.cpu.mem8, r);
      if (s) {
        cr3sSeen.current.add(r.cr3);
        setLive({ pages: pages(s).total, cr3s: cr3sSeen.current.size });
      }
    }, 400);
    return () => clearInterval(timer);
  }, [phase.kind]);

  const take = useCallback(() => {
    const emu = emuRef.current; if (!emu) return;
    const r = readRegs(emu.v86.cpu);
    setSnap(snapshot(emu.v86.cpu.mem8, r));
    setSnapSource({ kind: 'current', cr3: r.cr3 });
    setStep(0);
  }, []);

  /** Runs markpage, then samples CR3 until the marked process is on the CPU with its
   * marker where the engine's walk says it is. */
  const markPage = useCallback(async () => {
    const emu = emuRef.current, serial = serialRef.current; if (!emu || !serial) return;
    setBusy({ key: 'inspector.runningMarkpage' });
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
          setSnapSource({ kind: 'marked', pid: m[2], cr3: r.cr3, marker, pa });
          setBusy(null);
          return;
        }
      }
      setBusy({ key: 'error.markpageMissed' });
    } catch (e) { setBusy({ error: e }); }
  }, [engine]);

  const send = (cmd: string) => serialRef.current?.send(cmd + '\n');

  const gva = useMemo(() => { const n = Number(gvaText.trim()); return Number.isInteger(n) && n >= 0 && n < 2 ** 32 ? n : null; }, [gvaText]);
  const walk = useMemo((): { result: Result | null; json: string; error: unknown; shadow?: ShadowFacts } => {
    if (!snap || gva === null) return { result: null, json: '', error: null };
    try {
      // Under shadow paging the walk shown is the first touch: the miss in the empty shadow
      // table, the exit, the VMM's software walk of the real guest tables, the fill, the retry.
      const sc = build(snap, [gva], { mode, backing });
      const json = JSON.stringify(sc, null, 2);
      const result = engine.run(sc);
      let shadow: ShadowFacts | undefined;
      if (mode === 'shadow') shadow = { gva, host: result.accesses[0], pages: pages(snap), kind: snap.kind };
      return { result, json, error: null, shadow };
    } catch (e) { return { result: null, json: '', error: e }; }
  }, [snap, gva, mode, backing, engine]);
  const access = walk.result?.accesses[0] ?? null;
  const total = access?.steps.length ?? 0;
  const shownStep = Math.min(step, total);
  useEffect(() => { if (access) setStep(access.steps.length); }, [access]);
  useEffect(() => { if (walk.result) document.body.dataset.liveWalk = '1'; }, [walk.result]);

  return (
    <div className="live" data-testid="live-view">
      <p className="desc">{t('intro', { paging: t(kernel === 'guest' ? 'kernelPaging.guest' : 'kernelPaging.pae') })}</p>
      <PhaseLine phase={phase} cold={cold} kernel={kernel} />
      <div className="live-grid">
        <div className="live-term" ref={termEl} data-testid="live-terminal" />
        <aside className="live-inspector" aria-label={t('inspector.label')}>
          <h3>{t('inspector.cpu')}</h3>
          <Registers regs={regs} live={live} />
          <h3>{t('inspector.experiments')}</h3>
          <div className="live-buttons">
            <button type="button" disabled={phase.kind !== 'ready'} onClick={markPage} id="live-markpage">markpage</button>
            <button type="button" disabled={phase.kind !== 'ready'} onClick={() => send('memtouch 8')}>memtouch 8</button>
            <button type="button" disabled={phase.kind !== 'ready'} onClick={() => send('cpuidloop 1000')}>cpuidloop</button>
            <button type="button" disabled={phase.kind !== 'ready'} onClick={() => send('churn 30 &')}>{t('inspector.churn')}</button>
          </div>
          <p className="muted small">{t('inspector.timeNote')}</p>
          {busy && <p className="muted">{noteText(busy, t)}</p>}
        </aside>
      </div>
      <section className="live-walk" aria-label={t('walk.label')}>
        <div className="pickers">
          <button type="button" disabled={phase.kind !== 'ready'} onClick={take} id="live-snapshot">{t('walk.read')}</button>
          <label>gva <input value={gvaText} onChange={(e) => setGvaText(e.target.value)} aria-label={t('walk.gvaLabel')} size={12} id="live-gva" /></label>
          <label>{t('walk.host')}
            <select value={mode} onChange={(e) => setMode(e.target.value as HostMode)} aria-label={t('walk.hostMode')} id="live-mode">
              {MODES.map((m) => <option key={m} value={m}>{t(`mode.${m}`)}</option>)}
            </select>
          </label>
          {(mode === 'ept' || mode === 'npt') && (
            <label>{t('walk.backing')}
              <select value={backing} onChange={(e) => setBacking(e.target.value as Backing)} aria-label={t('walk.backingLabel')}>
                {BACKINGS.map((b) => <option key={b} value={b}>{t(`backingSize.${b}`)}</option>)}
              </select>
            </label>
          )}
          {walk.json && onOpen && <button type="button" onClick={() => onOpen(walk.json)}>{t('walk.openInWalk')}</button>}
        </div>
        {snapSource && <p className="muted">{snapText(snapSource, t)}</p>}
        {gva === null && <p className="error">{t('walk.badAddress', { example: '0xc0100000' })}</p>}
        {walk.error != null && <p className="error" role="alert">{noteText({ error: walk.error }, t)}</p>}
        {walk.shadow && <p className="desc" id="live-shadow">{shadowNote(walk.shadow, t)}</p>}
        {kernel === 'pae' && (mode === 'ept' || mode === 'npt') && <p className="desc" id="live-pdpte">{t(`walk.pdpte.${mode}`)}</p>}
        {walk.result && access && (
          <>
            <div className="controls">
              <button type="button" onClick={() => setStep(0)} disabled={shownStep === 0} aria-label={t('walk.first')} title={t('walk.first')}>|◀</button>
              <button type="button" onClick={() => setStep(shownStep - 1)} disabled={shownStep === 0} aria-label={t('walk.back')} title={t('walk.back')}>◀</button>
              <button type="button" onClick={() => setStep(shownStep + 1)} disabled={shownStep >= total} aria-label={t('walk.forward')} title={t('walk.forward')}>▶</button>
              <button type="button" onClick={() => setStep(total)} disabled={shownStep >= total} aria-label={t('walk.last')} title={t('walk.last')}>▶|</button>
              <span id="live-outcome">{outcomeLine(access, mode, shownStep, total, t)}</span>
            </div>
            <WalkView result={walk.result} access={access} step={shownStep} onStep={setStep} />
          </>
        )}
        {!snap && phase.kind === 'ready' && (
          <p className="muted"><Trans t={t} i18nKey="walk.hint" values={{ read: t('walk.read') }} components={{ b: <b /> }} /></p>
        )}
      </section>
    </div>
  );
}

export { stripAnsi };
