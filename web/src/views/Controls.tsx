/* Step controls. The keyboard shortcuts live in the view that owns the walk (they work
 * wherever focus is, except in text fields: ← → Home End even on a select, whose value
 * ↑ ↓ still change); these buttons carry the same actions for pointer users. */
import { useTranslation } from 'react-i18next';
import { releaseAfterPick } from './keys';

export interface ControlsProps {
  step: number;
  total: number;
  refOf: number | null;
  refs: number;
  playing: boolean;
  speed: number;
  onStep: (n: number) => void;
  onPlay: () => void;
  onSpeed: (s: number) => void;
  /** The page's main controls carry ids (#next, #counter, ...); a second set on the same
   * page (an embedded walk in a lesson) does not, so no id repeats. */
  primary?: boolean;
  /** What the toolbar steps through, for its accessible name (default: the walk). */
  label?: string;
}

export const SPEEDS = [0.5, 1, 2, 4];

export function Controls({ step, total, refOf, refs, playing, speed, onStep, onPlay, onSpeed, primary = true, label }: ControlsProps) {
  const { t } = useTranslation('views');
  const id = (name: string) => (primary ? name : undefined);
  return (
    <div className="controls" role="toolbar" aria-label={label ?? t('controls.toolbar')}>
      <button type="button" onClick={() => onStep(0)} disabled={step === 0} aria-label={t('controls.first')} title="Home">|◀</button>
      <button type="button" onClick={() => onStep(step - 1)} disabled={step === 0} aria-label={t('controls.back')} title="←" id={id('back')}>◀</button>
      <button type="button" onClick={onPlay} aria-label={playing ? t('controls.pause') : t('controls.play')} id={id('play')} className="primary" disabled={total === 0}>
        {/* the pause sign as two bars: U+23F8 is missing from common fonts (an empty box) */}
        {playing ? <svg className="pause-icon" viewBox="0 0 10 10" width="0.8em" height="0.8em" aria-hidden="true"><rect x="1.5" y="1" width="2.5" height="8" fill="currentColor" /><rect x="6" y="1" width="2.5" height="8" fill="currentColor" /></svg> : '▶'}
      </button>
      <button type="button" onClick={() => onStep(step + 1)} disabled={step >= total} aria-label={t('controls.forward')} title="→" id={id('next')}>▶▶</button>
      <button type="button" onClick={() => onStep(total)} disabled={step >= total} aria-label={t('controls.last')} title="End">▶|</button>
      <label className="speed">{t('controls.speed')}
        <select value={speed} onChange={(e) => { onSpeed(Number(e.target.value)); releaseAfterPick(e.target); }} aria-label={t('controls.speedLabel')}>
          {SPEEDS.map((s) => <option key={s} value={s}>{s}×</option>)}
        </select>
      </label>
      <span id={id('counter')} className="counter" aria-live="polite">
        {t('controls.step')} <b data-field="step">{step}</b> / {total}
        {refs > 0 ? <> · {t('controls.ref')} <b data-field="ref">{refOf ?? '–'}</b> / {refs}</> : null}
      </span>
    </div>
  );
}
