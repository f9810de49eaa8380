/* "Your program": a trace recorded with hw-lab/run trace (or one of the two examples the
 * build records) replayed through native, EPT, NPT, shadow paging and a flat nested table
 * by the engine in a Web Worker, with a progress bar, the time left (eta.ts) and a cancel button; the per-mode
 * figures drawn side by side for every trace replayed with the same settings. In the
 * Results tab, traces go to the class server with their report and come back from it. */
import { memo, useCallback, useEffect, useRef, useState, useSyncExternalStore } from 'react';
import { DEFAULT_TABLES, TABLES, type Tables } from '../model/compare';
import { Trans, useTranslation } from 'react-i18next';
import type { T } from '../i18n';
import { modeBars } from './chart';
import { timeLeft, type TimeLeft } from './eta';
import { explainReplay, type Reason } from './explain';
import { machineFromResult, overheadOn, type MachineCost } from './machine';
import { lastClass } from '../results/store';
import type { TraceHeader } from './format.mjs';
import type { FailStage, FromWorker, ReplayOptions, ReplayProgress, ReplayReport } from './protocol';
import { workerRunner, type Runner, type Running } from './runner';
import { listClassTraces, fetchClassTrace, shareTrace, TRACE_UPLOAD_MAX, type ClassTrace } from './share';
import './trace.css';

export const EXAMPLES = ['pointer-chase', 'sequential-scan', 'pointer-chase-256m'] as const;
type Example = (typeof EXAMPLES)[number];
const MODES = ['native', 'ept', 'npt', 'shadow', 'flat', 'agile'] as const;
const METRICS = ['refs_per_access', 'tlb_miss_pct', 'exits_per_1k', 'overhead_pct'] as const;
type Metric = (typeof METRICS)[number];
const WHERE = ['walk_cache', 'l1', 'l2', 'llc', 'memory'] as const;

export interface Settings {
  preset: 'x86-server' | 'sunway-1621';
  start: 'cold' | 'warm';
  guest_pages: '4k' | '2m';
  host_pages: '2m' | '4k';
  /** Every mode's tables built in advance or filled on demand, as in Compare (model/compare.ts). */
  tables: Tables;
  /** Agile paging as a sixth mode at this switching level (0 all shadow .. 4 all nested); null: not run. */
  agile: number | null;
}
const DEFAULTS: Settings = { preset: 'x86-server', start: 'cold', guest_pages: '4k', host_pages: '2m', tables: DEFAULT_TABLES, agile: null };
const same = (a: Settings, b: Settings) => a.preset === b.preset && a.start === b.start && a.guest_pages === b.guest_pages && a.host_pages === b.host_pages
  && a.tables === b.tables && a.agile === b.agile;

/** The replay's options for these settings: agile adds the sixth mode and its switching level. */
export function replayOptions(s: Settings): ReplayOptions {
  const { agile, ...rest } = s;
  return agile === null ? rest : { ...rest, modes: [...MODES], agile_switch_level: agile };
}

interface Entry {
  id: number;
  name: string;                       // the file's name, an example's key, or the class upload's label
  source: 'file' | 'example' | 'class';
  blob: Blob | null;                  // null for a class upload not fetched yet
  classId?: string;
  header?: TraceHeader;
  settings: Settings;
  status: 'queued' | 'running' | 'done' | 'error' | 'cancelled';
  /** how it runs (workers, shared, threads) and its pass, from its first progress and when
   * its pass changes: the rest of each update goes to the running replay's Live store */
  progress?: ReplayProgress;
  report?: ReplayReport;
  error?: { stage: FailStage; message: string };
  shared?: string;                    // the class it was shared with
}

export interface TracePanelProps {
  /** compare: next to the compare table; results: with the class's traces. */
  where: 'compare' | 'results';
  /** How replays run (a Web Worker by default; tests run them in the same thread). */
  runner?: Runner;
  /** Where the example traces are (the built app's traces/ folder by default). */
  exampleUrl?: (name: Example) => string;
}

let nextId = 1;

/** The running replay's progress and time left: kept out of the entries, so that each
 * update (1 to 4 a second, protocol.ts progressEvery) draws the progress bar alone, not the
 * whole panel (docs/replay.md, "The bar drawn twice a second on every processor"). */
