/* TLB, page-walk-cache and nested-TLB behaviour per access, when the scenario turned
 * caches on. The current access is marked; the counts come straight from the trace. */
import { useTranslation } from 'react-i18next';
import type { Result } from '../../../wasm-core/js/types';
import { resultWords } from '../model/decode';
import { Term } from './Term';

export function CachePanel({ result, accessIndex, onAccess }: { result: Result; accessIndex: number; onAccess?: (i: number) => void }) {
  const { t } = useTranslation('views');
  if (!result.accesses.some((a) => a.cache)) return null;
  // With EPTP switching, each access's EPTP index: the TLB and nested caches are tagged with it.
  const eptp = result.accesses.some((a) => a.op === 'vmfunc');
  return (
    <section className="cache" aria-label={t('cache.title')}>
      <h3>{t('cache.title')}</h3>
      <div className="table-scroll" tabIndex={0} role="region" aria-label={t('cache.title')}>
        <table className="cachetable">
          <thead><tr><th>#</th><th>{t('cache.col.access')}</th><th><Term id="tlb" /></th><th><Term id="pwc">{t('cache.col.pwc')}</Term></th><th><Term id="ntlb">{t('cache.col.ntlb')}</Term></th><th>{t('cache.col.refs')}</th>{eptp && <th><Term id="eptp">{t('cache.col.eptp')}</Term></th>}</tr></thead>
          <tbody>
            {result.accesses.map((a, i) => (
              <tr key={i} className={i === accessIndex ? 'current' : ''} aria-current={i === accessIndex ? 'true' : undefined} onClick={() => onAccess?.(i)}>
                <td>{i}</td><td>{a.gva ? `${t(`op.${a.op}`, { defaultValue: a.op })} ${a.gva}` : t(`op.${a.op}`, { defaultValue: a.op })}</td>
                <td className={a.cache?.tlb === 'hit' ? 'ok-text' : a.cache?.tlb === 'miss' ? 'bad-text' : ''}>{a.cache?.tlb ? resultWords(a.cache.tlb, t) : '–'}</td>
                <td>{a.cache?.pwc_hits ?? 0}</td><td>{a.cache?.ntlb_hits ?? 0}</td><td>{a.memory_refs}</td>{eptp && <td data-field="eptp-index">{a.eptp_index ?? '–'}</td>}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
