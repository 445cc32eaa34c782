// Reports: the slot of the reports service (CSV exports, the reconciliation).
import { get } from './api.js';
import { append, h, problemText, t } from './dom.js';

export async function render(ctx) {
  const { root, mode } = ctx;
  append(root, [h('h1', {}, t('reportsTitle'))]);
  try {
    const { body } = await get('/reports', { mode });
    root.append(h('pre', {}, JSON.stringify(body, null, 2)));
  } catch (error) {
    root.append(h('p', { class: 'notice notice-info' }, error.code === 'reports_unavailable' ? t('reportsUnavailable') : problemText(error)));
  }
}
