/* Joining a class that has a roster: the student picks their name from the list, or types
 * their student ID (or email); and, on a second browser, the code their first browser shows
 * under "Continue on another device" (or its link, which carries it as #link=CODE). The
 * server answers with a receipt of this browser's own for the same student. */
import { useEffect, useState } from 'react';
import { useTranslation } from 'react-i18next';
import { ApiError } from '../progress/api';
import type { Student } from '../progress/student';
import { Said, type Saying } from '../results/Said';
import { joinRoster, rosterNames, claimLink, type RosterName } from './api';

/** The device code a link carries in its fragment (#link=ABCD-2345), if any. */
export const linkInHash = (hash: string) => /[#&]link=([A-Za-z0-9]{4}-?[A-Za-z0-9]{4})\b/.exec(hash)?.[1] ?? null;

export function RosterJoin({ code, onJoined, children }: { code: string; onJoined: (s: Student) => void; children?: React.ReactNode }) {
  const { t } = useTranslation('results');
  const [names, setNames] = useState<RosterName[] | null>(null);
  const [pick, setPick] = useState('');
  const [id, setId] = useState('');
  const [link, setLink] = useState('');
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<Saying | null>(null);

  useEffect(() => { rosterNames(code).then((n) => setNames(Array.isArray(n) ? n : []), () => setNames([])); }, [code]);
  const run = async (f: () => Promise<Student>) => {
    if (busy) return;
    setBusy(true);
    try { onJoined(await f()); setErr(null); } catch (e) {
      const taken = e instanceof ApiError && e.need === 'device_link';
      setErr(taken ? { key: 'course.joinedElsewhere' } : { key: 'student.joinFailed', raw: (e as Error).message });
    } finally { setBusy(false); }
  };
  // A link from the first browser: used at once, then taken out of the address bar.
  useEffect(() => {
    const l = linkInHash(location.hash);
    if (!l) return;
    history.replaceState(null, '', `${location.pathname}${location.search}`);
    void run(() => claimLink(code, l));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [code]);

  const free = names?.filter((n) => !n.joined) ?? [];
  return (
    <div className="roster-join" data-testid="roster-join">
      {names && names.length > 0 ? (
        <>
          <form onSubmit={(e) => { e.preventDefault(); if (pick) void run(() => joinRoster(code, { entry: pick })); }}>
            <label>{t('course.pickName')} <select value={pick} onChange={(e) => setPick(e.target.value)} data-testid="roster-pick" required>
              <option value="">{t('course.pickNone')}</option>
              {free.map((n) => <option key={n.entry} value={n.entry}>{n.name}</option>)}
            </select></label>{' '}
            <button type="submit" disabled={busy || !pick}>{t('student.join')}</button>
          </form>
          <form onSubmit={(e) => { e.preventDefault(); if (id.trim()) void run(() => joinRoster(code, { id: id.trim() })); }}>
            <label>{t('course.typeId')} <input value={id} maxLength={254} onChange={(e) => setId(e.target.value)} data-testid="roster-id" autoComplete="off" /></label>{' '}
            <button type="submit" disabled={busy || !id.trim()}>{t('student.join')}</button>
          </form>
        </>
      ) : children}
      <form onSubmit={(e) => { e.preventDefault(); if (link.trim()) void run(() => claimLink(code, link.trim())); }}>
        <label>{t('course.deviceCode')} <input value={link} maxLength={9} onChange={(e) => setLink(e.target.value)} data-testid="device-code" placeholder="ABCD-2345" autoComplete="off" /></label>{' '}
        <button type="submit" disabled={busy || !link.trim()}>{t('course.useCode')}</button>
      </form>
      {err && <p className="error" role="alert" data-testid="roster-error"><Said t={t} say={err} /></p>}
    </div>
  );
}
