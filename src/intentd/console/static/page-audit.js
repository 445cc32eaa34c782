// Audit log: every change by a user, a key or the command line; filters, pages, CSV export.
import { get, query } from './api.js';
import { append, button, clear, field, h, input, mono, notice, problemText, select, t, table, time } from './dom.js';

const FILTERS = ['actor', 'action', 'object_id', 'result', 'since', 'until'];

export async function render(ctx) {
  const { root, params, href, navigate } = ctx;
  const values = Object.fromEntries(FILTERS.map((f) => [f, params.get(f) || '']));
  const inputs = Object.fromEntries(FILTERS.map((f) => [f, input(f, { value: values[f] })]));
  inputs.result = select('result', [['', t('all')], ...['ok', 'pending', 'refused', 'denied', 'failed', 'repeat']
    .map((r) => [r, t(`results.${r}`)])], values.result);
  const labels = { actor: t('fActor'), action: t('fAction'), object_id: t('fObject'), result: t('fResult'), since: t('fSince'), until: t('fUntil') };
  const form = h('form', { class: 'filters' }, h('div', { class: 'filter-grid' }, FILTERS.map((f) => field(labels[f], inputs[f]))),
    h('div', { class: 'buttons' }, h('button', { type: 'submit', class: 'primary' }, t('apply')),
      h('a', { class: 'button', href: `/console/api/audit/export.csv${query(values)}`, download: '' }, t('exportCsv'))));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    navigate(href('/console/audit', Object.fromEntries(FILTERS.map((f) => [f, inputs[f].value.trim()]))));
  });
  const note = notice();
  const holder = h('div', {});
  const more = button(t('more'), () => load(), { hidden: true });
  append(root, [h('h1', {}, t('auditTitle')), form, note.el, holder, more]);
  const rows = [];
  let cursor = null;
  async function load() {
    try {
      const { body } = await get('/audit', { ...values, cursor });
      for (const r of body.data) {
        rows.push([time(r.at), `${r.actor_label} (${r.actor_kind})`, r.action, `${r.object_kind} ${r.object_id}`,
          r.mode || t('dash'), r.source || t('dash'), r.result, mono(JSON.stringify(r.detail))]);
      }
      cursor = body.next_cursor;
      more.hidden = !cursor;
      clear(holder);
      holder.append(table(t('auditTitle'), [t('colTime'), t('colWho'), t('colAction'), t('colObject'), t('colMode'),
        t('colSource'), t('colResult'), t('colDetail')], rows, t('noAudit')));
    } catch (error) {
      note.show(problemText(error), 'error');
    }
  }
  await load();
}
