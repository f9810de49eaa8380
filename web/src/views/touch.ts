/* Whether the page is on a touch screen with no pointer that hovers (a phone, a tablet):
 * there the words say "tap", not "hover" or "press →". */
import { useEffect, useState } from 'react';

const QUERY = '(hover: none)';
const matches = () => typeof matchMedia === 'function' && matchMedia(QUERY).matches;

export function useTouch(): boolean {
  const [touch, setTouch] = useState(matches);
  useEffect(() => {
    if (typeof matchMedia !== 'function') return;
    const m = matchMedia(QUERY);
    const on = () => setTouch(m.matches);
    m.addEventListener?.('change', on);
    return () => m.removeEventListener?.('change', on);
  }, []);
  return touch;
}
