/* The walk's keys, one rule for every place a walk can be stepped (the Walk and Memory
 * tabs, the walks embedded in lessons): ← → Home End step whenever focus is not in a
 * text field, even on a select (whose value ↑ ↓ still change) or a button; Space plays
 * and pauses unless focus is on something Space already activates. */
export type StepAction = 'next' | 'prev' | 'first' | 'last' | 'play';

const NOT_TEXT = new Set(['checkbox', 'radio', 'button', 'submit', 'reset', 'file', 'color']);

export function isTextField(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  if (!el || !el.tagName) return false;
  if (el.tagName === 'TEXTAREA' || el.isContentEditable || el.closest?.('.cm-editor, .xterm')) return true;
  return el.tagName === 'INPUT' && !NOT_TEXT.has((el as HTMLInputElement).type);
}

const SPACE_TAKEN = /^(BUTTON|SELECT|A|SUMMARY|INPUT|TEXTAREA|OPTION)$/;

export function stepAction(e: Pick<KeyboardEvent, 'key' | 'altKey' | 'ctrlKey' | 'metaKey' | 'target'>): StepAction | null {
  if (e.altKey || e.ctrlKey || e.metaKey || isTextField(e.target)) return null;
  switch (e.key) {
    case 'ArrowRight': return 'next';
    case 'ArrowLeft': return 'prev';
    case 'Home': return 'first';
    case 'End': return 'last';
    case ' ': case 'Spacebar':
      return SPACE_TAKEN.test((e.target as HTMLElement | null)?.tagName ?? '') ? null : 'play';
    default: return null;
  }
}

/** The step an action leads to (play is the caller's). */
export function stepTo(action: Exclude<StepAction, 'play'>, step: number, total: number): number {
  const n = action === 'next' ? step + 1 : action === 'prev' ? step - 1 : action === 'first' ? 0 : total;
  return Math.max(0, Math.min(total, n));
}
