// @vitest-environment jsdom
/* The walk filled in by hand (kind walk-grid) in the page: lesson 3's card takes one table a
 * reference and two addresses, checks them cell by cell against the engine's walk, says how
 * many cells are right and marks each; a full grid is correct; showing the answer fills the
 * grid with the engine's. And the checker's grid reading on its own. */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, fireEvent, render, within } from '@testing-library/react';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { testEngine } from '../test/engine';
import '../i18n';
import { LessonsView } from './LessonsView';
import { generate, gridAnswer, gridCells, gridScore, judge, answered, type GridInput } from './exercises';

let engine: Vmsim;
beforeAll(async () => { engine = await testEngine(); });
afterEach(() => { cleanup(); localStorage.clear(); });

const gridCard = () => [...document.querySelectorAll<HTMLElement>('section.exercise')].find((c) => c.dataset.kind === 'walk-grid')!;

describe('the checker reads a grid', () => {
  const input: GridInput = { type: 'grid', refs: 3, options: ['g1', 'n1'], addresses: [{ ref: 1, what: 'gpa' }, { ref: 2, what: 'hpa' }] };
  it('cell by cell, hex in any case with a full stop, an empty cell wrong', () => {
    expect(gridCells(input, 'N1 g1 n1 | 0X1A. 0x2b')).toEqual(['n1', 'g1', 'n1', '0x1a', '0x2b']);
    expect(gridScore(input, 'n1 g1 n1 | 0x1a 0x2b', 'n1 g1 - | 0x1a 0x2c')).toMatchObject({ right: 3, of: 5, cells: [true, true, false, true, false] });
    expect(judge({ input }, 'n1 g1 n1 | 0x1a 0x2b', 'n1 g1 n1 | 0x1A 2b')).toBe(true);
    expect(gridAnswer(input, ['n1', '', 'g1', ' 0x1a ', ''])).toBe('n1 - g1 | 0x1a -');
    expect(answered({ input }, '- - - | - -')).toBe(false);
    expect(answered({ input }, '- g1 - | - -')).toBe(true);
  });
});

describe('lesson 3\'s walk-grid card', () => {
  it('a grid right but for one cell: "wrong" with the share right and each cell marked; then the whole grid is correct', () => {
    render(<LessonsView engine={engine} lesson="ept-and-npt" seed={1} lang="en" onNavigate={() => {}} />);
    const card = gridCard();
    const seed = Number(card.dataset.seed);
    const ex = generate({ kind: 'walk-grid', mode: 'ept' }, seed);
    const input = ex.input as GridInput;
    const want = gridCells(input, ex.expected(ex.scenarios.map((s) => engine.run(s))));
    const selects = within(card).getAllByRole('combobox');
    const fields = within(card).getAllByRole('textbox');
    expect(selects).toHaveLength(input.refs);
    expect(fields).toHaveLength(2);
    selects.forEach((s, i) => fireEvent.change(s, { target: { value: i === 0 ? want[1] : want[i] } }));   // reference 1 wrong
    fields.forEach((f, j) => fireEvent.change(f, { target: { value: want[input.refs + j] } }));
    fireEvent.click(within(card).getByText('Check'));
    const status = within(card).getByRole('status').textContent!;
    expect(status).toContain(`${input.refs + 1} of ${input.refs + 2} cells right`);
    expect(card.querySelectorAll('.cell-mark.error')).toHaveLength(1);
    expect(card.querySelectorAll('.cell-mark.ok')).toHaveLength(input.refs + 1);
    fireEvent.change(selects[0], { target: { value: want[0] } });
    fireEvent.click(within(card).getByText('Check'));
    expect(within(card).getByRole('status').textContent).toMatch(/^Correct\./);
  });

  it('shown, the answer fills the grid with the engine\'s walk', () => {
    render(<LessonsView engine={engine} lesson="agile-paging" seed={4} lang="en" onNavigate={() => {}} />);
    const card = gridCard();
    const ex = generate({ kind: 'walk-grid', mode: 'agile' }, Number(card.dataset.seed));
    const want = gridCells(ex.input as GridInput, ex.expected(ex.scenarios.map((s) => engine.run(s))));
    expect(want.some((c) => c.startsWith('s'))).toBe(true);   // shadow levels above the switch
    fireEvent.click(within(card).getByText('Show answer'));
    const selects = within(card).getAllByRole('combobox') as HTMLSelectElement[];
    expect(selects.map((s) => s.value)).toEqual(want.slice(0, selects.length));
  });
});
