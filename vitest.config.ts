import { readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// Two groups of test files. Those that time what they check (the class server's answers
// within a second under attack, p99s, rate limits' windows, the live guest's boot and
// restore) run one file at a time, after every other: a second file beside them would take
// their processor. The rest assert no time; they run on more workers than vitest's default
// (the processors less one, so 1 on a 2-processor machine), since much of their time is a
// browser, a server or a child process working while the test waits (tests/README.md has
// the minutes).
// The server's files that time nothing and meet no rate limit run with the rest; a new
// file under tests/server is timed until it is named here.
const untimedServer = new Set(['browser-uploads', 'course', 'course-units', 'grade-counts', 'grade-pool', 'groupcommit',
  'join', 'lifecycle', 'receipts', 'traces', 'validator', 'which-wins-table'].map((n) => `${n}.test.ts`));
const timed = ['tests/live/**/*.test.ts', ...readdirSync(new URL('tests/server', import.meta.url))
  .filter((f) => f.endsWith('.test.ts') && !untimedServer.has(f)).map((f) => `tests/server/${f}`)];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'untimed',
          include: ['tests/**/*.test.ts', 'web/**/*.test.{ts,tsx}', 'wasm-core/js/**/*.test.ts'],
          exclude: ['**/node_modules/**', ...timed],
          maxWorkers: Math.max(2, availableParallelism() - 1),
          // their time limits only catch a hang, and a file takes up to twice as long beside
          // another: expect.poll's 1 s too (a browser test's file check took longer than that
          // beside another file)
          testTimeout: 180_000,
          expect: { poll: { timeout: 20_000 } },
          // and Testing Library's waitFor and findBy* likewise
          setupFiles: ['tests/vitest-untimed-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'timed',
          include: timed,
          // one file at a time, after the group above (vitest runs such a project last)
          fileParallelism: false,
        },
      },
    ],
  },
});
