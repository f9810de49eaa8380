/* Sizes in the words the lessons and exercises use (4 KiB, 8 KiB on Sunway, 2 MiB, 1 GiB),
 * so that no view says "2048 KiB" where a lesson says "2 MiB". */

/** Bytes as a learner reads them: 4 KiB, 2 MiB, 512 GiB; the largest unit that divides them. */
export function sizeWords(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let u = 0;
  while (bytes >= 1024 && bytes % 1024 === 0 && u < units.length - 1) { bytes /= 1024; u++; }
  return `${bytes} ${units[u]}`;
}
