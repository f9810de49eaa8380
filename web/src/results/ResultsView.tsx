/* The Results tab: drop or pick hw-lab result files (validated against the hw-lab schema),
 * keep them in IndexedDB, compare them with each other and with the published figures, and,
 * when the page comes from a class server, upload to a class and see the class. */
import { useCallback, useEffect, useState } from 'react';
import { ClassPanel } from './ClassPanel';
import { fmt } from './charts';
import { METRICS, summarize, type MetricKey } from './extract.mjs';
import { Published } from './Published';
import { addResult, deleteResult, listResults, putResult, type Stored } from './store';
import { checkResult } from './validate';
import './results.css';

type Msg = { kind: 'ok' | 'error'; text: string; details?: string[] } | null;

export function ResultsView() {
  const [items, setItems] = useState<Stored[]>([]);
  const [selected, setSelected] = useState<Set<number>>(new Set());
  const [msg, setMsg] = useState<Msg>(null);
  const [over, setOver] = useState(false);
  const [loaded, setLoaded] = useState(false);

  const refresh = useCallback(async () => {
    try {
      const all = await listResults();
      setItems(all);
      setSelected((s) => (s.size || !all.length ? new Set([...s].filter((k) => all.some((a) => a.key === k))) : new Set(all.map((a) => a.key))));
    } catch (e) { setMsg({ kind: 'error', text: `Could not read the results kept in this browser: ${(e as Error).message}` }); }
    setLoaded(true);
  }, []);
  useEffect(() => { void refresh(); }, [refresh]);

  const load = async (files: FileList | File[] | null) => {
    for (const file of Array.from(files ?? [])) {
      let text: string;
      try { text = await file.text(); } catch (e) { setMsg({ kind: 'error', text: `Could not read ${file.name}: ${(e as Error).message}` }); continue; }
      const c = checkResult(text);
      if (!c.ok) {
        setMsg({ kind: 'error', text: `${file.name} is not a valid hw-lab result.`, details: c.problems.slice(0, 10).map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)) });
        continue;
      }
      const s = summarize(c.result);
      const label = `${s.cpu_model} · ${s.hypervisor === 'none (bare metal)' ? 'bare metal' : s.hypervisor}`.slice(0, 80);
      try {
        const key = Number(await addResult(label, c.result));
        setSelected((old) => new Set([...old, key]));
        setMsg({ kind: 'ok', text: `Added ${file.name} (${s.cpu_model}, ${c.result.mode} run of ${c.result.created_utc}).` });
      } catch (e) { setMsg({ kind: 'error', text: `The browser refused to keep ${file.name}: ${(e as Error).message}` }); }
    }
    await refresh();
  };

  const mine = items.filter((i) => selected.has(i.key));
  const metricKeys = Object.keys(METRICS) as MetricKey[];

  return (
    <div className="results-page">
      <h2>Your results</h2>
      <div className={over ? 'dropzone over' : 'dropzone'} data-testid="dropzone"
        onDragOver={(e) => { e.preventDefault(); setOver(true); }} onDragLeave={() => setOver(false)}
        onDrop={(e) => { e.preventDefault(); setOver(false); void load(e.dataTransfer.files); }}>
        <p>Drop a <code>hwlab-result.json</code> here (from <code>hw-lab/run</code>), or</p>
        <label className="filebtn">pick a file… <input type="file" accept=".json,application/json" multiple data-testid="result-file" onChange={(e) => { void load(e.target.files); e.target.value = ''; }} /></label>
      </div>
      {msg && (
        <div className={msg.kind === 'error' ? 'error' : 'okmsg'} role={msg.kind === 'error' ? 'alert' : 'status'} data-testid="results-message">
          {msg.text}
          {msg.details && <ul>{msg.details.map((d, i) => <li key={i}><code>{d}</code></li>)}</ul>}
        </div>
      )}
      {loaded && !items.length && <p className="muted">No results yet. They stay in this browser (IndexedDB) until you remove them.</p>}
      {items.length > 0 && (
        <div className="table-wrap">
          <table className="side-by-side" data-testid="my-results">
            <thead>
              <tr><th scope="col">compare</th><th scope="col">label</th>
                {metricKeys.map((k) => <th scope="col" key={k}>{METRICS[k].label} <span className="muted">({METRICS[k].unit})</span></th>)}<th /></tr>
            </thead>
            <tbody>
              {items.map((it) => {
                const s = summarize(it.result);
                return (
                  <tr key={it.key}>
                    <td><input type="checkbox" aria-label={`compare ${it.label}`} checked={selected.has(it.key)} onChange={(e) => setSelected((old) => { const n = new Set(old); if (e.target.checked) n.add(it.key); else n.delete(it.key); return n; })} /></td>
                    <td>
                      <input className="label-input" aria-label="label" defaultValue={it.label} maxLength={80}
                        onBlur={(e) => { if (e.target.value !== it.label) void putResult({ ...it, label: e.target.value }).then(refresh); }} />
                      <div className="muted small">{s.cpu_model} · {s.arch} · {s.hypervisor} · {s.tdp} · {it.result.mode} · {it.result.created_utc}</div>
                    </td>
                    {metricKeys.map((k) => <td key={k} className="num">{s.metrics[k] === null ? '–' : fmt(s.metrics[k]!)}</td>)}
                    <td><button type="button" onClick={() => void deleteResult(it.key).then(refresh)} aria-label={`remove ${it.label}`}>Remove</button></td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <ClassPanel mine={mine} />
      <h2>Against the published figures</h2>
      <Published mine={mine} />
    </div>
  );
}
