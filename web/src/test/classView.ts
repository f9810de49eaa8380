/* The class panel's view once its chart is drawn. The view appears when the class's data
 * arrives; the strip chart is drawn by an effect after that render, which a loaded machine
 * can run after a test has already looked at the chart. Waiting for the chart's title (the
 * first thing every drawing writes) makes the tests read the drawn chart, never an empty
 * <svg>. */
import { screen, waitFor } from '@testing-library/react';

export async function classViewDrawn(timeout = 5000): Promise<HTMLElement> {
  const view = await screen.findByTestId('class-view', {}, { timeout });
  await waitFor(() => {
    if (!view.querySelector('svg[data-chart=class-strip] > title')) throw new Error('the class chart is not drawn yet');
  }, { timeout });
  return view;
}
