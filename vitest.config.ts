import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts', 'web/**/*.test.{ts,tsx}', 'wasm-core/js/**/*.test.ts'],
    testTimeout: 60_000,
  },
});