type Live = { progress?: ReplayProgress; left?: TimeLeft | null };
function liveStore() {
  let now: Live = {};
  const told = new Set<() => void>();
  return {
    get: () => now,
    set: (v: Live) => { now = v; told.forEach((f) => f()); },
    subscribe: (f: () => void) => { told.add(f); return () => { told.delete(f); }; },
  };
}
type LiveStore = ReturnType<typeof liveStore>;

export function TracePanel({ where, runner = workerRunner, exampleUrl = (n) => `traces/${n}.vmtrace` }: TracePanelProps) {
  const { t, i18n } = useTranslation('trace');
  const lang = i18n.language;
  const [settings, setSettings] = useState<Settings>(DEFAULTS);
  const [mine, setMine] = useState<MachineCost | null>(null);
  const [mineError, setMineError] = useState<string | null>(null);
  const loadMine = async (f: File | undefined) => {
    if (!f) return;
    try {
      setMine(machineFromResult(JSON.parse(await f.text())));
      setMineError(null);
    } catch (e) {
      setMine(null);
      setMineError((e as Error).message);
    }
  };
  const [entries, setEntries] = useState<Entry[]>([]);
  const [over, setOver] = useState(false);
  const [note, setNote] = useState<{ key: string; values?: Record<string, unknown>; raw?: string } | null>(null);
  const running = useRef<{ id: number; job: Running } | null>(null);
  const [live] = useState(liveStore);
  const [classCode, setClassCode] = useState<string | null>(null);
  const [server, setServer] = useState(false);

  const update = (id: number, f: (e: Entry) => Entry) => setEntries((all) => all.map((e) => (e.id === id ? f(e) : e)));

  // One replay at a time: the next queued entry starts when none runs.
  useEffect(() => {
    if (running.current) return;
    const next = entries.find((e) => e.status === 'queued' && e.blob);
    if (!next) return;
    const id = next.id;
    const startedAt = performance.now();
    live.set({ left: null });
    update(id, (e) => ({ ...e, status: 'running', progress: undefined, error: undefined }));
    const options: ReplayOptions = replayOptions(next.settings);
    let how = '';
    const job = runner(next.blob!, options, (m: FromWorker) => {
      if (m.type === 'header') update(id, (e) => ({ ...e, header: m.header }));
      else if (m.type === 'progress') {
        const p = m.progress, now = performance.now();
        live.set({ progress: p, left: timeLeft(p.fraction, now - startedAt) });
        const said = `${p.pass} ${p.workers} ${p.shared} ${p.threads}`;
        if (said !== how) {
          how = said;
          update(id, (e) => ({ ...e, progress: p }));
        }
      }
      else {
        running.current = null;
        live.set({});
        if (m.type === 'done') update(id, (e) => ({ ...e, status: 'done', report: m.report }));
        else update(id, (e) => ({ ...e, status: 'error', error: { stage: m.stage, message: m.message } }));
      }
    });
    running.current = { id, job };
  }, [entries, runner, live]);
  useEffect(() => () => { running.current?.job.cancel(); running.current = null; }, []);
  // The next replay made ready while none runs (the threaded replay's module loaded and its
  // threads started before a file is picked: runner.ts, warmThreads), once the page is idle;
  // let go of when the panel goes.
  const warmed = useRef<(() => void) | undefined>(undefined);
  useEffect(() => {
    const warm = runner.warm;
    if (!warm || running.current || entries.some((e) => e.status === 'queued' && e.blob)) return;
    const go = () => { warmed.current = warm(); };
    if (typeof requestIdleCallback === 'function') {
      const id = requestIdleCallback(go, { timeout: 1000 });
      return () => cancelIdleCallback(id);
    }
    const id = setTimeout(go, 200);
    return () => clearTimeout(id);
  }, [entries, runner]);
  useEffect(() => () => warmed.current?.(), []);

  const add = (name: string, blob: Blob, source: Entry['source'], extra: Partial<Entry> = {}) =>
    setEntries((all) => [...all, { id: nextId++, name, source, blob, settings, status: 'queued', ...extra }]);

  const addFiles = (files: FileList | File[] | null) => {
    for (const f of Array.from(files ?? [])) add(f.name, f, 'file');
  };

  const addExample = async (name: Example) => {
    try {
      const r = await fetch(exampleUrl(name));
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      add(name, await r.blob(), 'example');
      setNote(null);
    } catch (e) {
      setNote({ key: 'msg.exampleMissing', values: { name: t(`example.${name}`) }, raw: (e as Error).message });
    }
  };

  const cancel = (id: number) => {
    if (running.current?.id === id) { running.current.job.cancel(); running.current = null; live.set({}); }
    update(id, (e) => ({ ...e, status: 'cancelled', progress: undefined }));
  };
  const remove = (id: number) => {
    if (running.current?.id === id) { running.current.job.cancel(); running.current = null; live.set({}); }
    setEntries((all) => all.filter((e) => e.id !== id));
  };
  const again = () => setEntries((all) => all.map((e) => (e.blob && (e.status !== 'done' || !same(e.settings, settings)) && e.status !== 'running'
    ? { ...e, settings, status: 'queued', report: undefined, error: undefined } : e)));

  // The class (Results tab): the server answers /api/health, a class was joined there.
  const loadClass = useCallback(async (code: string) => {
    try {
      const list = await listClassTraces(code);
      setEntries((all) => {
        const have = new Set(all.filter((e) => e.classId).map((e) => e.classId));
        const add = list.filter((c) => !have.has(c.id)).map((c: ClassTrace): Entry => ({
          id: nextId++, name: c.label, source: 'class', blob: null, classId: c.id, header: c.header,
          settings: settingsOf(c.report), status: 'done', report: c.report,
        }));
        return [...all, ...add];
      });
    } catch (e) {
      // an unknown class is the class panel's to report; anything else is said here
      if ((e as { status?: number }).status !== 404) setNote({ key: 'msg.classFailed', values: { code }, raw: (e as Error).message });
    }
  }, []);
  useEffect(() => {
    if (where !== 'results') return;
    fetch('/api/health').then((r) => (r.ok && r.headers.get('content-type')?.includes('json') ? r.json() : null)).then((j) => {
      if (!j?.ok) return;
      setServer(true);
      const code = new URLSearchParams(location.search).get('class')?.toUpperCase() ?? lastClass();
      if (code) { setClassCode(code); void loadClass(code); }
    }, () => {});
  }, [where, loadClass]);

  // A class joined in the class panel after this panel was shown: follow it.
  useEffect(() => {
    if (where !== 'results' || !server) return;
    const timer = setInterval(() => {
      const c = lastClass();
      if (c && c !== classCode) { setClassCode(c); void loadClass(c); }
      // the class was deleted (the class panel forgot it): its traces go from this list
      else if (!c && classCode) { setClassCode(null); setEntries((all) => all.filter((e) => e.source !== 'class')); }
    }, 1500);
    return () => clearInterval(timer);
  }, [where, server, classCode, loadClass]);

  const share = async (e: Entry) => {
    if (!classCode || !e.blob || !e.report) return;
    try {
      await shareTrace(classCode, e.blob, e.report, labelOf(t, e));
      update(e.id, (x) => ({ ...x, shared: classCode }));
      setNote({ key: 'msg.shared', values: { label: labelOf(t, e), code: classCode } });
    } catch (err) { setNote({ key: 'msg.shareFailed', raw: (err as Error).message }); }
  };
  const replayHere = async (e: Entry) => {
    if (!classCode || !e.classId) return;
    try {
      const blob = await fetchClassTrace(classCode, e.classId);
      add(e.name, blob, 'file');
    } catch (err) { setNote({ key: 'msg.classFailed', values: { code: classCode }, raw: (err as Error).message }); }
  };

  const fair = entries.filter((e) => e.status === 'done' && e.report && same(settingsOf(e.report), settings));
  const stale = entries.filter((e) => e.status === 'done' && e.report && !same(settingsOf(e.report), settings));
  const busy = entries.find((e) => e.status === 'running');

  return (
    <section className="trace-panel" data-testid="trace-panel" aria-labelledby={`trace-heading-${where}`}>
      <h2 id={`trace-heading-${where}`}>{t('heading')}</h2>
      <p className="muted"><Trans t={t} i18nKey="intro" components={{ code: <code /> }} /></p>
      <div className={over ? 'dropzone over' : 'dropzone'} data-testid="trace-dropzone"
        onDragOver={(e) => { e.preventDefault(); setOver(true); }} onDragLeave={() => setOver(false)}
        onDrop={(e) => { e.preventDefault(); setOver(false); addFiles(e.dataTransfer.files); }}>
        <p>{t('drop')}</p>
        <label className="filebtn">{t('pick')} <input type="file" accept=".vmtrace,application/octet-stream" multiple data-testid="trace-file"
          onChange={(e) => { addFiles(e.target.files); e.target.value = ''; }} /></label>
        <span className="examples">{t('examples')} {EXAMPLES.map((n) => (
          <button type="button" key={n} data-example={n} onClick={() => void addExample(n)}>{t(`example.${n}`)}</button>
        ))}</span>
      </div>
      <fieldset className="trace-settings">
        <legend>{t('settings.legend')}</legend>
        <label>{t('settings.preset')} <select value={settings.preset} onChange={(e) => setSettings({ ...settings, preset: e.target.value as Settings['preset'] })}>
          <option value="x86-server">{t('preset.x86-server')}</option><option value="sunway-1621">{t('preset.sunway-1621')}</option></select></label>
        <label>{t('settings.start')} <select value={settings.start} data-setting="start" onChange={(e) => setSettings({ ...settings, start: e.target.value as Settings['start'] })}>
          <option value="cold">{t('start.cold')}</option><option value="warm">{t('start.warm')}</option></select></label>
        <label>{t('settings.guestPages')} <select value={settings.guest_pages} onChange={(e) => setSettings({ ...settings, guest_pages: e.target.value as Settings['guest_pages'] })}>
          <option value="4k">{t('pages.4k')}</option><option value="2m">{t('pages.2m')}</option></select></label>
        <label>{t('settings.hostPages')} <select value={settings.host_pages} onChange={(e) => setSettings({ ...settings, host_pages: e.target.value as Settings['host_pages'] })}>
          <option value="2m">{t('pages.2mHost')}</option><option value="4k">{t('pages.4k')}</option></select></label>
        <label>{t('settings.tables')} <select value={settings.tables} data-setting="tables" onChange={(e) => setSettings({ ...settings, tables: e.target.value as Tables })}>
          {TABLES.map((x) => <option key={x} value={x}>{t(`tables.${x}`)}</option>)}</select></label>
        <label>{t('settings.agile')} <select value={settings.agile === null ? 'off' : String(settings.agile)} data-setting="agile"
          onChange={(e) => setSettings({ ...settings, agile: e.target.value === 'off' ? null : Number(e.target.value) })}>
          <option value="off">{t('agile.off')}</option>
          {[0, 1, 2, 3, 4].map((l) => <option key={l} value={String(l)}>{t(`agile.level${l}`)}</option>)}</select></label>
        {entries.some((e) => e.blob && e.status !== 'running' && (e.status !== 'done' || !same(e.settings, settings))) && (
          <button type="button" onClick={again} data-testid="trace-again">{t('again')}</button>
        )}
      </fieldset>
      <p className="muted small">{t(`startNote.${settings.start}`)} {t(`tablesNote.${settings.tables}`)}</p>
      <p className="small trace-mine" data-testid="trace-mine">
        <label className="filebtn">{t('mine.load')} <input type="file" accept=".json,application/json" data-testid="trace-mine-file"
          onChange={(e) => { void loadMine(e.target.files?.[0]); e.target.value = ''; }} /></label>{' '}
        {mine && <span data-testid="trace-mine-costs">{t('mine.costs', {
          cpu: mine.cpu || '?',
          exit: mine.exit === null ? t('mine.noExit') : t('mine.exit', { n: mine.exit.toLocaleString(lang), from: mine.exitFrom }),
          ref: mine.ref === null ? t('mine.noRef') : t('mine.ref', { n: mine.ref.toLocaleString(lang), from: mine.refFrom }),
          pages: t('mine.pages', { base: mine.basePage ?? '?', huge: mine.hugePage ?? '?', thp: mine.thp ?? '?' }),
        })}</span>}
        {mineError && <span className="error"><Say t={t} k="mine.refused" raw={mineError} /></span>}
      </p>
      {busy && <TraceProgress live={live} label={labelOf(t, busy)} how={busy.progress} t={t} lang={lang} onCancel={() => cancel(busy.id)} />}
      {note && <p className={note.key === 'msg.shared' ? 'okmsg' : 'error'} role={note.key === 'msg.shared' ? 'status' : 'alert'}><Say t={t} k={note.key} values={note.values} raw={note.raw} /></p>}
      {entries.length > 0 && (
        <ul className="trace-list" data-testid="trace-list">
          {entries.map((e) => (
            <li key={e.id} data-status={e.status} data-source={e.source} data-workers={e.progress?.workers} data-shared={e.progress?.shared} data-threads={e.progress?.threads} data-kept={e.progress?.kept}>
              <strong>{labelOf(t, e)}</strong>
              {e.header && <span className="muted small"> · {t('facts', { accesses: e.header.accesses.toLocaleString(lang), pages: e.header.pages.toLocaleString(lang) })}</span>}
              {e.header?.partial && <span className="partial small"> · {t('partial')} <span lang="en">{e.header.partial_reason}</span></span>}
              {e.source === 'class' && <span className="muted small"> · {t('fromClass')}</span>}
              {e.status === 'queued' && <span className="muted small"> · {t('status.queued')}</span>}
              {e.status === 'cancelled' && <span className="muted small"> · {t('status.cancelled')}</span>}
              {e.status === 'done' && e.report && !same(settingsOf(e.report), settings) && <span className="muted small"> · {t('status.otherSettings', { settings: settingsWords(t, settingsOf(e.report)) })}</span>}
              {e.status === 'error' && e.error && <div className="error" role="alert"><Say t={t} k={`fail.${e.error.stage}`} raw={e.error.message} /></div>}
              <span className="trace-actions">
                {where === 'results' && server && classCode && e.status === 'done' && e.blob && e.source === 'file' && !e.shared && (
                  e.blob.size <= TRACE_UPLOAD_MAX
                    ? <button type="button" onClick={() => void share(e)}>{t('share', { code: classCode })}</button>
                    : <span className="muted small">{t('tooLarge', { mib: TRACE_UPLOAD_MAX / 2 ** 20 })}</span>
                )}
                {e.shared && <span className="muted small">{t('sharedWith', { code: e.shared })}</span>}
                {e.source === 'class' && <button type="button" onClick={() => void replayHere(e)}>{t('replayHere')}</button>}
                <button type="button" onClick={() => remove(e.id)} aria-label={t('removeOne', { label: labelOf(t, e) })}>{t('remove')}</button>
              </span>
            </li>
          ))}
        </ul>
      )}
      {fair.length > 0 && <TraceCharts entries={fair} t={t} lang={lang} settings={settings} mine={mine} />}
      {stale.length > 0 && fair.length === 0 && <p className="muted">{t('noneWithThese')}</p>}
      {where === 'results' && server && !classCode && <p className="muted small">{t('joinToShare')}</p>}
    </section>
  );
}

