/* TLB, page-walk-cache and nested-TLB behaviour per access, when the scenario turned
 * caches on. The current access is marked; the counts come straight from the trace. */
import type { Result } from '../../../wasm-core/js/types';

export function CachePanel({ result, accessIndex, onAccess }: { result: Result; accessIndex: number; onAccess?: (i: number) => void }) {
  if (!result.accesses.some((a) => a.cache)) return null;
  return (
    <section className="cache" aria-label="caches">
      <h3>Caches</h3>
      <div className="table-scroll">
        <table className="cachetable">
          <thead><tr><th>#</th><th>access</th><th>TLB</th><th>PWC hits</th><th>nTLB hits</th><th>refs</th></tr></thead>
          <tbody>
            {result.accesses.map((a, i) => (
              <tr key={i} className={i === accessIndex ? 'current' : ''} aria-current={i === accessIndex ? 'true' : undefined} onClick={() => onAccess?.(i)}>
                <td>{i}</td><td>{a.gva ? `${a.op} ${a.gva}` : a.op}</td>
                <td className={a.cache?.tlb === 'hit' ? 'ok-text' : a.cache?.tlb === 'miss' ? 'bad-text' : ''}>{a.cache?.tlb ?? '–'}</td>
                <td>{a.cache?.pwc_hits ?? 0}</td><td>{a.cache?.ntlb_hits ?? 0}</td><td>{a.memory_refs}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
