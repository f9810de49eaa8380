/* The class part of the Results tab; shown only when the page is served by the class
 * server (web/server). Teacher: create a class, keep the private link, see who uploaded
 * what (the names students chose), export CSV, remove uploads. Student: join with the code,
 * optionally give a name, upload (each file once, however often the button is pressed),
 * see the class with their own points. Numbers that depend on the run's size (quick or
 * full) are shown per size, never in one column or row. */
import { useCallback, useEffect, useRef, useState } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import { stripPlot, fmt, type StripPoint } from './charts';
import { groupLabel, metricLabel, metricUnit, showGroupValue, showHypervisor, showMode, showTdpAndBackend, showCpu } from './labels';
import { Said, type Saying } from './Said';
import { ClassAdmin } from './ClassAdmin';
import { Source } from './Published';
import { referencesFor } from './references';
import { JoinPanel } from './JoinPanel';
import { Dashboard } from './Dashboard';
import { StudentJoin } from '../progress/StudentJoin';
import { onStudentChange, studentOf } from '../progress/student';
import { CourseAdmin } from '../course/CourseAdmin';
import { setStanding, standingOf } from '../course/standing';
import { when } from '../course/StudentCourse';
import { GROUPS, METRICS, type GroupKey, type MetricKey, type Summary } from './extract.mjs';
import { classKey, forgetClass, saveClassKey, lastClass, newIdempotencyKey, putResult, receipts, saveLastClass, saveReceipts, saveStudentName, saveTeacherToken, studentName, teacherToken, type Receipt, type Stored } from './store';

type Row = Summary & { id: string; created_at: string; name?: string | null };
/** closed_at: when its teacher closed it (uploads refused), null while open. */
interface ClassData { class: { code: string; name: string; closed_at?: string | null }; results: Row[] }
/** One page of GET /api/classes/{code}/results; next_cursor is null on the last page. */
type ClassPage = ClassData & { next_cursor: string | null };
const PAGE = 500;
/** How often the teacher's view of the uploads is read again. */
export const LIVE_MS = 10_000;
const NAME_MAX = 60;

async function call<T>(path: string, init?: RequestInit): Promise<{ status: number; body: T }> {
  const r = await fetch(path, init);
  const text = await r.text();
  let body: unknown = null;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  if (!r.ok) {
    const b = body as { message?: string; need?: string } | null;
    throw Object.assign(new Error(b?.message ?? `HTTP ${r.status}`), { status: r.status, need: b?.need });
  }
  return { status: r.status, body: body as T };
}
const api = async <T,>(path: string, init?: RequestInit): Promise<T> => (await call<T>(path, init)).body;

/** A join code as the server makes them (ABCD-EFGH), also when typed without its dash or in
 * lower case. */
export const withDash = (raw: string) => { const c = raw.trim().toUpperCase(); return /^[A-Z0-9]{8}$/.test(c) ? `${c.slice(0, 4)}-${c.slice(4)}` : c; };

/** A run's size, the key numbers are compared within: "quick 64", "full 1024". */
const sizeKey = (r: Pick<Summary, 'mode' | 'mem_mib'>) => `${r.mode ?? '?'} ${r.mem_mib ?? '?'}`;