/** The running replay's bar: the only part of the panel drawn again at each progress update. */
function TraceProgress({ live, label, how, t, lang, onCancel }: {
  live: LiveStore; label: string; how?: ReplayProgress; t: T; lang: string; onCancel: () => void;
}) {
  const { progress, left } = useSyncExternalStore(live.subscribe, live.get);
  const text = t(progress?.kept ? 'runningKept' : 'running', { label, pass: progress?.pass ?? 1 });
  const fraction = progress?.fraction ?? 0;
  return (
    <div className="trace-progress" data-testid="trace-progress" data-workers={how?.workers}
      data-shared={how?.shared} data-threads={how?.threads} data-kept={progress?.kept}>
      {/* what a screen reader says: at each tenth of the bar, not at each of its updates (1 to 4 a second) */}
      <span className="sr-only" role="status" data-testid="trace-said">{text} · {10 * Math.floor(10 * fraction)} %</span>
      <span aria-hidden="true">{text}</span>
      <progress max={1} value={fraction} aria-label={t('progressLabel')} />
      <span className="num">{Math.floor(100 * fraction)} %</span>
      {left && <span className="muted small" data-testid="trace-left">{t(`left.${left.unit}`, { n: left.n.toLocaleString(lang) })}</span>}
      <button type="button" onClick={onCancel} data-testid="trace-cancel">{t('cancel')}</button>
    </div>
  );
}

