/* What the TLB, the guest and nested walk caches and the nested TLB hold after the access
 * on show: the engine's `cache_contents` (the scenario run again with caches.contents on),
 * each cache's lines most recently used first, the line that served the access and the
 * lines it filled marked. Nothing here decides what a cache holds; it only puts the lines
 * into words. */
import { useMemo } from 'react';
import { useTranslation } from 'react-i18next';
import type { CacheHolding, CacheLine, Result, Scenario } from '../../../wasm-core/js/types';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { levelName } from '../model/decode';
import { Term, type TermId } from './Term';
import { sizeWords } from './size';

type Which = 'tlb' | 'guest_pwc' | 'nested_pwc' | 'ntlb';
const TERMS: Record<Which, TermId> = { tlb: 'tlb', guest_pwc: 'pwc', nested_pwc: 'pwc', ntlb: 'ntlb' };

export { sizeWords };

/** The scenario's result with what each cache holds, or null when it has no caches. */
export function runWithContents(engine: Vmsim, scenarioText: string): Result | null {
  let s: Scenario;
  try { s = JSON.parse(scenarioText) as Scenario; } catch { return null; }
  if (!s.caches) return null;
  try { return engine.run({ ...s, caches: { ...s.caches, contents: true } }); } catch { return null; }
}

function Holding({ which, c, result }: { which: Which; c: CacheHolding; result: Result }) {
  const { t } = useTranslation('views');
  const shadowTables = which === 'guest_pwc' && (result.mode === 'shadow' || result.mode === 'agile');
  const eptp = c.lines.some((l) => l.eptp_index !== null) && result.accesses.some((a) => a.op === 'vmfunc');
  const spaces = c.lines.some((l) => l.space !== 0);
  const page = which === 'tlb' || which === 'ntlb';
  const sets = c.entries / Math.max(1, c.ways);
  const mark = (l: CacheLine) => [l.served && t('held.served'), l.filled && t('held.filled')].filter(Boolean).join(', ');
  return (
    <div className="held" data-cache={which}>
      <h4><Term id={TERMS[which]}>{t(`held.name.${which}`)}</Term>{' '}
        <span className="muted">{t('held.use', { valid: c.valid, entries: c.entries })}{' · '}
          {sets > 1 ? t('held.sets', { sets, ways: c.ways }) : t('held.full')}</span></h4>
      {c.lines.length === 0 ? <p className="muted">{t('held.empty')}</p> : (
        <div className="table-scroll" tabIndex={0} role="region" aria-label={t(`held.name.${which}`)}>
          <table className="cachetable held-table">
            <thead><tr>
              {!page && <th>{t('held.col.level')}</th>}
              <th>{t(`held.col.from.${which}`)}</th><th>{t('held.col.size')}</th>
              <th>{t(shadowTables ? 'held.col.to.shadow' : `held.col.to.${which}`)}</th>
              {which === 'tlb' && result.mode !== 'native' && <th>{t('held.col.gpa')}</th>}
              {spaces && <th>{t('held.col.space')}</th>}
              {eptp && <th><Term id="eptp">{t('held.col.eptp')}</Term></th>}
              {page && <th>{t('held.col.dirty')}</th>}
              <th>{sets > 1 ? t('held.col.orderSet') : t('held.col.order')}</th>
              <th>{t('held.col.now')}</th>
            </tr></thead>
            <tbody>
              {c.lines.map((l, i) => (
                <tr key={i} className={l.served ? 'served' : l.filled ? 'filled' : undefined} data-served={l.served || undefined} data-filled={l.filled || undefined}>
                  {!page && <td>{which === 'guest_pwc' && !shadowTables ? `L${l.level} (${levelName(result.guest_paging, l.level!)})` : `L${l.level}`}</td>}
                  <td className="mono">{l.from}</td><td>{sizeWords(l.size)}</td><td className="mono">{l.to}</td>
                  {which === 'tlb' && result.mode !== 'native' && <td className="mono">{l.gpa}</td>}
                  {spaces && <td>{l.space}</td>}
                  {eptp && <td>{l.eptp_index}</td>}
                  {page && <td>{l.dirty ? t('held.yes') : t('held.no')}</td>}
                  <td>{sets > 1 ? t('held.orderSet', { set: l.set, n: l.rank + 1 }) : l.rank + 1}</td>
                  <td>{mark(l)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {c.valid > c.lines.length && <p className="muted">{t('held.more', { count: c.valid - c.lines.length })}</p>}
    </div>
  );
}

export function CacheContents({ engine, scenarioText, accessIndex }: { engine: Vmsim; scenarioText: string; accessIndex: number }) {
  const { t } = useTranslation('views');
  const result = useMemo(() => runWithContents(engine, scenarioText), [engine, scenarioText]);
  const held = result?.accesses[accessIndex]?.cache_contents;
  if (!result || !held) return null;
  const which = (['tlb', 'guest_pwc', 'nested_pwc', 'ntlb'] as Which[]).filter((k) => held[k]);
  if (!which.length) return null;
  return (
    <section className="cache held-caches" aria-label={t('held.title', { n: accessIndex })} data-testid="cache-contents">
      <h3>{t('held.title', { n: accessIndex })}</h3>
      <p className="muted">{t('held.intro')}</p>
      {which.map((k) => <Holding key={k} which={k} c={held[k]!} result={result} />)}
    </section>
  );
}
