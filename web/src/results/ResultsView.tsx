/* The Results tab: drop or pick hw-lab result files (validated against the hw-lab schema),
 * keep them in IndexedDB, compare them with each other and with the published figures, and,
 * when the page comes from a class server, upload to a class and see the class. */
import { useCallback, useEffect, useState } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import { ClassPanel } from './ClassPanel';
import { fmt } from './charts';
import { METRICS, summarize, type MetricKey } from './extract.mjs';
import { metricLabel, metricUnit, showCpu, showHypervisor, showMode, showTdp } from './labels';
import { Published } from './Published';
import { because, Said, type Saying } from './Said';
import { addResult, deleteResult, listResults, putResult, type Stored } from './store';
import { checkResult, type Problem } from './validate';
import './results.css';
import { YourProgram } from '../trace';

/** What became of one file: added or refused, with at most SHOWN problems listed and how
 * many more there were. */
type Outcome = { kind: 'ok' | 'error'; say: Saying; details?: Problem[]; more?: number };
const SHOWN = 10;

/** A label no other kept result has: CPU · hypervisor · when the run was made, then #2, #3
 * for the same run kept twice. */
function distinctLabel(base: string, taken: Set<string>): string {
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base} #${i}`)) return `${base} #${i}`;
}

export function ResultsView() {
  const { t, i18n } = useTranslation('results');
  const lang = i18n.language;
  const [items, setItems] = useState<Stored[]>([]);
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const [msgs, setMsgs] = useState<Outcome[]>([]);
  const [over, setOver] = useState(false);
  const [loaded, setLoaded] = useState(false);

  const refresh = useCallback(async () => {
    try {
      const all = await listResults();
      setItems(all);
      setSelected((s) => (s.size || !all.length ? new Set([...s].filter((k) => all.some((a) => a.key === k))) : new Set(all.map((a) => a.key))));
    } catch (e) { setMsgs([{ kind: 'error', say: { key: 'msg.readStore', ...because(e) } }]); }
    setLoaded(true);
  }, []);
  useEffect(() => { void refresh(); }, [refresh]);

  // Every file dropped or picked at once gets its own line: added, or why not.
  const load = async (files: FileList | File[] | null) => {
    const out: Outcome[] = [];
    const taken = new Set(items.map((i) => i.label));
    for (const file of Array.from(files ?? [])) {
      let text: string;
      try { text = await file.text(); } catch (e) { out.push({ kind: 'error', say: { key: 'msg.readFile', values: { file: file.name }, ...because(e) } }); continue; }
      const c = checkResult(text, t, lang);
      if (!c.ok) {
        out.push({ kind: 'error', say: { key: 'msg.invalid', values: { file: file.name } }, details: c.problems.slice(0, SHOWN), more: Math.max(0, c.problems.length - SHOWN) });
        continue;
      }
      const s = summarize(c.result);
      const when = String(c.result.created_utc ?? '').replace('T', ' ').slice(0, 16);
      const label = distinctLabel(`${s.cpu_model} · ${s.hypervisor === 'none (bare metal)' ? t('mine.bareMetal') : showHypervisor(t, s.hypervisor)} · ${when}`.slice(0, 76), taken);
      try {
        const key = Number(await addResult(label, c.result));
        taken.add(label);
        setSelected((old) => new Set([...old, key]));
        out.push({ kind: 'ok', say: { key: 'msg.added', values: { file: file.name, cpu: s.cpu_model, mode: c.result.mode, created: c.result.created_utc } } });
      } catch (e) { out.push({ kind: 'error', say: { key: 'msg.refused', values: { file: file.name }, ...because(e) } }); }
    }
    setMsgs(out);
    await refresh();
  };
  const problems = (m: Outcome) => (m.details?.length ? (
    <ul>{m.details.map((d, i) => (
      <li key={i}><code>{d.path ? `${d.path}: ` : ''}{d.detail ? <Said t={t} say={{ key: 'check.withDetail', values: { message: d.message }, raw: d.detail }} /> : d.message}</code></li>
    ))}{m.more ? <li className="more" data-testid="more-problems">{t('msg.more', { count: m.more })}</li> : null}</ul>
  ) : null);
  const failed = msgs.some((m) => m.kind === 'error');
  // Numbers that depend on the run's memory size (quick 64 MiB, full 1 GiB) are compared
  // only within one size: the table says so when the kept results mix sizes.
  const runSize = (s: { mode: string; mem_mib: number | null }) => (s.mem_mib ? t('class.size', { mode: showMode(t, s.mode), mib: s.mem_mib }) : t('class.sizeUnknown', { mode: showMode(t, s.mode) }));
  const sizes = [...new Set(items.map((it) => runSize(summarize(it.result))))];

  const mine = items.filter((i) => selected.has(i.key));
  const metricKeys = Object.keys(METRICS) as MetricKey[];
  // The summary's words (run mode, an unknown CPU) in the language shown now.
  const say = (m: Saying) => (m.key === 'msg.added' ? { ...m, values: { ...m.values, mode: showMode(t, m.values?.mode as string), cpu: showCpu(t, m.values?.cpu as string) } } : m);

  return (
    <div className="results-page">
      <h2>{t('mine.heading')}</h2>
      <div className={over ? 'dropzone over' : 'dropzone'} data-testid="dropzone"
        onDragOver={(e) => { e.preventDefault(); setOver(true); }} onDragLeave={() => setOver(false)}
        onDrop={(e) => { e.preventDefault(); setOver(false); void load(e.dataTransfer.files); }}>
        <p><Trans t={t} i18nKey="mine.drop" components={{ code: <code /> }} /></p>
        <label className="filebtn">{t('mine.pick')} <input type="file" accept=".json,application/json" multiple data-testid="result-file" onChange={(e) => { void load(e.target.files); e.target.value = ''; }} /></label>
      </div>
      {msgs.length === 1 && (
        <div className={failed ? 'error' : 'okmsg'} role={failed ? 'alert' : 'status'} data-testid="results-message">
          <Said t={t} say={say(msgs[0].say)} />
          {problems(msgs[0])}
        </div>
      )}
      {msgs.length > 1 && (
        <div className={failed ? 'error' : 'okmsg'} role={failed ? 'alert' : 'status'} data-testid="results-message">
          <ul className="outcomes">{msgs.map((m, i) => (
            <li key={i} className={m.kind === 'error' ? 'refused' : 'added'} data-testid="file-outcome"><Said t={t} say={say(m.say)} />{problems(m)}</li>
          ))}</ul>
        </div>
      )}
      {loaded && !items.length && <p className="muted">{t('mine.empty')}</p>}
      {sizes.length > 1 && <p className="muted" data-testid="my-size-note">{t('mine.sizesMixed', { sizes: sizes.join(', ') })}</p>}
      {items.length > 0 && (
        <div className="table-wrap">
          <table className="side-by-side" data-testid="my-results">
            <thead>
              <tr><th scope="col">{t('mine.compare')}</th><th scope="col">{t('mine.label')}</th>
                {metricKeys.map((k) => <th scope="col" key={k}>{metricLabel(t, k)} <span className="muted">{t('mine.unit', { unit: metricUnit(t, k) })}</span></th>)}<th /></tr>
            </thead>
            <tbody>
              {items.map((it) => {
                const s = summarize(it.result);
                return (
                  <tr key={it.key}>
                    <td><input type="checkbox" aria-label={t('mine.compareOne', { label: it.label })} checked={selected.has(it.key)} onChange={(e) => setSelected((old) => { const n = new Set(old); if (e.target.checked) n.add(it.key); else n.delete(it.key); return n; })} /></td>
                    <td>
                      <input className="label-input" aria-label={t('mine.label')} defaultValue={it.label} maxLength={80}
                        onBlur={(e) => { if (e.target.value !== it.label) void putResult({ ...it, label: e.target.value }).then(refresh); }} />
                      <div className="muted small">{showCpu(t, s.cpu_model)} · {s.arch} · {showHypervisor(t, s.hypervisor)} · {showTdp(t, s.tdp)} · {runSize(s)} · {it.result.created_utc}</div>
                    </td>
                    {metricKeys.map((k) => <td key={k} className="num">{s.metrics[k] === null ? '–' : fmt(s.metrics[k]!, lang)}</td>)}
                    <td><button type="button" onClick={() => void deleteResult(it.key).then(refresh)} aria-label={t('mine.removeOne', { label: it.label })}>{t('mine.remove')}</button></td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <ClassPanel mine={mine} />
      <YourProgram where="results" />
      <h2>{t('published.heading')}</h2>
      <Published mine={mine} />
    </div>
  );
}