function settingsOf(r: ReplayReport): Settings {
  return { preset: r.machine.preset, start: r.machine.start, guest_pages: r.machine.guest_pages, host_pages: r.machine.host_pages,
    tables: r.machine.tables ?? 'built', agile: r.machine.agile_switch_level ?? null };
}

function settingsWords(t: T, s: Settings) {
  return [t(`preset.${s.preset}`), t(`start.${s.start}`), t(`tables.${s.tables}`), `${t('settings.guestPages')} ${t(`pages.${s.guest_pages}`)}`,
    `${t('settings.hostPages')} ${t(s.host_pages === '2m' ? 'pages.2mHost' : 'pages.4k')}`,
    ...(s.agile === null ? [] : [`${t('settings.agile')} ${t(`agile.level${s.agile}`)}`])].join(' · ');
}

function labelOf(t: T, e: Entry): string {
  if (e.source === 'example') return t(`example.${e.name}`);
  const h = e.header;
  if (h?.label) return h.label;
  if (h) return [h.program, ...h.args].join(' ').slice(0, 60);
  return e.name;
}

/** A translated sentence with someone else's words (the engine's, the browser's, the
 * server's) where {{error}} stands, marked lang="en". */
function Say({ t, k, values, raw }: { t: T; k: string; values?: Record<string, unknown>; raw?: string }) {
  if (raw === undefined) return <>{t(k, values)}</>;
  const MARK = '\uE000';
  const [before, after = ''] = t(k, { ...values, error: MARK }).split(MARK);
  return <>{before}<span lang="en">{raw}</span>{after}</>;
}

