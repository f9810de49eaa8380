/* A walk with its own step controls and keys, for walks that are not the page's main one
 * (the lessons' embedded walks and exercise walks): Controls and WalkView without ids,
 * ← → Home End and Space handled while focus is anywhere inside it. */
import { useEffect, useState } from 'react';
import { useTranslation } from 'react-i18next';
import type { AccessResult, Result } from '../../../wasm-core/js/types';
import { Controls } from './Controls';
import { WalkView } from './WalkView';
import { stepAction, stepTo } from './keys';

export interface SteppedWalkProps {
  result: Result;
  access: AccessResult;
  /** The step shown first (default: the whole walk). */
  initialStep?: number | null;
  /** Accessible name of the group (what walk this is). */
  label: string;
}

export function SteppedWalk({ result, access, initialStep, label }: SteppedWalkProps) {
  const { t } = useTranslation('views');
  const total = access.steps.length;
  const [step, setStep] = useState(Math.min(initialStep ?? total, total));
  const [playing, setPlaying] = useState(false);
  const [speed, setSpeed] = useState(1);
  useEffect(() => { setStep(Math.min(initialStep ?? total, total)); setPlaying(false); }, [access, initialStep, total]);
  useEffect(() => {
    if (!playing) return;
    if (step >= total) { setPlaying(false); return; }
    const timer = setTimeout(() => setStep(step + 1), 700 / speed);
    return () => clearTimeout(timer);
  }, [playing, step, total, speed]);
  const go = (n: number) => { setPlaying(false); setStep(Math.max(0, Math.min(total, n))); };
  const togglePlay = () => setPlaying((p) => { if (!p && step >= total) setStep(0); return !p; });
  const refOf = access.steps.slice(0, step).reduce((m, s) => Math.max(m, s.ref ?? 0), 0);
  const onKeyDown = (e: React.KeyboardEvent) => {
    const action = stepAction(e);
    if (!action) return;
    e.preventDefault();
    e.stopPropagation();
    if (action === 'play') togglePlay(); else go(stepTo(action, step, total));
  };
  return (
    <div className="stepped-walk" role="group" aria-label={label} tabIndex={0} onKeyDown={onKeyDown}>
      <Controls step={step} total={total} refOf={refOf} refs={access.memory_refs} playing={playing} speed={speed}
        onStep={go} onPlay={togglePlay} onSpeed={setSpeed} primary={false} label={t('controls.toolbarOf', { what: label })} />
      <WalkView result={result} access={access} step={step} onStep={go} primary={false} />
    </div>
  );
}
