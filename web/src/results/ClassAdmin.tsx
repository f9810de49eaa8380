/* The teacher's controls of a class's life (ClassPanel renders them for the teacher of the
 * class): whether it takes uploads, Close / Reopen, and Delete with a confirmation that
 * names the class and what goes with it (POST /api/classes/{code}/close and /reopen,
 * DELETE /api/classes/{code}, each with the teacher token). */
import { useState } from 'react';
import { useTranslation } from 'react-i18next';
import { Said, type Saying } from './Said';

interface Props {
  code: string; name: string; uploads: number; closedAt: string | null; token: string;
  /** After a close or a reopen: the class is read again. */
  onChanged: () => void;
  /** After the class is gone, with nothing of it left on the server. */
  onDeleted: () => void;
}

export function ClassAdmin({ code, name, uploads, closedAt, token, onChanged, onDeleted }: Props) {
  const { t, i18n } = useTranslation('results');
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<Saying | null>(null);
  const call = async (method: string, path: string) => {
    setBusy(true);
    try {
      const r = await fetch(`/api/classes/${encodeURIComponent(code)}${path}`, { method, headers: { Authorization: `Bearer ${token}` } });
      if (!r.ok) throw new Error((await r.json().catch(() => null))?.message ?? `HTTP ${r.status}`);
      setErr(null);
      return true;
    } catch (e) { setErr({ key: 'life.failed', raw: (e as Error).message }); return false; } finally { setBusy(false); }
  };
  const when = closedAt ? new Date(closedAt).toLocaleString(i18n.language) : '';
  return (
    <div className="class-admin" data-testid="class-admin">
      <p className={closedAt ? 'error' : 'muted'} data-testid="class-state">{closedAt ? t('life.closed', { at: when }) : t('life.open')}</p>
      <p>
        {closedAt
          ? <button type="button" disabled={busy} onClick={() => void call('POST', '/reopen').then((ok) => ok && onChanged())}>{t('life.reopen')}</button>
          : <button type="button" disabled={busy} onClick={() => void call('POST', '/close').then((ok) => ok && onChanged())}>{t('life.close')}</button>}
        {' '}<button type="button" disabled={busy || confirming} aria-expanded={confirming} onClick={() => setConfirming(true)}>{t('life.delete')}</button>
      </p>
      {confirming && (
        <div role="alertdialog" aria-labelledby="class-delete-what" className="confirm" data-testid="class-delete-confirm">
          <p id="class-delete-what">{t('life.confirm', { name, code, count: uploads })}</p>
          <button type="button" className="danger" disabled={busy} autoFocus onClick={() => void call('DELETE', '').then((ok) => { if (ok) { setConfirming(false); onDeleted(); } })}>{t('life.confirmYes', { name })}</button>
          {' '}<button type="button" disabled={busy} onClick={() => setConfirming(false)}>{t('life.cancel')}</button>
        </div>
      )}
      {err && <p className="error" role="alert" data-testid="class-admin-error"><Said t={t} say={err} /></p>}
    </div>
  );
}