type ChartsProps = { entries: Entry[]; t: T; lang: string; settings: Settings; mine: MachineCost | null };

/** The finished replays' charts, table and reasons: drawn again only when those replays or
 * the settings change, not at each progress update of a replay running beside them (the
 * charts' D3 drawing at every update took the main thread, and with it a processor from the
 * replay's threads). */
const TraceCharts = memo(TraceChartsNow, (a: ChartsProps, b: ChartsProps) => a.t === b.t && a.lang === b.lang && a.settings === b.settings &&
  a.mine === b.mine && a.entries.length === b.entries.length && a.entries.every((e, i) => e === b.entries[i]));

function TraceChartsNow({ entries, t, lang, settings, mine }: ChartsProps) {
  const refs = useRef<Record<Metric, SVGSVGElement | null>>({ refs_per_access: null, tlb_miss_pct: null, exits_per_1k: null, overhead_pct: null });
  const names = entries.map((e, i) => `${i + 1}. ${labelOf(t, e)}`);
  const short = names.map((n) => (n.length > 24 ? n.slice(0, 23) + '…' : n));
  useEffect(() => {
    for (const m of METRICS) {
      const el = refs.current[m];
      if (!el) continue;
      modeBars(el, MODES.filter((mode) => mode !== 'agile' || entries.some((e) => e.report!.modes.some((x) => x.mode === mode))).map((mode) => ({
        label: t(`mode.${mode}`),
        values: entries.map((e) => {
          const row = e.report!.modes.find((x) => x.mode === mode);
          return row ? (m === 'overhead_pct' ? row.overhead_pct ?? 0 : row[m]) : 0;
        }),
      })), names, { title: t(`metric.${m}.title`, { start: `${t(`startShort.${settings.start}`)}, ${t(`tables.${settings.tables}`)}` }), unit: t(`metric.${m}.unit`), locale: lang });
    }
  });
  const cost = entries[0].report!.cost_model;
  return (
    <div className="trace-charts" data-testid="trace-charts">
      <p className="muted">{t('fair', { settings: settingsWords(t, settings) })}</p>
      <div className="trace-chart-grid">
        {METRICS.map((m) => (
          <figure key={m} data-metric={m}>
            <svg ref={(el) => { refs.current[m] = el; }} />
            <figcaption className="muted small">{t(`metric.${m}.what`)}</figcaption>
          </figure>
        ))}
      </div>
      <div className="table-scroll">
        <table className="trace-table" data-testid="trace-table">
          <caption>{t('table.caption', { settings: settingsWords(t, settings) })}</caption>
          <thead><tr>{(['trace', 'mode', 'refs', 'miss', 'walks', 'exits', 'exitsPer1k', 'cycles', 'overhead'] as const).map((c) => <th key={c} scope="col">{t(`table.${c}`)}</th>)}
            {mine && <th scope="col">{t('mine.column')}</th>}</tr></thead>
          <tbody>
            {entries.flatMap((e, i) => { const onMine = mine ? overheadOn(e.report!, mine) : null; return e.report!.modes.map((r, j) => (
              <tr key={`${e.id}-${r.mode}`} data-trace={i + 1} data-mode={r.mode}>
                {j === 0 && <th scope="rowgroup" rowSpan={e.report!.modes.length} title={names[i]}>{short[i]}</th>}
                <th scope="row">{t(`mode.${r.mode}`)}</th>
                <td className="num" data-field="refs_per_access">{r.refs_per_access.toFixed(3)}</td>
                <td className="num" data-field="tlb_miss_pct">{r.tlb_miss_pct.toFixed(3)}</td>
                <td className="num">{r.walks.toLocaleString(lang)}</td>
                <td className="num" data-field="exits" title={exitWords(t, r.exits_by_kind, lang)}>{r.exits.toLocaleString(lang)}</td>
                <td className="num">{r.exits_per_1k.toFixed(3)}</td>
                <td className="num">{r.cycles_per_access.toFixed(2)}</td>
                <td className="num" data-field="overhead_pct">{r.overhead_pct === null ? '–' : `${r.overhead_pct.toFixed(2)} %`}</td>
                {onMine && <td className="num" data-field="overhead_mine">{`${onMine[r.mode].toFixed(2)} %`}</td>}
              </tr>
            )); })}
          </tbody>
        </table>
      </div>
      {entries.some((e) => e.report!.modes.some((r) => r.refs_by_where)) && (
        <div className="table-scroll">
          <table className="trace-table" data-testid="trace-where">
            <caption>{t('where.caption', { settings: settingsWords(t, settings) })}</caption>
            <thead><tr><th scope="col">{t('table.trace')}</th><th scope="col">{t('table.mode')}</th>
              {WHERE.map((w) => <th key={w} scope="col">{t(`where.${w}`, { cycles: cost.ref_cycles_by_where?.[w] ?? '–' })}</th>)}
              <th scope="col">{t('where.cycles')}</th></tr></thead>
            <tbody>
              {entries.flatMap((e, i) => e.report!.modes.filter((r) => r.refs_by_where).map((r, j) => (
                <tr key={`${e.id}-${r.mode}`} data-trace={i + 1} data-mode={r.mode}>
                  {j === 0 && <th scope="rowgroup" rowSpan={e.report!.modes.length} title={names[i]}>{short[i]}</th>}
                  <th scope="row">{t(`mode.${r.mode}`)}</th>
                  {WHERE.map((w) => <td key={w} className="num" data-field={`where-${w}`}>{r.refs_by_where![w].toLocaleString(lang)}</td>)}
                  <td className="num" data-field="ref_cycles">{(r.ref_cycles ?? 0).toLocaleString(lang)}</td>
                </tr>
              )))}
            </tbody>
          </table>
        </div>
      )}
      <p className="muted small" data-testid="trace-cost">{cost.per_ref === 'by-where' && cost.ref_cycles_by_where
        ? t('costByWhere', { access: cost.cycles_per_access, l1: cost.ref_cycles_by_where.l1, l2: cost.ref_cycles_by_where.l2,
          llc: cost.ref_cycles_by_where.llc ?? '–', memory: cost.ref_cycles_by_where.memory, walk: cost.ref_cycles_by_where.walk_cache,
          exit: cost.cycles_per_exit.toLocaleString(lang), trap: cost.refill_trap })
        : t('cost', { access: cost.cycles_per_access, ref: cost.cycles_per_ref, exit: cost.cycles_per_exit.toLocaleString(lang), trap: cost.refill_trap })}</p>
      {entries.map((e, i) => <WhyList key={e.id} t={t} lang={lang} label={names[i]} report={e.report!} />)}
    </div>
  );
}

