/* What the Live guest tab says, in the `live` namespace: the progress line, the register
 * inspector, error messages, the snapshot note, the shadow-paging note and the walk's
 * one-line summary. Kept apart from LiveView (which needs v86 and xterm.js) so that each
 * piece can be rendered and checked in every language without booting a guest. Pure
 * functions take a `t` of the `live` namespace; the components take theirs from the hook. */
import { useEffect, useState } from 'react';
import { Trans, useTranslation } from 'react-i18next';
import type { AccessResult } from '../../../wasm-core/js/types';
import type { T } from '../i18n';
import { SerialTimeout, type CpuRegs } from './guestDriver';
import type { Backing, HostMode } from './liveTables';
import timings from './boot-timings.json';

export const hex = (n: number, w = 8) => '0x' + (n >>> 0).toString(16).padStart(w, '0');

/** The host modes of the picker, in order (their names are `mode.<mode>`). */
export const MODES: HostMode[] = ['native', 'ept', 'npt', 'flat', 'shadow'];
/** Host page sizes for EPT/NPT (their names are `backingSize.<size>`). */
export const BACKINGS: Backing[] = ['4K', '2M', '1G'];

/** Which kernel the tab runs: the 32-bit paging one (public/guest) or the PAE one. */
export type Kernel = 'guest' | 'pae';

export type Phase =
  | { kind: 'loading'; file: string | null; frac: number }
  | { kind: 'booting'; cold: boolean; since: number }
  /** ms: from the files in to the prompt; download: the files' bytes and the time they took. */
  | { kind: 'ready'; ms: number; download: { bytes: number; ms: number } }
  | { kind: 'error'; error: unknown };

/** An error whose message the page shows translated (its English message stays for logs). */
export class LiveError extends Error {
  constructor(readonly key: string, readonly values: Record<string, unknown>, english: string) {
    super(english);
    this.name = 'LiveError';
  }
}

/** The text of an error: ours translated, anyone else's (v86, the engine) as it is. */
export function errorText(e: unknown, t: T): string {
  if (e instanceof LiveError) return t(e.key, e.values);
  if (e instanceof SerialTimeout) return t('error.serialTimeout', { ms: e.ms, last: JSON.stringify(e.last) });
  return e instanceof Error ? e.message : String(e);
}

/** A message kept in state as a key and its values, so that it follows the language. */
export type Note = { key: string; values?: Record<string, unknown> } | { error: unknown };
export const noteText = (n: Note, t: T) => ('error' in n ? errorText(n.error, t) : t(n.key, n.values));

export function pagingText(paging: CpuRegs['paging'], t: T): string {
  return t(paging === '32bit' ? 'inspector.paging32' : paging === 'pae' ? 'inspector.pagingPae' : 'inspector.pagingOff');
}

/** Where the walk's snapshot came from. */
export type SnapSource = { kind: 'current'; cr3: number } | { kind: 'marked'; pid: string; cr3: number; marker: string; pa: number };
export function snapText(src: SnapSource, t: T): string {
  return src.kind === 'current'
    ? t('snap.current', { cr3: hex(src.cr3) })
    : t('snap.marked', { pid: src.pid, cr3: hex(src.cr3), marker: src.marker, pa: hex(src.pa) });
}

/** The shadow-paging note: where the shadow entry points and what the VMM must protect. */
export interface ShadowFacts {
  gva: number;
  /** The guest walk with the host's memory slots (flat mode): its gpa and hpa. */
  host: Pick<AccessResult, 'outcome' | 'gpa' | 'hpa'>;
  pages: { directory: number; tables: number; total: number };
  kind: '32bit' | 'pae';
}
export function shadowNote({ gva, host, pages, kind }: ShadowFacts, t: T): string {
  const first = host.outcome === 'ok'
    ? t('shadow.entry', { gva: hex(gva), hpa: host.hpa, gpa: host.gpa, nested: (2 + 1) * (4 + 1) - 1 })
    : t('shadow.unmapped');
  const parts = t('shadow.parts', {
    directories: kind === 'pae' ? t('shadow.pdptDirectories', { count: pages.directory }) : t('shadow.directory', { count: pages.directory }),
    tables: t('shadow.tables', { count: pages.tables }),
  });
  return `${first} ${t('shadow.protect', { count: pages.total, parts })}`;
}

/** The walk's summary line: step, outcome, addresses, references. */
export function outcomeLine(access: Pick<AccessResult, 'outcome' | 'gpa' | 'hpa' | 'memory_refs'>, mode: HostMode, step: number, total: number, t: T): string {
  return [
    t('walk.step', { n: step, total }),
    t(`outcome.${access.outcome}`, { defaultValue: access.outcome }),
    access.gpa ? `gpa ${access.gpa}` : '',
    access.hpa && mode !== 'native' ? `hpa ${access.hpa}` : '',
    t('walk.refs', { count: access.memory_refs }),
  ].filter(Boolean).join(' · ');
}

