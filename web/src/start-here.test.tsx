// @vitest-environment jsdom
/* "Start here" on a first visit: shown on a bare address, not on a shared link; closing it
 * or beginning Lesson 1 is remembered; Lessons is the first tab. */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import type { Vmsim } from '../../wasm-core/js/vmsim';
import { testEngine } from './test/engine';
import i18n from './i18n';
import { englishRuns } from './test/english';
import { StartHere } from './StartHere';
import { App } from './App';

let engine: Vmsim;
beforeAll(async () => { engine = await testEngine(); });
afterEach(() => { cleanup(); localStorage.clear(); history.replaceState(null, '', '/'); });

const panel = () => screen.queryByRole('region', { name: 'Start here' });

describe('Start here', () => {
  it('shows on a first bare visit, says where to begin, and stays closed once closed', async () => {
    history.replaceState(null, '', '/');
    render(<App engine={engine} />);
    expect(await screen.findByRole('region', { name: 'Start here' })).toBeTruthy();
    expect(panel()!.textContent).toMatch(/Lesson 1.*Lesson 8 \(agile paging\)/);
    // Lessons is the first tab
    const tabs = [...document.querySelectorAll('nav.tabs button')].map((b) => b.textContent);
    expect(tabs[0]).toBe('Lessons');
    fireEvent.click(screen.getByRole('button', { name: 'Close (shown once)' }));
    expect(panel()).toBeNull();
    cleanup();
    render(<App engine={engine} />);
    await screen.findByRole('button', { name: 'Lessons' });
    expect(panel()).toBeNull();
  });

  it('begins Lesson 1 from the panel, and is then not shown again', async () => {
    render(<App engine={engine} />);
    fireEvent.click(await screen.findByRole('button', { name: 'Begin Lesson 1' }));
    const q = new URLSearchParams(location.search);
    expect([q.get('view'), q.get('lesson')]).toEqual(['lessons', 'four-address-spaces']);
    expect(panel()).toBeNull();
    cleanup();
    history.replaceState(null, '', '/');
    render(<App engine={engine} />);
    await screen.findByRole('button', { name: 'Lessons' });
    expect(panel()).toBeNull();
  });

  it('is not shown on a shared link, and is in Japanese and Chinese', async () => {
    history.replaceState(null, '', '?example=ept-4k');
    render(<App engine={engine} />);
    await screen.findByRole('button', { name: 'Lessons' });
    expect(panel()).toBeNull();
    cleanup();
    // the language alone is still a bare visit
    history.replaceState(null, '', '?lang=en');
    render(<App engine={engine} />);
    expect(await screen.findByRole('region', { name: 'Start here' })).toBeTruthy();
    cleanup();
    history.replaceState(null, '', '/');
    for (const [lang, title] of [['ja', 'ここから始める'], ['zh', '从这里开始']]) {
      await i18n.changeLanguage(lang);
      render(<StartHere onBegin={() => {}} />);
      expect(screen.getByRole('region', { name: title })).toBeTruthy();
      expect(englishRuns(document.body.textContent!)).toEqual([]);
      cleanup();
    }
    await i18n.changeLanguage('en');
  });
});
