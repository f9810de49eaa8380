/* How long a replay has left, from where its progress bar stands and how long it has run.
 * The bar moves at about one speed through both passes (PASS1_SHARE in wasm-core/js/replay.ts;
 * measured in wasm-core/docs/replay.md), so the time left is the time so far times what is
 * left of the bar over what is done. Nothing is said too early to mean anything: before a
 * twentieth of the bar or 2 s. */
export type TimeLeft = { unit: 's' | 'min'; n: number };

export function timeLeft(fraction: number, elapsedMs: number): TimeLeft | null {
  if (!(fraction >= 0.05 && fraction < 1) || !(elapsedMs >= 2000)) return null;
  const s = (elapsedMs / 1000) * (1 - fraction) / fraction;
  if (s < 10) return { unit: 's', n: Math.max(1, Math.ceil(s)) };
  if (s < 60) return { unit: 's', n: Math.round(s / 5) * 5 };
  if (s < 3600) return { unit: 'min', n: Math.round(s / 60) };
  return { unit: 'min', n: Math.round(s / 600) * 10 };
}
