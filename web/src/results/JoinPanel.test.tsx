// @vitest-environment jsdom
/* The join panel a teacher shows the class: which address the join link uses (the page's
 * own when it was opened on the network or through a proxy, else the first address the
 * server found, never loopback when the server is reachable elsewhere), the QR code of
 * that link, the copy buttons (the clipboard, or the selected text where the browser has
 * no clipboard API, as on plain http at a LAN address), the warnings for a server only
 * this machine reaches, and all of it in English, Japanese and Chinese. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { act, cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import i18n from '../i18n';
import { englishRuns, translatedText } from '../test/english';
import { JoinPanel, joinOrigin, qrPath, type ServerInfo } from './JoinPanel';

const CODE = 'ABCD-EFGH';
const TOKEN = 'teacher-token-0123456789';
const LAN: ServerInfo = { addresses: ['http://10.0.0.5:8080/', 'http://[fd00::5]:8080/'], loopback_only: false, class_key: true, proxied: false };

function serverSays(info: ServerInfo | null) {
  const fetch = vi.fn(async (url: string) => {
    if (url === '/api/server' && info) return new Response(JSON.stringify(info), { headers: { 'content-type': 'application/json' } });
    return new Response('{"message":"not found"}', { status: 404, headers: { 'content-type': 'application/json' } });
  });
  vi.stubGlobal('fetch', fetch);
  return fetch;
}
const value = (id: string) => (screen.getByTestId(`join-${id}`).querySelector('input') as HTMLInputElement).value;
/** Titles, labels and placeholders: what a screen reader or a hover shows. */
const attrs = (el: Element) => [...el.querySelectorAll('[title],[aria-label],[placeholder]')]
  .map((e) => ['title', 'aria-label', 'placeholder'].map((a) => e.getAttribute(a) ?? '').join(' | ')).join('\n');

beforeEach(() => { history.replaceState(null, '', `/?view=results&class=${CODE}#teacher=${TOKEN}`); });
afterEach(async () => {
  cleanup();
  vi.unstubAllGlobals();
  vi.restoreAllMocks();
  await act(async () => { await i18n.changeLanguage('en'); });
});

describe('joinOrigin: the address students are given', () => {
  const loopPage = { origin: 'http://127.0.0.1:8080', hostname: '127.0.0.1' };
  it('is the page\'s own when the page was opened at a network address', () => {
    expect(joinOrigin(LAN, { origin: 'http://10.0.0.5:8080', hostname: '10.0.0.5' })).toEqual({ origin: 'http://10.0.0.5:8080', from: 'page' });
    expect(joinOrigin(null, { origin: 'http://lab.example:8080', hostname: 'lab.example' })).toEqual({ origin: 'http://lab.example:8080', from: 'page' });
  });
  it('is the server\'s first address when the page was opened on loopback, never loopback itself', () => {
    for (const page of [loopPage, { origin: 'http://localhost:8080', hostname: 'localhost' }, { origin: 'http://[::1]:8080', hostname: '[::1]' }, { origin: 'http://127.1.2.3:8080', hostname: '127.1.2.3' }]) {
      expect(joinOrigin(LAN, page), page.origin).toEqual({ origin: 'http://10.0.0.5:8080', from: 'server' });
    }
    expect(joinOrigin(LAN, loopPage, 1)).toEqual({ origin: 'http://[fd00::5]:8080', from: 'server' });
    expect(joinOrigin(LAN, loopPage, 7).origin).toBe('http://10.0.0.5:8080');
  });
  it('is the page\'s own behind a reverse proxy, whatever the page was opened at', () => {
    expect(joinOrigin({ addresses: ['https://lab.example/'], loopback_only: false, class_key: true, proxied: true }, { origin: 'https://lab.example', hostname: 'lab.example' }).origin).toBe('https://lab.example');
    expect(joinOrigin({ addresses: ['https://127.0.0.1:8443/'], loopback_only: false, class_key: true, proxied: true }, { origin: 'https://127.0.0.1:8443', hostname: '127.0.0.1' })).toEqual({ origin: 'https://127.0.0.1:8443', from: 'page' });
  });
  it('is this machine\'s own, marked local, when the server names no address students could use', () => {
    expect(joinOrigin({ addresses: [], loopback_only: true, class_key: false }, loopPage)).toEqual({ origin: 'http://127.0.0.1:8080', from: 'local' });
    expect(joinOrigin({ addresses: [], loopback_only: false, class_key: false }, loopPage).from).toBe('local');
    expect(joinOrigin(null, loopPage).from).toBe('local');
  });
});

