// @vitest-environment jsdom
/* The untimed group's setup (vitest-untimed-setup.ts): Testing Library's waitFor, and so
 * findBy*, waits past its own 1 s default there. Without the setup this fails: the wait
 * gives up at 1 s, before the condition holds. */
import { waitFor } from '@testing-library/dom';
import { expect, it } from 'vitest';

it("waitFor waits past Testing Library's 1 s default", async () => {
  const t0 = performance.now();
  let ready = false;
  setTimeout(() => { ready = true; }, 1_300);
  await waitFor(() => { if (!ready) throw new Error('not yet'); });
  expect(performance.now() - t0).toBeGreaterThanOrEqual(1_250);
});
