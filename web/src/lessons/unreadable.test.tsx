// @vitest-environment jsdom
/* What the page says to an answer it cannot read: not "No answer yet" (that is for an empty
 * field) but what it could not read and what to write instead, in each language; and an
 * estimate said as one ("about 24") is read and checked. */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { act, cleanup, fireEvent, render, within } from '@testing-library/react';
import type { Vmsim } from '../../../wasm-core/js/vmsim';
import { testEngine } from '../test/engine';
import i18n from '../i18n';
import { LessonsView } from './LessonsView';
import { generate } from './exercises';

let engine: Vmsim;
beforeAll(async () => { engine = await testEngine(); });
afterEach(async () => { cleanup(); localStorage.clear(); await act(async () => { await i18n.changeLanguage('en'); }); });

const card = () => document.querySelector<HTMLElement>('section.exercise[data-kind="count-refs"]')!;

describe('an answer the checker cannot read', () => {
  for (const [lang, check, said] of [['en', 'Check', /“five” is not an answer the checker can read: write a number/],
    ['ja', '答え合わせ', /「five」は答え合わせで読み取れません/], ['zh', '检查', /无法读懂“five”这个答案/]] as const) {
    it(`${lang}: says what it could not read and what to write; an empty field is still "no answer yet"`, async () => {
      await act(async () => { await i18n.changeLanguage(lang); });
      render(<LessonsView engine={engine} lesson="ept-and-npt" seed={1} lang={lang} onNavigate={() => {}} />);
      fireEvent.change(within(card()).getByRole('textbox'), { target: { value: 'five' } });
      fireEvent.click(within(card()).getByText(check));
      expect(within(card()).getByRole('status').textContent).toMatch(said);
      fireEvent.change(within(card()).getByRole('textbox'), { target: { value: '' } });
      fireEvent.click(within(card()).getByText(check));
      expect(within(card()).getByRole('status').textContent).not.toMatch(said);
    });
  }
  it('"about N" is read as N and checked', () => {
    render(<LessonsView engine={engine} lesson="ept-and-npt" seed={1} lang="en" onNavigate={() => {}} />);
    const ex = generate({ kind: 'count-refs', mode: 'ept' }, Number(card().dataset.seed));
    const right = ex.expected(ex.scenarios.map((s) => engine.run(s)));
    fireEvent.change(within(card()).getByRole('textbox'), { target: { value: `about ${right} memory accesses` } });
    fireEvent.click(within(card()).getByText('Check'));
    expect(within(card()).getByRole('status').textContent).toMatch(/^Correct\./);
  });
});
