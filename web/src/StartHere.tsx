/* "Start here": on a first visit with no address of its own (nothing in the query but the
 * language: not a shared link), a short panel says what the lab is, where to begin
 * (Lesson 1) and in which order the lessons and tabs go. Closing it, or beginning Lesson 1,
 * is remembered in the browser. */
import { useState } from 'react';
import { useTranslation } from 'react-i18next';

const KEY = 'vmemlab-start-seen';

function seen(): boolean {
  try { return localStorage.getItem(KEY) === '1'; } catch { return false; }
}
function remember() {
  try { localStorage.setItem(KEY, '1'); } catch { /* storage may be off: shown again next time */ }
}

export function StartHere({ onBegin }: { onBegin: () => void }) {
  const { t } = useTranslation('views');
  const [open, setOpen] = useState(() => !seen() && [...new URLSearchParams(location.search).keys()].every((k) => k === 'lang'));
  if (!open) return null;
  const close = () => { remember(); setOpen(false); };
  return (
    <section className="start-here" aria-labelledby="start-here-title">
      <h2 id="start-here-title">{t('start.title')}</h2>
      <p>{t('start.what')}</p>
      <p>{t('start.order')}</p>
      <p>
        <button type="button" onClick={() => { close(); onBegin(); }}>{t('start.begin')}</button>{' '}
        <button type="button" onClick={close}>{t('start.close')}</button>
      </p>
    </section>
  );
}
