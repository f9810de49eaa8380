/* How students join a class, for its teacher: the join code, the join link and its QR code,
 * the upload command and the teacher's private link, each with a copy button. The link
 * must be one students' machines can open: the page's own address when it was opened on
 * the network (or through a reverse proxy), else the first address the class server found
 * on this machine's interfaces (GET /api/server), never 127.0.0.1, which on a student's
 * machine is the student's own. A server only this machine can reach says so, and how to
 * open it to the classroom. */
import { useEffect, useId, useRef, useState } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import { create as qrCreate } from 'qrcode';
import './join.css';

/** What GET /api/server answers (web/server/app.mjs). */
export interface ServerInfo { addresses: string[]; loopback_only: boolean; class_key: boolean; proxied?: boolean }

/** A host name that only this machine reaches: 127.0.0.0/8, ::1, localhost. */
export const isLoopbackHost = (host: string) => /^(127\.\d+\.\d+\.\d+|\[?::1\]?|localhost|\[?::ffff:127\.\d+\.\d+\.\d+\]?)$/i.test(host);

/**
 * The origin to give students (`http://10.0.0.5:8080`, no trailing slash) and why: `page`,
 * the page's own (opened at a network address, or through a proxy); `server`, an address
 * the server found (the page was opened on loopback; `choice` picks among them); `local`,
 * the page's own loopback origin because the server names none students could use.
 */
export function joinOrigin(info: ServerInfo | null, page: { origin: string; hostname: string }, choice = 0): { origin: string; from: 'page' | 'server' | 'local' } {
  if (info?.proxied || !isLoopbackHost(page.hostname)) return { origin: page.origin, from: 'page' };
  const addrs = info && !info.loopback_only ? info.addresses : [];
  if (addrs.length) return { origin: (addrs[choice] ?? addrs[0]).replace(/\/+$/, ''), from: 'server' };
  return { origin: page.origin, from: 'local' };
}

export const joinLink = (origin: string, code: string) => `${origin}/?view=results&class=${code}`;
export const teacherLink = (origin: string, code: string, token: string) => `${joinLink(origin, code)}#teacher=${token}`;
export const uploadCommand = (origin: string, code: string) => `hw-lab/run --upload ${origin}/api/results --class ${code}`;

/** The QR code of `text` (error correction M: a phone still reads it off a projector with
 * a glare) as one SVG path of its dark modules, runs of a row joined, offset by the
 * standard quiet zone of four modules; and the side of the whole square. */
export function qrPath(text: string): { d: string; side: number } {
  const q = qrCreate(text, { errorCorrectionLevel: 'M' });
  const n = q.modules.size; const data = q.modules.data; const pad = 4;
  let d = '';
  for (let y = 0; y < n; y++) {
    for (let x = 0; x < n; x++) {
      if (!data[y * n + x]) continue;
      let run = 1;
      while (x + run < n && data[y * n + x + run]) run++;
      d += `M${x + pad} ${y + pad}h${run}v1h-${run}z`;
      x += run - 1;
    }
  }
  return { d, side: n + 2 * pad };
}

/** Drawn dark on white whatever the page's theme: phones' readers expect it. */
function Qr({ text, label }: { text: string; label: string }) {
  const { d, side } = qrPath(text);
  return (
    <svg className="join-qr" data-testid="join-qr" role="img" aria-label={label} viewBox={`0 0 ${side} ${side}`} shapeRendering="crispEdges">
      <rect width={side} height={side} fill="#fff" />
      <path d={d} fill="#000" />
    </svg>
  );
}

type Copied = 'copied' | 'selected' | null;

/** Copies `text`: with the clipboard API where the browser offers it (https, or the page
 * on localhost), else by selecting the shown text and asking the browser to copy the
 * selection; on plain http at a network address, a classroom's usual case, there is no
 * clipboard API. When even that fails the text stays selected for Ctrl+C. */
async function copy(text: string, shown: HTMLElement | null): Promise<Copied> {
  try {
    if (navigator.clipboard?.writeText) { await navigator.clipboard.writeText(text); return 'copied'; }
  } catch { /* refused (no permission, not focused): select the text instead */ }
  if (!shown) return 'selected';
  if (shown instanceof HTMLInputElement) { shown.focus(); shown.select(); } else {
    const sel = getSelection(); const range = document.createRange();
    range.selectNodeContents(shown); sel?.removeAllRanges(); sel?.addRange(range);
  }
  let done = false;
  try { done = document.execCommand('copy'); } catch { /* not supported */ }
  return done ? 'copied' : 'selected';
}

