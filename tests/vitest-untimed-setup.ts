/* Setup for Vitest's untimed group (vitest.config.ts). A file there may take twice its time
 * alone beside another, so Testing Library's waitFor and findBy* wait up to 20 s, as
 * expect.poll does there (both default to 1 s); a test that gives its own timeout keeps it.
 * Only files in a DOM (jsdom) load Testing Library. */
if (typeof document !== 'undefined') {
  const { configure } = await import('@testing-library/dom');
  configure({ asyncUtilTimeout: 20_000 });
}
