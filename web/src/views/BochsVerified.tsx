/* Which bundled examples were verified on Bochs (an executing CPU with VMX, tests/bochs)
 * and the paging-structure reads Bochs recorded for each access, beside the engine's.
 * The data is what the last `make fidelity` run wrote (src/fidelity/bochs-verified.json); the
 * page computes nothing from it but the row-by-row match it shows. */
import { useTranslation } from 'react-i18next';
import type { AccessResult } from '../../../wasm-core/js/types';
import data from '../fidelity/bochs-verified.json';
import './bochs.css';

interface ExampleRecord { verified: boolean; accesses: number; bochs_reads: string[][] }
const EXAMPLES = (data as { examples: Record<string, ExampleRecord> }).examples;

/* The NPT part (`make fidelity-npt`, tests/svm): the mode-npt examples QEMU's SVM ran
 * with every access agreeing. Absent until that run has written it. */
interface NptRecord { accesses: number }
interface NptData { date: string; accesses_compared: number; disagreements: number; examples: Record<string, NptRecord> }
const NPT = (data as { npt?: NptData }).npt;

/** The example's SVM record, if the last NPT fidelity run verified it. */
export function svmRecord(example: string | null | undefined): NptRecord | null {
  return (example && NPT && NPT.disagreements === 0 && NPT.examples[example]) || null;
}

/** The example's Bochs record, if the last fidelity run verified it. */
export function bochsRecord(example: string | null | undefined): ExampleRecord | null {
  const r = example ? EXAMPLES[example] : undefined;
  return r && r.verified ? r : null;
}

/** "Verified on Bochs" (or, for a mode-npt example, "verified on QEMU's SVM"): the badge
 * beside a verified example, with the run's figures. */
export function BochsBadge({ example }: { example: string | null | undefined }) {
  const { t } = useTranslation('bochs');
  const r = bochsRecord(example);
  const svm = svmRecord(example);
  if (svm && NPT)
    return (
      <span className="bochs-badge" data-testid="svm-badge"
        title={t('svmBadgeTitle', { total: NPT.accesses_compared, date: NPT.date })}>
        {t('svmBadge', { count: svm.accesses, date: NPT.date })}
      </span>
    );
  if (!r) return null;
  return (
    <span className="bochs-badge" data-testid="bochs-badge"
      title={t('badgeTitle', { total: data.accesses_compared, date: data.date })}>
      {t('badge', { count: r.accesses, date: data.date })}
    </span>
  );
}

/** The access's memory references as the engine lists them and as Bochs read them. */
export function BochsReads({ example, accessIndex, access }: { example: string | null | undefined; accessIndex: number; access: AccessResult }) {
  const { t } = useTranslation('bochs');
  const r = bochsRecord(example);
  if (!r) return null;
  const bochs = r.bochs_reads[accessIndex] ?? [];
  const engine = access.steps.filter((s) => s.kind === 'read' || s.kind === 'eptp_list').map((s) => s.entry_hpa);
  // Bochs ran with the engine's caches off: with caches on here, hits have no read.
  const cachesOn = access.steps.some((s) => s.cache !== null);
  const rows = Math.max(engine.length, bochs.length);
  const same = !cachesOn && engine.length === bochs.length && engine.every((a, i) => a === bochs[i]);
  return (
    <details className="bochs-reads" data-testid="bochs-reads">
      <summary>{t('title', { engine: engine.length, bochs: bochs.length })}</summary>
      <p className="muted">{cachesOn ? t('cachesOn') : same ? t('same') : t('differ')} {t('fair')}</p>
      <div className="table-scroll">
        <table className="steplist">
          <thead><tr><th>{t('col.ref')}</th><th>{t('col.engine')}</th><th>{t('col.bochs')}</th></tr></thead>
          <tbody>
            {Array.from({ length: rows }, (_, i) => (
              <tr key={i} className={!cachesOn && engine[i] !== bochs[i] ? 'bochs-differs' : undefined}>
                <td>{i + 1}</td><td>{engine[i] ?? ''}</td><td>{bochs[i] ?? ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </details>
  );
}
