/* The app shell: view tabs, scenario and access pickers, step state, playback, theme and
 * keyboard. All shareable state (view, example or inline scenario, access, step) lives in
 * the URL; the views below only receive a trace and the step to draw. */
import { lazy, Suspense, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { Result, Scenario } from '../../wasm-core/js/types';
import type { Vmsim } from '../../wasm-core/js/vmsim';
import { DEFAULT_COMPARE, TABLES, type CompareInput, type Tables } from './model/compare';
import { accessLabel } from './model/decode';
import { EXAMPLES, EXAMPLE_NAMES, scenarioDescription } from './model/examples';
import { parseUrl, toSearch, type UrlState, type View } from './model/url';
import { CachePanel } from './views/CachePanel';
import { Controls } from './views/Controls';
import { MemoryView } from './views/MemoryView';
import { EntryPanel, WalkView } from './views/WalkView';
import { BochsBadge, BochsReads } from './views/BochsVerified';
import { ResultsTab } from './results/ResultsTab';
import { releaseAfterPick, stepAction, stepTo } from './views/keys';
import { useTranslation } from 'react-i18next';
import { LANG_NAMES, saveLang, savedLang } from './i18n';
import { LANGS, type Lang } from './lessons/langs';
import { StartHere } from './StartHere';

// The tabs' code, loaded on first use. Pointing at a tab (or focusing it) starts the load;
// a tab whose code has arrived by the click renders at once, without suspending (a
// suspended first render costs React's 300 ms reveal throttle, a third of opening the
// live guest from a warm cache).
type Module<P> = { default: React.ComponentType<P> };
function preloadable<P>(loader: () => Promise<Module<P>>) {
  let mod: Module<P> | undefined;
  let pending: Promise<Module<P>> | undefined;
  const load = () => (pending ??= loader().then((m) => (mod = m), (e) => { pending = undefined; throw e; }));
  // React.lazy takes any thenable: one that calls back at once lets it render synchronously.
  const Component = lazy(() => (mod ? ({ then: (done: (m: Module<P>) => void) => done(mod!) } as unknown as Promise<Module<P>>) : load()));
  return { Component, load };
}
// The live guest (v86, xterm.js: 700 KB of JavaScript); its guest images load only when the tab opens.
const live = preloadable(() => import('./live/LiveView'));
// Lessons bring Markdown, KaTeX and i18next.
const lessons = preloadable(() => import('./lessons/LessonsTab'));
// Not on the first view: the compare tab, the VMFUNC panel and the playground.
const compare = preloadable(() => import('./views/CompareView'));
const playground = preloadable(() => import('./views/Playground'));
const LiveView = live.Component;
const LessonsTab = lessons.Component;
const CompareView = compare.Component;
const Playground = playground.Component;
const VmfuncPanel = lazy(() => import('./views/VmfuncPanel'));
const LOADERS: Partial<Record<View, () => Promise<unknown>>> = { live: live.load, lessons: lessons.load, compare: compare.load, playground: playground.load };
const preload = (v: View) => { void LOADERS[v]?.().catch(() => {}); };   // a failed load shows when the tab opens

// Lessons first: they are where a learner starts, and they open the other tabs in turn.
const TABS: [View, string][] = [['lessons', 'Lessons'], ['walk', 'Walk'], ['memory', 'Memory'], ['compare', 'Compare'], ['playground', 'Playground'], ['results', 'Results'], ['live', 'Live guest']];

type Theme = 'light' | 'dark' | null;
function initialTheme(): Theme {
  try { const t = localStorage.getItem('vmemlab-theme'); return t === 'light' || t === 'dark' ? t : null; } catch { return null; }
}

export function App({ engine }: { engine: Vmsim }) {
  const [url, setUrl] = useState<UrlState>(() => parseUrl(location.search));
  const [playing, setPlaying] = useState(false);
  const [speed, setSpeed] = useState(1);
  const [theme, setTheme] = useState<Theme>(initialTheme);
  const { t, i18n } = useTranslation();
  const { t: tv } = useTranslation('views');
  // A language in the URL wins over the saved one (a shared link shows what was shared).
  useEffect(() => {
    if (url.lang && i18n.language !== url.lang) void i18n.changeLanguage(url.lang);
  }, [url.lang, i18n]);

  const update = useCallback((patch: Partial<UrlState>, push = false) => {
    setUrl((u) => {
      const next = { ...u, ...patch };
      // The Results tab's class (and a teacher link's #teacher= token) stay in the address
      // bar while the learner stays on that tab: the teacher's link remains bookmarkable
      // after a change of language.
      const here = new URLSearchParams(location.search);
      const keep = next.view === 'results' ? ['class', 'mine'].filter((k) => here.has(k)) : [];
      let search = toSearch(next);
      for (const k of keep) search += `&${k}=${encodeURIComponent(here.get(k)!)}`;
      const hash = next.view === 'results' ? location.hash : '';
      if (search !== location.search || hash !== location.hash) history[push ? 'pushState' : 'replaceState'](null, '', search + hash);
      return next;
    });
  }, []);
  useEffect(() => {
    const onPop = () => setUrl(parseUrl(location.search));
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, []);

  // The scenario on show: an inline one from the playground/compare, or a bundled example.
  const scenarioText = url.scenario ?? JSON.stringify(EXAMPLES[url.example] ?? EXAMPLES['ept-4k'], null, 2);
  // The run does not depend on the language: the error is a key, put into words when shown.
  const run = useMemo((): { result: Result | null; error: 'noExample' | 'rejected' | null; detail?: string } => {
    if (!url.scenario && !EXAMPLES[url.example]) return { result: null, error: 'noExample' };
    try { return { result: engine.run(scenarioText), error: null }; } catch (e) { return { result: null, error: 'rejected', detail: (e as Error).message }; }
  }, [engine, scenarioText, url.scenario, url.example]);
  const result = run.result;
  // A scenario with EPTP switching (or VMCALLs) gets the VMFUNC panel: the list, the index, the cost.
  const usesVmfunc = !!result && result.accesses.some((a) => a.op === 'vmfunc' || a.op === 'vmcall');
  const accessIndex = result ? Math.min(url.access, Math.max(0, result.accesses.length - 1)) : 0;
  const access = result?.accesses[accessIndex] ?? null;
  const total = access?.steps.length ?? 0;
  const step = Math.min(url.step, total);

  const [pgText, setPgText] = useState(scenarioText);
  const lastScenario = useRef(scenarioText);
  useEffect(() => { if (lastScenario.current !== scenarioText) { lastScenario.current = scenarioText; setPgText(scenarioText); } }, [scenarioText]);

  const goStep = useCallback((n: number) => update({ step: Math.max(0, Math.min(total, n)) }), [update, total]);
  const togglePlay = useCallback(() => {
    setPlaying((p) => {
      if (!p && step >= total) update({ step: 0 });
      return !p;
    });
  }, [step, total, update]);

  useEffect(() => {
    if (!playing) return;
    if (step >= total) { setPlaying(false); return; }
    const t = setTimeout(() => update({ step: step + 1 }), 700 / speed);
    return () => clearTimeout(t);
  }, [playing, step, total, speed, update]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (url.view !== 'walk' && url.view !== 'memory') return;
      const action = stepAction(e);
      if (!action) return;
      e.preventDefault();   // the page does not scroll sideways as well
      if (action === 'play') { togglePlay(); return; }
      setPlaying(false);
      goStep(stepTo(action, step, total));
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [url.view, step, total, goStep, togglePlay]);

  useEffect(() => {
    const root = document.documentElement;
    if (theme) root.dataset.theme = theme; else delete root.dataset.theme;
    try { if (theme) localStorage.setItem('vmemlab-theme', theme); } catch { /* private mode: theme just is not kept */ }
  }, [theme]);
  const dark = theme ? theme === 'dark' : typeof matchMedia === 'function' && matchMedia('(prefers-color-scheme: dark)').matches;

  // The benchmark and the end-to-end tests wait for this mark: the walk view is on screen with a trace.
  useEffect(() => {
    if (result && url.view === 'walk' && !document.body.dataset.ready) {
      document.body.dataset.ready = '1';
      performance.mark('vmemlab:walk-rendered');
    }
  }, [result, url.view]);

  const refsDone = access ? access.steps.slice(0, step).reduce((m, s) => Math.max(m, s.ref ?? 0), 0) : 0;
  const compareInput: CompareInput = {
    gva: url.gva ?? DEFAULT_COMPARE.gva, gpa: url.gpa ?? DEFAULT_COMPARE.gpa,
    op: (['read', 'write', 'fetch'].includes(url.op ?? '') ? url.op : DEFAULT_COMPARE.op) as CompareInput['op'],
    user: false,
    tables: TABLES.includes(url.tables as Tables) ? (url.tables as Tables) : DEFAULT_COMPARE.tables,
  };

  const picker = (
    <div className="pickers">
      <label>{t('scenario')}
        <select value={url.scenario ? '' : url.example} aria-label={tv('app.exampleScenario')}
          onChange={(e) => { setPlaying(false); update({ example: e.target.value, scenario: null, access: 0, step: 0 }, true); releaseAfterPick(e.target); }}>
          {url.scenario && <option value="">{tv('app.yourScenario')}</option>}
          {EXAMPLE_NAMES.map((n) => <option key={n} value={n}>{n}</option>)}
        </select>
      </label>
      {result && result.accesses.length > 1 && (
        <label>{tv('app.access')}
          <select value={accessIndex} aria-label={tv('app.access')} onChange={(e) => { setPlaying(false); update({ access: Number(e.target.value), step: 0 }, true); releaseAfterPick(e.target); }}>
            {result.accesses.map((a, i) => <option key={i} value={i}>{accessLabel(a, i, tv)}</option>)}
          </select>
        </label>
      )}
      {result && <span className="mode-badge" data-mode={result.mode}>{result.mode} · {result.guest_paging}{result.nested_levels ? ' · ' + tv('app.nestedLevels', { count: result.nested_levels }) : ''}</span>}
    </div>
  );

  const controls = access && (
    <Controls step={step} total={total} refOf={refsDone} refs={access.memory_refs} playing={playing} speed={speed}
      onStep={(n) => { setPlaying(false); goStep(n); }} onPlay={togglePlay} onSpeed={setSpeed} />
  );

  const description = url.scenario ? null : (EXAMPLES[url.example] as Scenario | undefined)?.description;

  return (
    <div className="app">
      <header className="top">
        <h1><a href="?" aria-label={tv('app.home')}>vmemlab</a></h1>
        <nav className="tabs" aria-label={tv('app.views')}>
          {TABS.map(([v, label]) => (
            <button key={v} type="button" aria-pressed={url.view === v} className={url.view === v ? 'tab active' : 'tab'}
              onPointerEnter={() => preload(v)} onFocus={() => preload(v)}
              onClick={() => { setPlaying(false); update({ view: v }, true); }}>{t(`tab.${v}`, label)}</button>
          ))}
        </nav>
        <select className="ui-lang" aria-label={t('language')} value={url.lang ?? savedLang()}
          onChange={(e) => { const l = e.target.value as Lang; saveLang(l); update({ lang: l }); }}>
          {LANGS.map((l) => <option key={l} value={l}>{LANG_NAMES[l]}</option>)}
        </select>
        <button type="button" className="theme" onClick={() => setTheme(dark ? 'light' : 'dark')} aria-label={t('themeTo', { theme: tv(`app.theme.${dark ? 'light' : 'dark'}`) })}>
          {dark ? '☀' : '☾'}
        </button>
      </header>
      <main>
        <StartHere onBegin={() => { setPlaying(false); update({ view: 'lessons', lesson: 'four-address-spaces' }, true); }} />
        {(url.view === 'walk' || url.view === 'memory') && (
          <>
            {picker}
            {description && <p className="desc">{scenarioDescription(EXAMPLES[url.example], url.example, tv)}</p>}
            {!url.scenario && <BochsBadge example={url.example} />}
            {run.error && <p className="error" role="alert">{tv(`app.${run.error}`, { name: url.example })}{run.detail && <> <span lang="en">{run.detail}</span></>}</p>}
            {result && access && (
              <>
                {controls}
                {usesVmfunc && (
                  <Suspense fallback={<p className="muted">{tv('app.loading')}</p>}>
                    <VmfuncPanel engine={engine} scenarioText={scenarioText} result={result} accessIndex={accessIndex} step={step} />
                  </Suspense>
                )}
                {url.view === 'walk' ? (
                  <>
                    <WalkView result={result} access={access} step={step} onStep={(n) => { setPlaying(false); goStep(n); }}>
                      {!url.scenario && <BochsReads example={url.example} accessIndex={accessIndex} access={access} />}
                    </WalkView>
                    <CachePanel result={result} accessIndex={accessIndex} onAccess={(i) => update({ access: i, step: 0 })} />
                  </>
                ) : (
                  <div className="memory-page">
                    <MemoryView result={result} access={access} step={step} />
                    <EntryPanel result={result} access={access} step={step} />
                    <CachePanel result={result} accessIndex={accessIndex} onAccess={(i) => update({ access: i, step: 0 })} />
                  </div>
                )}
              </>
            )}
          </>
        )}
        {url.view === 'compare' && (
          <Suspense fallback={<p className="muted">{tv('app.loading')}</p>}>
            <CompareView engine={engine} input={compareInput}
              onInput={(i) => update({ gva: i.gva, gpa: i.gpa, op: i.op, tables: i.tables })}
              onOpen={(json, access) => update({ view: 'walk', scenario: json, access, step: 0 }, true)} />
          </Suspense>
        )}
        {url.view === 'results' && <ResultsTab />}
        {url.view === 'lessons' && (
          <Suspense fallback={<p className="muted">{tv('app.loadingLessons')}</p>}>
            <LessonsTab engine={engine} lesson={url.lesson} seed={url.seed} seeds={url.seeds} sheet={url.sheet} lang={url.lang}
              onNavigate={(patch) => update(patch.lesson !== undefined ? { seeds: [], ...patch } : patch, true)}
              onOpenWalk={(scenario) => update({ view: 'walk', scenario, access: 0, step: 0 }, true)} />
          </Suspense>
        )}
        {url.view === 'live' && (
          <Suspense fallback={<p className="muted">{tv('app.loadingLive')}</p>}>
            <LiveView engine={engine} onOpen={(json) => update({ view: 'walk', scenario: json, access: 0, step: 0 }, true)} />
          </Suspense>
        )}
        {url.view === 'playground' && (
          <Suspense fallback={<p className="muted">{tv('app.loading')}</p>}>
            <Playground engine={engine} text={pgText} onText={setPgText} access={url.access}
              onShare={(json) => update({ scenario: json })} onAccess={(i) => update({ access: i, step: 0 })}
              onRun={(json) => { setPlaying(false); update({ view: 'walk', scenario: json, access: 0, step: 0 }, true); }} />
          </Suspense>
        )}
      </main>
      <footer className="foot">
        <span>{url.view === 'walk' || url.view === 'memory' ? t('keys') + ' · ' : url.view === 'lessons' ? t('keysLessons') + ' · ' : ''}{tv('app.engine', { version: engine.version })}</span>
      </footer>
    </div>
  );
}
