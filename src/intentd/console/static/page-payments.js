// Payments: every filter of the API, keyset pages ("Load more"), and new payments
// appearing at the top without a reload (the first page's newest position, polled).
import { get } from './api.js';
import { announce, append, button, field, h, input, link, mono, notice, problemText, select, short, statusBadge, t, time } from './dom.js';

const FILTERS = ['status', 'funding_status', 'source_chain', 'destination_chain', 'sender', 'recipient',
  'session_id', 'metadata_key', 'metadata_value', 'created_after', 'created_before', 'order'];
const STATUSES = ['PENDING', 'FUNDED', 'INITIATED', 'COMPLETED', 'EXPIRED', 'REFUNDING', 'REFUNDED', 'CANCELLED'];
const FUNDING = ['NONE', 'UNDERFUNDED', 'EXACT', 'OVERFUNDED'];
const POLL_MS = 4000;

function row(p, href, fresh = false) {
  return h('tr', { class: fresh ? 'fresh' : null },
    h('td', {}, link(href(`/console/payments/${p.id}`), `#${p.id}`)),
    h('td', {}, time(p.created_at)),
    h('td', {}, statusBadge(p.intent_status)),
    h('td', {}, p.funding_status),
    h('td', { class: 'num' }, `${p.total_amount_in_asset_token} ${p.asset_token_symbol}`),
    h('td', {}, `${p.source_chain} → ${p.destination_chain}`),
    h('td', {}, mono(short(p.intent_address, 8), p.intent_address)));
}

export async function render(ctx) {
  const { root, mode, params, href, navigate, session } = ctx;
  const chains = session.chains.filter((c) => c.mode === mode).map((c) => [c.name, c.name]);
  const values = Object.fromEntries(FILTERS.map((f) => [f, params.get(f) || '']));
  const inputs = {
    status: select('status', [['', t('all')], ...STATUSES.map((s) => [s, t(`statuses.${s}`)])], values.status),
    funding_status: select('funding_status', [['', t('all')], ...FUNDING.map((s) => [s, s])], values.funding_status),
    source_chain: select('source_chain', [['', t('all')], ...chains], values.source_chain),
    destination_chain: select('destination_chain', [['', t('all')], ...chains], values.destination_chain),
    sender: input('sender', { value: values.sender, spellcheck: 'false' }),
    recipient: input('recipient', { value: values.recipient, spellcheck: 'false' }),
    session_id: input('session_id', { value: values.session_id }),
    metadata_key: input('metadata_key', { value: values.metadata_key }),
    metadata_value: input('metadata_value', { value: values.metadata_value }),
    created_after: input('created_after', { value: values.created_after, placeholder: '2026-01-31T00:00:00Z' }),
    created_before: input('created_before', { value: values.created_before, placeholder: '2026-02-01T00:00:00Z' }),
    order: select('order', [['desc', t('newestFirst')], ['asc', t('oldestFirst')]], values.order || 'desc'),
  };
  const labels = {
    status: t('fStatus'), funding_status: t('fFunding'), source_chain: t('fSource'), destination_chain: t('fDestination'),
    sender: t('fSender'), recipient: t('fRecipient'), session_id: t('fSession'), metadata_key: t('fMetaKey'),
    metadata_value: t('fMetaValue'), created_after: t('fAfter'), created_before: t('fBefore'), order: t('fOrder'),
  };
  const filters = h('form', { class: 'filters', 'aria-label': t('filters') },
    h('div', { class: 'filter-grid' }, FILTERS.map((f) => field(labels[f], inputs[f]))),
    h('div', { class: 'buttons' },
      h('button', { type: 'submit', class: 'primary' }, t('apply')),
      button(t('clear'), () => navigate(href('/console/payments')))));
  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    const chosen = Object.fromEntries(FILTERS.map((f) => [f, inputs[f].value.trim()]));
    if (chosen.order === 'desc') chosen.order = '';
    navigate(href('/console/payments', chosen));
  });
  const details = h('details', { class: 'filter-box', open: FILTERS.some((f) => values[f]) || null },
    h('summary', {}, t('filters')), filters);

  const note = notice();
  const body = h('tbody', {});
  const table = h('div', { class: 'table-wrap', role: 'region', 'aria-label': t('paymentsTitle'), tabindex: '0' },
    h('table', {},
      h('thead', {}, h('tr', {}, [t('colId'), t('colCreated'), t('colStatus'), t('colFunding'), t('colAmount'), t('colRoute'), t('colAddress')]
        .map((c) => h('th', { scope: 'col' }, c)))),
      body));
  const empty = h('p', { class: 'empty', hidden: true }, t('noPayments'));
  const more = button(t('more'), () => load(), { hidden: true });
  append(root, [h('h1', {}, t('paymentsTitle')), details, note.el, table, empty, more]);

  const query = { mode };
  for (const f of FILTERS) if (values[f]) query[f] = values[f];
  let cursor = null;
  let head = null;
  let stopped = false;

  async function load() {
    try {
      const { body: page } = await get('/payments', { ...query, cursor });
      for (const p of page.data) body.append(row(p, href));
      if (cursor === null) head = page.head_cursor ?? (page.data.length === 0 ? '' : null);
      cursor = page.next_cursor;
      more.hidden = !page.has_more;
      empty.hidden = body.children.length > 0;
    } catch (error) {
      note.show(problemText(error), 'error');
    }
  }

  async function poll() {
    if (stopped || head === null || (query.order && query.order !== 'desc')) return;
    try {
      const { body: page } = await get('/payments', { ...query, order: 'asc', cursor: head || null, limit: 100 });
      if (page.data.length) {
        for (const p of page.data) body.prepend(row(p, href, true));
        head = page.next_cursor || head;
        empty.hidden = true;
        announce(t('newPayments', { count: page.data.length }));
      }
    } catch { /* the next poll tries again */ }
  }

  await load();
  const timer = setInterval(poll, POLL_MS);
  return () => { stopped = true; clearInterval(timer); };
}