/** The progress line above the console: download, boot, ready (with links to the other
 * boots), or the error that stopped the guest. */
export function PhaseLine({ phase, cold, kernel }: { phase: Phase; cold: boolean; kernel: Kernel }) {
  const { t } = useTranslation('live');
  switch (phase.kind) {
    case 'loading':
      return (
        <div className="live-progress"><progress max={1} value={phase.frac} aria-label={t('phase.download')} />{' '}
          {phase.file ? t('phase.downloading', { file: phase.file }) : t('phase.starting')}</div>
      );
    case 'booting':
      return <BootProgress cold={phase.cold} since={phase.since} />;
    case 'ready': {
      // What happened, in one sentence (how it started, which kernel, the download and the
      // start), then the other starts as links of their own.
      const values = {
        how: t(cold ? 'phase.readyCold' : 'phase.readyRestored'), kernel: t(kernel === 'guest' ? 'phase.kernel32Is' : 'phase.paeKernelIs'),
        mb: (phase.download.bytes / 1e6).toFixed(1), download: (phase.download.ms / 1000).toFixed(2), seconds: (phase.ms / 1000).toFixed(2),
      };
      return (
        <p className="muted" id="live-status">
          <span data-field="ready">{t('phase.ready', values)}</span>{' '}
          <Trans t={t} i18nKey={(cold ? 'phase.otherStartsCold' : 'phase.otherStarts')}
            values={{ kernel: t(kernel === 'guest' ? 'phase.paeKernel' : 'phase.kernel32') }}
            components={{
              cold: <a href={`?view=live${cold ? '' : '&boot=cold'}${kernel === 'guest' ? '' : '&kernel=pae'}`} />,
              other: <a href={kernel === 'guest' ? '?view=live&kernel=pae' : '?view=live'} />,
            }} />
        </p>
      );
    }
    case 'error':
      return (
        <p className="error" role="alert">
          <Trans t={t} i18nKey="phase.failed"
            values={{ message: errorText(phase.error, t), command: kernel === 'guest' ? 'make -C public guest' : 'make -C public guest-pae' }}
            components={{ code: <code /> }} />
        </p>
      );
  }
}

/** A boot in progress: the seconds so far, beside the figure measured for the same boot by
 * public/bench-guest.mjs (boot-timings.json), never a guess. */
function BootProgress({ cold, since }: { cold: boolean; since: number }) {
  const { t } = useTranslation('live');
  const [now, setNow] = useState(() => performance.now());
  useEffect(() => { const id = setInterval(() => setNow(performance.now()), 500); return () => clearInterval(id); }, []);
  const values = {
    elapsed: Math.max(0, (now - since) / 1000).toFixed(0),
    measured: (cold ? timings.cold_boot_s : timings.restore_s).toFixed(cold ? 0 : 1),
    date: timings.date, cores: timings.cores,
  };
  return (
    <div className="live-progress" role="status"><progress aria-label={t('phase.boot')} />{' '}
      {cold ? t('phase.coldBoot', values) : t('phase.restoring', values)}</div>
  );
}

/** The inspector's registers: CR0, CR3, CR4 with their paging bits, the paging mode and
 * what a shadow VMM would have to protect. */
export function Registers({ regs, live }: { regs: CpuRegs | null; live: { pages: number; cr3s: number } | null }) {
  const { t } = useTranslation('live');
  if (!regs) return <p className="muted">{t('inspector.waiting')}</p>;
  return (
    <dl>
      <dt>CR0</dt><dd><code>{hex(regs.cr0)}</code> {regs.cr0 & 0x80000000 ? 'PG' : ''} {regs.cr0 & 0x10000 ? 'WP' : ''} {regs.cr0 & 1 ? 'PE' : ''}</dd>
      <dt>CR3</dt><dd><code id="live-cr3">{hex(regs.cr3)}</code></dd>
      <dt>CR4</dt><dd><code>{hex(regs.cr4)}</code> {regs.cr4 & 0x10 ? 'PSE' : ''} {regs.cr4 & 0x20 ? 'PAE' : ''} {regs.cr4 & 0x80 ? 'PGE' : ''}</dd>
      <dt>{t('inspector.paging')}</dt><dd id="live-paging">{pagingText(regs.paging, t)}</dd>
      {live && <><dt>{t('inspector.shadow')}</dt><dd>{t('inspector.shadowLine', {
        pages: t('inspector.protectPages', { count: live.pages }), spaces: t('inspector.spaces', { count: live.cr3s }) })}</dd></>}
    </dl>
  );
}