export function ClassPanel({ mine }: { mine: Stored[] }) {
  const { t, i18n } = useTranslation('results');
  const lang = i18n.language;
  const [server, setServer] = useState<boolean | null>(null);
  const [code, setCode] = useState<string>(() => withDash(new URLSearchParams(location.search).get('class') ?? '') || lastClass() || '');
  const [joinText, setJoinText] = useState(code);
  const [data, setData] = useState<ClassData | null>(null);
  const [err, setErr] = useState<Saying | null>(null);
  const [note, setNote] = useState<Saying | null>(null);
  const [created, setCreated] = useState<{ code: string; teacher_token: string } | null>(null);
  const [needKey, setNeedKey] = useState<'ask' | 'wrong' | null>(null);
  // The measure the lessons and the published figures compare first: cpuid's minimum,
  // measured the published way.
  const [metric, setMetric] = useState<MetricKey>('cpuid_published_min_cycles');
  // Grouped by hypervisor: the opening measure's two clouds are bare metal and VMs (the
  // teacher guide reads the chart this way).
  const [group, setGroup] = useState<GroupKey>('hypervisor');
  const [name, setName] = useState<string>(() => studentName());
  const [busy, setBusy] = useState<Set<number>>(new Set());
  const inFlight = useRef(new Set<number>()); // read at click time: a second click in the same tick sees the first
  const keys = useRef(new Map<number, string>()); // keys given to results kept before keys existed
  const [, bump] = useState(0);
  // joining or leaving (here or in another tab) changes what this panel offers
  useEffect(() => onStudentChange(() => bump((n) => n + 1)), []);
  const svg = useRef<SVGSVGElement>(null);

  useEffect(() => {
    // A teacher link carries the token in the fragment (never sent to the server). It stays
    // in the address bar: a bookmark of this page is the way back from another browser.
    const m = /[#&]teacher=([A-Za-z0-9_-]{10,100})/.exec(location.hash);
    const c = new URLSearchParams(location.search).get('class')?.toUpperCase();
    if (m && c) saveTeacherToken(c, m[1]);
    const mineId = new URLSearchParams(location.search).get('mine');
    if (c && mineId && /^[A-Za-z0-9_-]{1,32}$/.test(mineId) && !receipts(c).some((r) => r.id === mineId)) saveReceipts(c, [...receipts(c), { id: mineId, receipt: '', label: 'uploaded with hw-lab/run' }]);
    fetch('/api/health').then((r) => r.ok && r.headers.get('content-type')?.includes('json') ? r.json() : null).then((j) => setServer(!!j?.ok), () => setServer(false));
  }, []);

  // The teacher's request carries the token: the server adds the students' names. The
  // class comes a page at a time (at most 500 uploads each), followed until next_cursor is
  // null; a large class says how many uploads have arrived so far. A newer load (another
  // class, an upload) makes an older one stop.
  const [loaded, setLoaded] = useState<number | null>(null);
  const loads = useRef(0);
  const load = useCallback(async (c: string) => {
    if (!c) return;
    const tok = teacherToken(c);
    const init = tok ? { headers: { Authorization: `Bearer ${tok}` } } : undefined;
    const seq = ++loads.current;
    try {
      const results: Row[] = [];
      let cls: ClassData['class'] | null = null;
      let cursor: string | null = null;
      do {
        const q: string = `limit=${PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const p: ClassPage = await api<ClassPage>(`/api/classes/${encodeURIComponent(c)}/results?${q}`, init);
        if (seq !== loads.current) return;
        cls ??= p.class;
        results.push(...p.results);
        cursor = p.next_cursor;
        if (cursor) setLoaded(results.length);
      } while (cursor);
      if (cls) setData({ class: cls, results });
      setErr(null); saveLastClass(c);
    } catch (e) {
      if (seq !== loads.current) return;
      setData(null);
      // A class this browser is a student of, gone: its teacher deleted it (the student's
      // code was right; their answers stay in this browser).
      if ((e as { status?: number }).status === 404 && studentOf(c)) {
        const st = standingOf(c);
        const seen = st?.kind === 'deleted' ? st.seen : new Date().toISOString();
        if (st?.kind !== 'deleted') setStanding(c, { kind: 'deleted', seen });
        setErr({ key: 'course.deleted', values: { code: c, at: when(seen, lang) } });
      } else setErr({ key: 'class.loadFailed', values: { code: c }, raw: (e as Error).message });
    }
    finally { if (seq === loads.current) setLoaded(null); }
  }, [lang]);
  useEffect(() => { if (server && code) void load(code); }, [server, code, load]);
  // The teacher's upload count, chart and table follow new uploads (read again every
  // LIVE_MS while the page is shown), as the exercise grid does.
  const teaching = !!(code && teacherToken(code));
  useEffect(() => {
    if (!server || !teaching) return undefined;
    const timer = setInterval(() => { if (document.visibilityState !== 'hidden') void load(code); }, LIVE_MS);
    return () => clearInterval(timer);
  }, [server, code, teaching, load]);
  // A server that takes a class key says so: the key's field shows before the first Create.
  useEffect(() => {
    if (!server) return;
    fetch('/api/server').then((r) => (r.ok ? r.json() : null)).then((j) => { if (j?.class_key && !classKey()) setNeedKey((k) => k ?? 'ask'); }, () => { /* asked again on Create */ });
  }, [server]);

  const token = code ? teacherToken(code) : null;
  const mineIds = new Set(code ? receipts(code).map((r) => r.id) : []);
  const rows = data?.results ?? [];
  // Run sizes in this class (quick 64 MiB, full 1 GiB, ...), smallest first.
  const sizes = [...new Map(rows.map((r) => [sizeKey(r), r] as const)).entries()].sort((a, b) => (a[1].mem_mib ?? 0) - (b[1].mem_mib ?? 0) || sizeKey(a[1]).localeCompare(sizeKey(b[1])));
  const showSize = (r: Pick<Summary, 'mode' | 'mem_mib'>) => (r.mem_mib ? t('class.size', { mode: showMode(t, r.mode), mib: r.mem_mib }) : t('class.sizeUnknown', { mode: showMode(t, r.mode) }));
  const apart = METRICS[metric].bySize && sizes.length > 1;
  // Who: the name the student chose (the teacher sees it), else the upload's short id.
  // The teacher's chart writes it beside each point; a student's chart names no one.
  const who = (r: Row) => r.name || `#${r.id.slice(0, 6)}`;
  const SEP = '\u0000';
  const points: StripPoint[] = rows.flatMap((r) => {
    const v = r.metrics?.[metric];
    const g = String(r[group] ?? 'unknown');
    return typeof v === 'number' ? [{ group: apart ? `${g}${SEP}${sizeKey(r)}` : g, value: v, mine: mineIds.has(r.id), id: r.id, label: token ? who(r) : undefined, tip: `${who(r)} · ${showCpu(t, r.cpu_model)} · ${showHypervisor(t, r.hypervisor)} · ${showTdpAndBackend(t, r.tdp, r.kvm_backend)} · ${showSize(r)}: ${fmt(v, lang)} ${metricUnit(t, metric)}` }] : [];
  });
  // The published figures this measure compares with, as marks, and how fair that is.
  const refs = referencesFor(metric, t, lang);
  const groupName = (g: string) => {
    const [v, size] = g.split(SEP);
    const shown = showGroupValue(t, group, v);
    const r = size === undefined ? undefined : sizes.find(([k]) => k === size)?.[1];
    return r ? `${shown}\n${showSize(r)}` : shown;
  };
  // The chart's own width on a screen narrower than its 760 units (a phone), else the usual.
  const chartWidth = () => { const w = svg.current?.parentElement?.clientWidth ?? 0; return w > 0 && w < 760 ? Math.max(300, Math.floor(w)) : undefined; };
  useEffect(() => { if (svg.current && data) stripPlot(svg.current, points, { width: chartWidth(), title: t('class.stripTitle', { metric: metricLabel(t, metric), group: groupLabel(t, group) }), unit: metricUnit(t, metric), t, locale: lang, groupLabel: groupName, refs: refs.marks }); });

  if (server === null) return null;
  if (!server) return <p className="muted" data-testid="no-server"><Trans t={t} i18nKey="class.noServer" components={{ code: <code /> }} /></p>;

  // A server started with VMEMLAB_CLASS_KEY asks for its key once; the page keeps it.
  const createClass = async (name: string, typedKey?: string) => {
    const key = (typedKey ?? classKey()).trim();
    try {
      const headers: Record<string, string> = { 'Content-Type': 'application/json' };
      if (key) headers['X-Vmemlab-Class-Key'] = key;
      const r = await api<{ code: string; teacher_token: string }>('/api/classes', { method: 'POST', headers, body: JSON.stringify({ name }) });
      if (key) saveClassKey(key);
      saveTeacherToken(r.code, r.teacher_token);
      // The page's address becomes the teacher link, to bookmark (JoinPanel says so).
      const q = new URLSearchParams(location.search);
      q.set('view', 'results'); q.set('class', r.code); q.delete('mine');
      history.replaceState(null, '', `${location.pathname}?${q}#teacher=${r.teacher_token}`);
      setCreated(r); setCode(r.code); setJoinText(r.code); setErr(null); setNeedKey(null);
    } catch (e) {
      const { need, status } = e as Error & { need?: string; status?: number };
      if (need === 'class_key') { setNeedKey(status === 403 ? 'wrong' : 'ask'); setErr(null); if (status === 403) saveClassKey(''); return; }
      setErr({ key: 'class.createFailed', raw: (e as Error).message });
    }
  };
  // One Idempotency-Key per file: a second click (or a retry after a lost answer) gets the
  // same upload back instead of storing another. The button waits while its upload runs.
  const upload = async (s: Stored) => {
    if (inFlight.current.has(s.key)) return;
    inFlight.current.add(s.key);
    setBusy((b) => new Set(b).add(s.key));
    try {
      let idem = s.idem ?? keys.current.get(s.key);
      if (!idem) {
        idem = newIdempotencyKey();
        keys.current.set(s.key, idem);
        await putResult({ ...s, idem }).catch(() => { /* kept for this page's life anyway */ });
      }
      const headers: Record<string, string> = { 'Content-Type': 'application/json', 'X-Vmemlab-Class': code, 'Idempotency-Key': idem };
      const nm = name.trim();
      if (nm) headers['X-Vmemlab-Name'] = encodeURIComponent(nm);
      const { status, body: r } = await call<{ id: string; receipt: string }>('/api/results', { method: 'POST', headers, body: JSON.stringify(s.result) });
      saveReceipts(code, [...receipts(code).filter((x) => x.id !== r.id), { id: r.id, receipt: r.receipt, label: s.label }]);
      setNote({ key: status === 200 ? 'class.alreadyUploaded' : 'class.uploaded', values: { label: s.label, code } }); setErr(null);
      await load(code);
    } catch (e) {
      setErr({ key: 'class.uploadFailed', raw: (e as Error).message });
      // Closed since this page read the class: read it again, which hides the uploads.
      if ((e as { need?: string }).need === 'open_class') void load(code);
    }
    finally { inFlight.current.delete(s.key); setBusy((b) => { const n = new Set(b); n.delete(s.key); return n; }); }
  };
  const remove = async (id: string, tok: string) => {
    try {
      await api(`/api/classes/${encodeURIComponent(code)}/results/${encodeURIComponent(id)}`, { method: 'DELETE', headers: { Authorization: `Bearer ${tok}` } });
      saveReceipts(code, receipts(code).filter((r: Receipt) => r.id !== id)); bump((n) => n + 1);
      await load(code);
    } catch (e) { setErr({ key: 'class.deleteFailed', raw: (e as Error).message }); }
  };
  // The class is gone from the server: nothing of it is kept here either.
  const deleted = (cls: ClassData['class']) => {
    forgetClass(cls.code);
    const q = new URLSearchParams(location.search);
    q.delete('class'); q.delete('mine');
    history.replaceState(null, '', `${location.pathname}${q.toString() ? `?${q}` : ''}`);
    setData(null); setCreated(null); setCode(''); setJoinText(''); setErr(null);
    setNote({ key: 'life.deleted', values: { name: cls.name, code: cls.code } });
  };
  const exportCsv = async () => {
    try {
      const r = await fetch(`/api/classes/${encodeURIComponent(code)}/export.csv`, { headers: { Authorization: `Bearer ${token}` } });
      if (!r.ok) throw new Error((await r.json().catch(() => null))?.message ?? `HTTP ${r.status}`);
      const a = document.createElement('a');
      a.href = URL.createObjectURL(await r.blob()); a.download = `vmemlab-${code}.csv`; a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 1000);
    } catch (e) { setErr({ key: 'class.exportFailed', raw: (e as Error).message }); }
  };

  return (
    <section className="class-panel" aria-label={t('class.aria')}>
      <h2>{t('class.heading')}</h2>
      <div className="class-forms">
        <form onSubmit={(e) => { e.preventDefault(); const c = joinText.trim().toUpperCase(); const d = withDash(c); setJoinText(d); setCode(d); setCreated(null); }}>
          <label>{t('class.joinCode')} <input value={joinText} onChange={(e) => setJoinText(e.target.value)} data-testid="join-code" placeholder="ABCD-EFGH" maxLength={64} /></label>
          <button type="submit">{t('class.open')}</button>
        </form>
        {/* a student of the class open here needs no "new class" box */}
        {!(code && !token && studentOf(code)) && <form onSubmit={(e) => {
          e.preventDefault();
          const els = e.currentTarget.elements;
          const n = (els.namedItem('cname') as HTMLInputElement).value;
          const k = els.namedItem('ckey') as HTMLInputElement | null;
          void createClass(n, k ? k.value : undefined);
        }}>
          <label>{t('class.newClass')} <input name="cname" placeholder={t('class.namePlaceholder')} maxLength={200} required data-testid="class-name" /></label>
          {needKey && (
            <label>{t('class.classKey')} <input name="ckey" type="password" autoComplete="off" required minLength={8} maxLength={200} data-testid="class-key" aria-describedby="class-key-why" autoFocus /></label>
          )}
          <button type="submit">{t('class.create')}</button>
          {needKey && <p id="class-key-why" className={needKey === 'wrong' ? 'error' : 'muted'} role={needKey === 'wrong' ? 'alert' : undefined} data-testid="class-key-why">{t(needKey === 'wrong' ? 'class.classKeyWrong' : 'class.classKeyAsk')}</p>}
        </form>}
      </div>
      {/* How students join: for a class just made here, and for its teacher coming back. */}
      {created ? <JoinPanel code={created.code} token={created.teacher_token} fresh />
        : token && data?.class.code === code ? <JoinPanel code={code} token={token} /> : null}
      {err && <p className="error" role="alert" data-testid="class-error"><Said t={t} say={err} /></p>}
      {note && <p className="okmsg" role="status"><Said t={t} say={note} /></p>}
      {loaded !== null && <p className="muted" role="status" data-testid="class-loading">{t('class.loading', { count: loaded })}</p>}
      {data && (
        <div className="class-view" data-testid="class-view">
          <h3>{data.class.name} <span className="muted">{t(token ? 'class.summaryTeacher' : 'class.summary', { code: data.class.code, count: data.results.length })}</span></h3>
          {!token && <StudentJoin code={data.class.code} />}
          {token
            ? <ClassAdmin code={data.class.code} name={data.class.name} uploads={data.results.length} closedAt={data.class.closed_at ?? null} token={token} onChanged={() => void load(code)} onDeleted={() => deleted(data.class)} />
            : data.class.closed_at && <p className="muted" data-testid="class-closed">{t('life.closedStudent')}</p>}
          {/* The students' exercises, live (the teacher only). */}
          {token && <Dashboard code={data.class.code} token={token} />}
          {/* The course: roster, grading, closing times, scores, the gradebook files. */}
          {token && <CourseAdmin code={data.class.code} token={token} />}
          {mine.length > 0 && !data.class.closed_at && (
            <div className="upload-row">
              <label>{t('class.yourName')} <input value={name} maxLength={NAME_MAX} data-testid="student-name" placeholder={t('class.yourNamePlaceholder')}
                onChange={(e) => { setName(e.target.value); saveStudentName(e.target.value); }} /></label>
              <p>{t('class.upload')} {mine.map((s) => <button type="button" key={s.key} disabled={busy.has(s.key)} aria-busy={busy.has(s.key)} onClick={() => void upload(s)}>{s.label}</button>)}</p>
            </div>
          )}
          <div className="pickers">
            <label>{t('class.measure')} <select value={metric} onChange={(e) => setMetric(e.target.value as MetricKey)} aria-label={t('class.measure')}>{(Object.keys(METRICS) as MetricKey[]).map((k) => <option key={k} value={k}>{metricLabel(t, k)}</option>)}</select></label>
            <label>{t('class.groupBy')} <select value={group} onChange={(e) => setGroup(e.target.value as GroupKey)} aria-label={t('class.groupBy')}>{(Object.keys(GROUPS) as GroupKey[]).map((k) => <option key={k} value={k}>{groupLabel(t, k)}</option>)}</select></label>
            {token && <button type="button" onClick={() => void exportCsv()}>{t('class.export')}</button>}
          </div>
          {sizes.length > 1 && <p className="muted" data-testid="size-note">{t(apart ? 'class.sizesApart' : 'class.sizesTogether', { sizes: sizes.map(([, r]) => showSize(r)).join(', ') })}</p>}
          <svg ref={svg} className="chart" data-chart="class-strip" />
          {points.length > 0 && <p className="muted" data-testid="ref-note"><Trans t={t} i18nKey={refs.note} values={refs.values} components={{ src: refs.source ? <Source k={refs.source} t={t} /> : <span />, code: <code /> }} /></p>}
          {token && points.length > 0 && <p className="muted" data-testid="names-note">{t('refs.namesNote')}</p>}
          <div className="table-wrap">
            <table className="uploads" data-testid="class-uploads">
              <thead><tr><th scope="col">{t('class.col.who')}</th><th scope="col">{t('class.col.cpu')}</th><th scope="col">{t('class.col.hypervisor')}</th><th scope="col">{t('class.col.tdp')}</th><th scope="col">{t('class.col.size')}</th>
                {apart ? sizes.map(([k, r]) => <th scope="col" key={k}>{t('class.col.metricAt', { metric: metricLabel(t, metric), size: showSize(r) })}</th>) : <th scope="col">{metricLabel(t, metric)}</th>}<th /></tr></thead>
              <tbody>
                {rows.map((r) => {
                  const rec = receipts(code).find((x) => x.id === r.id);
                  const tok = token ?? rec?.receipt;
                  const value = typeof r.metrics?.[metric] === 'number' ? fmt(r.metrics[metric]!, lang) : '–';
                  return (
                    <tr key={r.id} className={mineIds.has(r.id) ? 'mine' : undefined} data-id={r.id}>
                      <td className="who">{who(r)}</td><td className="cpu">{showCpu(t, r.cpu_model)}</td><td>{showHypervisor(t, r.hypervisor)}</td><td>{showTdpAndBackend(t, r.tdp, r.kvm_backend)}</td><td className="size">{showSize(r)}</td>
                      {apart ? sizes.map(([k]) => <td key={k} className="num">{sizeKey(r) === k ? value : '–'}</td>) : <td className="num">{value}</td>}
                      <td>{tok ? <button type="button" onClick={() => void remove(r.id, tok)}>{t('class.delete')}</button> : mineIds.has(r.id) ? <span className="muted">{t('class.yours')}</span> : null}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        </div>
      )}
    </section>
  );
}
