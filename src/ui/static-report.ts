import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { TscclError } from '../errors.js';
import { type UiContext, answerApi } from './ui-api.js';
import { PAGE_DIR } from './ui-server.js';
import { VIEWS, type ViewState, stateToQuery, viewRequests } from './view-state.js';

/** JSON that can sit inside a <script> element: no `</script>` or `<!--` can close or confuse it. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/**
 * The page as one file that opens from disk: its script and style inlined, and the answers of
 * every view for `state` (the same API answers the server gives) embedded. A view the report
 * was not written with says so and names the command that shows it.
 */
export function staticReport(state: ViewState, context: UiContext, pageDir = PAGE_DIR): string {
  let html: string;
  try {
    html = readFileSync(resolve(pageDir, 'index.html'), 'utf8');
  } catch {
    throw new TscclError('TSCCL_ERR_UNAVAILABLE', `the page is not built (${pageDir}): run npm run build`);
  }
  const data: Record<string, unknown> = {};
  for (const view of VIEWS)
    for (const url of viewRequests({ ...state, view })) if (!(url in data)) data[url] = answerOrRefusal(url, context);
  const inlined = html
    .replace(/<link rel="stylesheet"[^>]*href="\.?\/?([^"]+)"[^>]*>/g, (_, href: string) => {
      const css = readFileSync(resolve(pageDir, href), 'utf8');
      return `<style>${css.replace(/<\/style/gi, '<\\/style')}</style>`;
    })
    .replace(/<script type="module"[^>]*src="\.?\/?([^"]+)"[^>]*><\/script>/g, (_, src: string) => {
      const js = readFileSync(resolve(pageDir, src), 'utf8');
      return `<script type="module">${js.replace(/<\/script/gi, '<\\/script')}</script>`;
    });
  const boot = `<script>window.__TSCCL_DATA__=${scriptJson(data)};window.__TSCCL_STATE__=${scriptJson(stateToQuery(state))};</script>`;
  return inlined.replace('<head>', `<head>${boot}`);
}

/** A view whose data cannot be had (a layout the topology cannot hold) shows the refusal, as the server would. */
function answerOrRefusal(url: string, context: UiContext): unknown {
  try {
    return answerApi(url, context);
  } catch (err) {
    if (!(err instanceof TscclError)) throw err;
    return { error: { code: err.code, message: err.message, argument: err.details.argument ?? null } };
  }
}