/* Under the charts: one generated sentence per mode, from the report's counters. */
function WhyList({ t, lang, label, report }: { t: T; lang: string; label: string; report: NonNullable<Entry['report']> }) {
  const say = (r: Reason) => {
    const v: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(r.values)) v[k] = typeof x === 'number' ? x.toLocaleString(lang) : x;
    if (r.key === 'why.exits') v.kinds = t(`exit.${r.values.kind}`, { count: r.values.n as number, n: (r.values.n as number).toLocaleString(lang) });
    return t(r.key, v);
  };
  return (
    <div className="trace-why" data-testid="trace-why">
      <p className="small"><b>{t('why.heading', { label })}</b></p>
      <ul className="small">
        {explainReplay(report).map((w) => (
          <li key={w.mode} data-mode={w.mode}>{t('why.item', { mode: t(`mode.${w.mode}`), text: [say(w.head), ...w.reasons.map(say)].join(t('why.sep')) })}</li>
        ))}
      </ul>
    </div>
  );
}

function exitWords(t: T, kinds: Record<string, number>, lang: string): string {
  const parts = Object.entries(kinds).filter(([, n]) => n > 0).map(([k, n]) => t(`exit.${k}`, { count: n, n: n.toLocaleString(lang) }));
  return parts.length ? parts.join(', ') : t('exit.none');
}
