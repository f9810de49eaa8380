/* The walk's keys, one rule for every place a walk can be stepped (the Walk and Memory
 * tabs, the walks embedded in lessons): ← → Home End step whenever focus is not in a
 * form control (a text field, a select, a checkbox, a slider, the editor or the terminal:
 * there every key does what the control does, a select's arrows change its value) but on
 * a button, a grid cell or the page; Space plays and pauses unless focus is on something
 * Space already activates. */
export type StepAction = 'next' | 'prev' | 'first' | 'last' | 'play';

const BUTTON_INPUT = new Set(['button', 'submit', 'reset']);

/** Focus is in a control whose keys are its own: every input but a push button, a select, a
 * text area, anything editable, the scenario editor and the live terminal. */
export function isFormControl(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  if (!el || !el.tagName) return false;
  if (el.tagName === 'TEXTAREA' || el.tagName === 'SELECT' || el.tagName === 'OPTION' || el.isContentEditable || el.closest?.('.cm-editor, .xterm')) return true;
  return el.tagName === 'INPUT' && !BUTTON_INPUT.has((el as HTMLInputElement).type);
}

const SPACE_TAKEN = /^(BUTTON|SELECT|A|SUMMARY|INPUT|TEXTAREA|OPTION)$/;

export function stepAction(e: Pick<KeyboardEvent, 'key' | 'altKey' | 'ctrlKey' | 'metaKey' | 'target'>): StepAction | null {
  if (e.altKey || e.ctrlKey || e.metaKey || isFormControl(e.target)) return null;
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

// When a key was last pressed anywhere on the page (capture: before any control sees it).
let lastKeyAt = -Infinity;
if (typeof addEventListener === 'function') addEventListener('keydown', () => { lastKeyAt = performance.now(); }, true);

/** After a select's value is picked with the pointer (no key pressed just before), focus
 * leaves it for the walk it belongs to (an embedded walk's group, or the page), so ← → step
 * again; a value changed with the keyboard keeps focus on the select, where its arrows are. */
export function releaseAfterPick(el: HTMLElement) {
  if (performance.now() - lastKeyAt < 300) return;
  const home = el.closest<HTMLElement>('.stepped-walk');
  if (home) home.focus(); else el.blur();
}
