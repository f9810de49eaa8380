/* Step controls. The keyboard shortcuts live in the app (they work wherever focus is,
 * except in text fields); these buttons carry the same actions for pointer users. */
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
}

export const SPEEDS = [0.5, 1, 2, 4];

export function Controls({ step, total, refOf, refs, playing, speed, onStep, onPlay, onSpeed }: ControlsProps) {
  return (
    <div className="controls" role="toolbar" aria-label="step controls">
      <button type="button" onClick={() => onStep(0)} disabled={step === 0} aria-label="first step (Home)" title="Home">|◀</button>
      <button type="button" onClick={() => onStep(step - 1)} disabled={step === 0} aria-label="step back (←)" title="←" id="back">◀</button>
      <button type="button" onClick={onPlay} aria-label={playing ? 'pause (Space)' : 'play (Space)'} id="play" className="primary" disabled={total === 0}>
        {playing ? '⏸' : '▶'}
      </button>
      <button type="button" onClick={() => onStep(step + 1)} disabled={step >= total} aria-label="step forward (→)" title="→" id="next">▶▶</button>
      <button type="button" onClick={() => onStep(total)} disabled={step >= total} aria-label="last step (End)" title="End">▶|</button>
      <label className="speed">speed
        <select value={speed} onChange={(e) => onSpeed(Number(e.target.value))} aria-label="playback speed">
          {SPEEDS.map((s) => <option key={s} value={s}>{s}×</option>)}
        </select>
      </label>
      <span id="counter" className="counter" aria-live="polite">
        Step <b data-field="step">{step}</b> / {total}
        {refs > 0 ? <> · ref <b data-field="ref">{refOf ?? '–'}</b> / {refs}</> : null}
      </span>
    </div>
  );
}