describe('JoinPanel', () => {
  it('on a page opened on loopback: the link, the QR code and the command use the server\'s first address', async () => {
    expect(location.hostname).toMatch(/^(localhost|127\.)/);
    serverSays(LAN);
    render(<JoinPanel code={CODE} token={TOKEN} fresh />);
    await waitFor(() => expect(value('link')).toBe(`http://10.0.0.5:8080/?view=results&class=${CODE}`));
    expect(value('command')).toBe(`hw-lab/run --upload http://10.0.0.5:8080/api/results --class ${CODE}`);
    expect(value('teacher')).toBe(`http://10.0.0.5:8080/?view=results&class=${CODE}#teacher=${TOKEN}`);
    expect(screen.getByTestId('join-code-shown').textContent).toBe(CODE);
    const panel = screen.getByTestId('join-panel');
    for (const i of panel.querySelectorAll('input')) expect(i.value).not.toMatch(/127\.0\.0\.1|localhost/);
    // the QR code is the join link's, drawn in the page
    const qr = screen.getByTestId('join-qr');
    expect(qr.getAttribute('role')).toBe('img');
    expect(qr.querySelector('path')!.getAttribute('d')).toBe(qrPath(value('link')).d);
    expect(qrPath(value('link')).d.length).toBeGreaterThan(500);
    // two addresses: the teacher may pick the other one, and everything follows
    const pick = screen.getByTestId('join-address') as HTMLSelectElement;
    expect([...pick.options].map((o) => o.textContent)).toEqual(['http://10.0.0.5:8080', 'http://[fd00::5]:8080']);
    fireEvent.change(pick, { target: { value: '1' } });
    expect(value('link')).toBe(`http://[fd00::5]:8080/?view=results&class=${CODE}`);
    expect(value('command')).toBe(`hw-lab/run --upload http://[fd00::5]:8080/api/results --class ${CODE}`);
    expect(qr.querySelector('path')!.getAttribute('d')).toBe(qrPath(`http://[fd00::5]:8080/?view=results&class=${CODE}`).d);
    // a new class: keep the link, which is the page's address now
    expect(screen.getByTestId('class-created').textContent).toBe(i18n.t('join.keepNew', { ns: 'results' }));
    expect(screen.queryByTestId('join-loopback')).toBeNull();
    expect(screen.queryByTestId('join-no-key')).toBeNull(); // this server has a class key
  });

  it('each copy button puts its text on the clipboard', async () => {
    serverSays(LAN);
    const writeText = vi.fn(async () => {});
    vi.stubGlobal('navigator', Object.assign(Object.create(navigator), { clipboard: { writeText } }));
    render(<JoinPanel code={CODE} token={TOKEN} />);
    await waitFor(() => expect(value('link')).toContain('10.0.0.5'));
    const expected: [string, string][] = [['code', CODE], ['link', value('link')], ['command', value('command')], ['teacher', value('teacher')]];
    for (const [id, text] of expected) {
      await act(async () => { fireEvent.click(screen.getByTestId(`copy-${id}`)); });
      expect(writeText).toHaveBeenLastCalledWith(text);
    }
    expect(writeText).toHaveBeenCalledTimes(4);
    expect(screen.getByTestId('join-link').textContent).toContain('Copied.');
    expect(screen.getByTestId('copy-command').getAttribute('aria-label')).toBe('Copy: Upload from a shell');
    // a returning teacher is told to keep the link too
    expect(screen.getByTestId('join-keep').textContent).toBe(i18n.t('join.keep', { ns: 'results' }));
  });

  it('without a clipboard API (plain http at a LAN address) the text is selected and copied from the selection', async () => {
    serverSays(LAN);
    vi.stubGlobal('navigator', Object.assign(Object.create(navigator), { clipboard: undefined }));
    const exec = vi.fn(() => true);
    Object.defineProperty(document, 'execCommand', { value: exec, configurable: true });
    render(<JoinPanel code={CODE} token={TOKEN} />);
    await waitFor(() => expect(value('link')).toContain('10.0.0.5'));
    await act(async () => { fireEvent.click(screen.getByTestId('copy-link')); });
    const field = screen.getByTestId('join-link').querySelector('input')!;
    expect(exec).toHaveBeenCalledWith('copy');
    expect(document.activeElement).toBe(field);
    expect([field.selectionStart, field.selectionEnd]).toEqual([0, field.value.length]);
    expect(screen.getByTestId('join-link').textContent).toContain('Copied.');
    // the join code is text on the page: its text is selected
    await act(async () => { fireEvent.click(screen.getByTestId('copy-code')); });
    expect(getSelection()!.toString()).toBe(CODE);
    // a browser that will not copy even so: the text stays selected for Ctrl+C
    exec.mockReturnValue(false);
    await act(async () => { fireEvent.click(screen.getByTestId('copy-command')); });
    expect(screen.getByTestId('join-command').textContent).toContain(i18n.t('join.selected', { ns: 'results' }));
    // a clipboard that refuses (no permission) falls back the same way
    const writeText = vi.fn(async () => { throw new DOMException('denied', 'NotAllowedError'); });
    vi.stubGlobal('navigator', Object.assign(Object.create(navigator), { clipboard: { writeText } }));
    exec.mockReturnValue(true);
    await act(async () => { fireEvent.click(screen.getByTestId('copy-teacher')); });
    expect(writeText).toHaveBeenCalled();
    expect(screen.getByTestId('join-teacher').textContent).toContain('Copied.');
    delete (document as { execCommand?: unknown }).execCommand;
  });

  it('a server only this machine reaches: this machine\'s link, and how to open it to the class', async () => {
    serverSays({ addresses: [], loopback_only: true, class_key: false, proxied: false });
    render(<JoinPanel code={CODE} token={TOKEN} fresh />);
    const warn = await screen.findByTestId('join-loopback');
    expect(value('link')).toBe(`${location.origin}/?view=results&class=${CODE}`);
    expect([...warn.querySelectorAll('code')].map((c) => c.textContent)).toEqual(['HOST=127.0.0.1', 'HOST=0.0.0.0', 'VMEMLAB_CLASS_KEY=']);
    expect(warn.getAttribute('role')).toBe('alert');
    expect(screen.queryByTestId('join-no-key')).toBeNull(); // nobody else can reach it anyway
  });

  it('on the network without a class key, or with no address at all: says so', async () => {
    serverSays({ addresses: ['http://10.0.0.5:8080/'], loopback_only: false, class_key: false, proxied: false });
    render(<JoinPanel code={CODE} token={null} />);
    expect((await screen.findByTestId('join-no-key')).querySelector('code')!.textContent).toBe('VMEMLAB_CLASS_KEY=');
    expect(screen.queryByTestId('join-address')).toBeNull(); // one address: nothing to pick
    expect(screen.queryByTestId('join-teacher')).toBeNull(); // no token here: no teacher link
    cleanup();
    serverSays({ addresses: [], loopback_only: false, class_key: true, proxied: false });
    render(<JoinPanel code={CODE} token={TOKEN} />);
    await screen.findByTestId('join-no-address');
    expect(value('link')).toBe(`${location.origin}/?view=results&class=${CODE}`);
  });

  it('behind a proxy, or with an older server that has no /api/server: the page\'s own address', async () => {
    const fetch = serverSays({ addresses: ['https://lab.example/'], loopback_only: false, class_key: true, proxied: true });
    render(<JoinPanel code={CODE} token={TOKEN} />);
    await waitFor(() => expect(fetch).toHaveBeenCalledWith('/api/server'));
    await act(async () => { await new Promise((r) => setTimeout(r, 20)); });
    expect(value('link')).toBe(`${location.origin}/?view=results&class=${CODE}`);
    expect(screen.queryByTestId('join-loopback')).toBeNull();
    expect(screen.queryByTestId('join-no-key')).toBeNull();
    cleanup();
    serverSays(null);
    render(<JoinPanel code={CODE} token={TOKEN} />);
    await act(async () => { await new Promise((r) => setTimeout(r, 20)); });
    expect(value('link')).toBe(`${location.origin}/?view=results&class=${CODE}`);
    expect(screen.getByTestId('join-qr')).toBeTruthy();
  });

  for (const lang of ['ja', 'zh'] as const) {
    it(`in ${lang}: no English left, whatever the server says`, async () => {
      await act(async () => { await i18n.changeLanguage(lang); });
      const cases: ServerInfo[] = [LAN, { addresses: [], loopback_only: true, class_key: false }, { addresses: ['http://10.0.0.5:8080/'], loopback_only: false, class_key: false }, { addresses: [], loopback_only: false, class_key: true }];
      const seen = new Set<string>();
      for (const info of cases) {
        serverSays(info);
        for (const fresh of [true, false]) {
          render(<JoinPanel code={CODE} token={TOKEN} fresh={fresh} />);
          await act(async () => { await new Promise((r) => setTimeout(r, 10)); });
          await act(async () => { fireEvent.click(screen.getByTestId('copy-link')); }); // "copied" or "selected"
          const panel = screen.getByTestId('join-panel');
          for (const p of panel.querySelectorAll('[data-testid]')) seen.add(p.getAttribute('data-testid')!);
          expect(englishRuns(translatedText(panel)), JSON.stringify(info)).toEqual([]);
          expect(englishRuns(attrs(panel)), JSON.stringify(info)).toEqual([]);
          expect(panel.querySelector('[lang="en"]')).toBeNull();
          expect(panel.textContent).toContain(i18n.t('join.heading', { ns: 'results', lng: lang }));
          cleanup();
        }
      }
      // every message the panel has was on screen in this language
      for (const id of ['join-loopback', 'join-no-key', 'join-no-address', 'class-created', 'join-keep', 'join-address', 'join-qr']) expect(seen, id).toContain(id);
    });
  }

  it('in English, says what a teacher needs', async () => {
    serverSays({ addresses: [], loopback_only: true, class_key: false });
    render(<JoinPanel code={CODE} token={TOKEN} fresh />);
    const warn = await screen.findByTestId('join-loopback');
    expect(warn.textContent).toBe('This server listens only on this machine\'s loopback address (HOST=127.0.0.1, the default), so students on other machines cannot open this link. Stop it and start it again with HOST=0.0.0.0 and a class key: VMEMLAB_CLASS_KEY= followed by a passphrase of your choice (the teacher guide\'s “Before the class” says more).');
    expect(screen.getByRole('heading').textContent).toBe('How students join');
    expect(screen.getByRole('img').getAttribute('aria-label')).toBe('QR code of the join link: a phone\'s camera opens the class with it');
    expect([...screen.getByTestId('join-panel').querySelectorAll('label')].map((l) => l.textContent)).toEqual(['Join link', 'Upload from a shell', 'Your teacher link (private)']);
    expect(screen.getByTestId('class-created').textContent).toMatch(/^This page's address is now your teacher link: bookmark it\./);
  });
});