/** One copyable value: its label, the value in a read-only field, a copy button. */
function CopyRow({ label, value, id, secret }: { label: string; value: string; id: string; secret?: boolean }) {
  const { t } = useTranslation('results');
  const field = useRef<HTMLInputElement>(null);
  const [state, setState] = useState<Copied>(null);
  useEffect(() => setState(null), [value]);
  return (
    <div className="join-row" data-testid={`join-${id}`}>
      <label htmlFor={`join-${id}-value`}>{label}</label>
      <input id={`join-${id}-value`} ref={field} readOnly value={value} className={secret ? 'secret' : undefined} spellCheck={false} onFocus={(e) => e.currentTarget.select()} />
      <button type="button" data-testid={`copy-${id}`} aria-label={t('join.copyWhat', { what: label })} onClick={async () => setState(await copy(value, field.current))}>{t('join.copy')}</button>
      <span className="muted join-copied" aria-live="polite">{state ? t(state === 'copied' ? 'join.copied' : 'join.selected') : ''}</span>
    </div>
  );
}

/**
 * code: the class; token: the teacher token of this browser (the teacher link is shown
 * with it); fresh: the class was just made here, and the page's address is now its
 * teacher link.
 */
export function JoinPanel({ code, token, fresh = false }: { code: string; token: string | null; fresh?: boolean }) {
  const { t } = useTranslation('results');
  const [info, setInfo] = useState<ServerInfo | null>(null);
  const [choice, setChoice] = useState(0);
  const codeRef = useRef<HTMLElement>(null);
  const [codeCopied, setCodeCopied] = useState<Copied>(null);
  const pick = useId();
  useEffect(() => {
    let live = true;
    fetch('/api/server')
      .then((r) => (r.ok && r.headers.get('content-type')?.includes('json') ? r.json() : null))
      .then((j: ServerInfo | null) => { if (live && j && Array.isArray(j.addresses)) setInfo(j); }, () => { /* an older server: the page's origin */ });
    return () => { live = false; };
  }, []);
  const { origin, from } = joinOrigin(info, location, choice);
  const link = joinLink(origin, code);
  const addrs = from === 'server' ? info!.addresses : [];
  return (
    <div className="join-panel" data-testid="join-panel">
      <h3>{t('join.heading')}</h3>
      <div className="join-grid">
        <div className="join-fields">
          <p className="join-code-line">
            {t('join.code')} <strong ref={codeRef} className="join-code" data-testid="join-code-shown">{code}</strong>
            <button type="button" data-testid="copy-code" aria-label={t('join.copyWhat', { what: t('join.code') })} onClick={async () => setCodeCopied(await copy(code, codeRef.current))}>{t('join.copy')}</button>
            <span className="muted join-copied" aria-live="polite">{codeCopied ? t(codeCopied === 'copied' ? 'join.copied' : 'join.selected') : ''}</span>
          </p>
          {addrs.length > 1 && (
            <p><label htmlFor={pick}>{t('join.address')}</label>{' '}
              <select id={pick} value={choice} onChange={(e) => setChoice(Number(e.target.value))} data-testid="join-address">
                {addrs.map((a, i) => <option key={a} value={i}>{a.replace(/\/+$/, '')}</option>)}
              </select>
            </p>
          )}
          <CopyRow id="link" label={t('join.link')} value={link} />
          <CopyRow id="command" label={t('join.command')} value={uploadCommand(origin, code)} />
          {token && <CopyRow id="teacher" label={t('join.teacherLink')} value={teacherLink(origin, code, token)} secret />}
        </div>
        <Qr text={link} label={t('join.qr')} />
      </div>
      {from === 'local' && info?.loopback_only && (
        <p className="error" role="alert" data-testid="join-loopback"><Trans t={t} i18nKey="join.loopbackOnly" components={{ code: <code /> }} /></p>
      )}
      {from === 'local' && info && !info.loopback_only && <p className="error" role="alert" data-testid="join-no-address">{t('join.noAddress')}</p>}
      {info && !info.class_key && !info.loopback_only && !info.proxied && (
        <p className="muted" data-testid="join-no-key"><Trans t={t} i18nKey="join.noClassKey" components={{ code: <code /> }} /></p>
      )}
      {token && <p className={fresh ? 'okmsg' : 'muted'} data-testid={fresh ? 'class-created' : 'join-keep'}>{t(fresh ? 'join.keepNew' : 'join.keep')}</p>}
    </div>
  );
}
