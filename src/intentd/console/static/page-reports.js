// Reports: the CSV exports of a date range (downloaded as they stream, never held in
// the page) and the reconciliation of the payments that ended in it: totals, every
// mismatch, or "Reconciled". Dates are whole UTC days; the range is [from, to + 1 day).
import { get, query } from './api.js';
import { append, clear, field, h, input, link, mono, problemText, section, short, t, table } from './dom.js';

const DAY = 86400000;
const EXPORTS = ['payments', 'deposits', 'refunds', 'fees', 'gas'];
const LEDGER = ['received', 'relayer_repaid', 'fees_swept', 'refunded', 'gas_from_amount', 'retained', 'held'];

const isoDay = (ms) => new Date(ms).toISOString().slice(0, 10);
// A day as text that a narrow screen never breaks at its hyphens (U+2011).
const keep = (day) => day.replace(/-/g, '\u2011');
const dayMs = (text) => (/^\d{4}-\d{2}-\d{2}$/.test(text || '') ? Date.parse(`${text}T00:00:00Z`) : NaN);

// Base units (a decimal string) in whole units, exactly (BigInt: amounts exceed doubles).
export function units(base, decimals) {
  if (decimals === null || decimals === undefined) return t('reports.baseUnits', { amount: base });
  const negative = base.startsWith('-');
  const digits = (negative ? base.slice(1) : base).padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  return `${negative ? '-' : ''}${BigInt(whole).toString()}${fraction ? `.${fraction}` : ''}`;
}

// The range the page shows: from the address, else this month (UTC) so far.
function chosenRange(params, maxDays) {
  const now = Date.now();
  const today = isoDay(now);
  const from = params.get('from') || `${today.slice(0, 8)}01`;
  const to = params.get('to') || today;
  const start = dayMs(from);
  const last = dayMs(to);
  let problem = null;
  if (Number.isNaN(start) || Number.isNaN(last)) problem = t('reports.badDate');
  else if (last < start) problem = t('errors.range_reversed');
  else if ((last - start) / DAY + 1 > maxDays) problem = t('reports.tooLong', { days: maxDays });
  const range = problem ? null : { from: `${from}T00:00:00Z`, to: `${isoDay(last + DAY)}T00:00:00Z` };
  return { from, to, range, problem };
}

function token(row) {
  return row.symbol || mono(short(row.token, 6), row.token);
}

function reconciliationView(report, href) {
  const byStatus = Object.entries(report.by_status).map(([s, n]) => `${n} ${t(`statuses.${s}`)}`).join(', ');
  const verdict = report.reconciled
    ? h('p', { class: 'verdict verdict-ok', role: 'status' }, h('strong', {}, t('reports.reconciled')), ' ',
      t('reports.reconciledText', { count: report.intents }))
    : h('p', { class: 'verdict verdict-bad', role: 'alert' }, h('strong', {}, t('reports.mismatched', {
      count: report.mismatches.length, intents: report.intents_with_mismatches })), ' ',
    t('reports.mismatchedText', { count: report.intents }));
  const agrees = (yes) => (yes ? t('yes') : h('strong', { class: 'bad' }, t('no')));
  // whether a line agrees comes first: a wide table scrolls sideways on a narrow screen
  const totals = report.totals.map((r) => [r.chain, token(r), agrees(r.balanced),
    ...LEDGER.map((f) => h('span', { class: 'num' }, units(r[f], r.decimals)))]);
  const recipients = report.recipients.map((r) => [r.chain, token(r), agrees(r.due === r.got),
    h('span', { class: 'num' }, units(r.due, r.decimals)), h('span', { class: 'num' }, units(r.got, r.decimals))]);
  // a mismatch names its token by address: its symbol, where the totals name it
  const symbols = new Map([...report.totals, ...report.recipients].filter((r) => r.symbol)
    .map((r) => [`${r.chain} ${r.token}`, r.symbol]));
  const mismatches = report.mismatches.map((m) => [link(href(`/console/payments/${m.intent_id}`), `#${m.intent_id}`),
    t(`statuses.${m.status}`), m.check, m.chain, symbols.get(`${m.chain} ${m.token}`) || mono(short(m.token, 6), m.token),
    h('span', { class: 'num' }, m.expected ?? t('dash')), h('span', { class: 'num' }, m.found ?? t('dash')),
    h('span', { class: 'detail' }, m.detail)]);
  return [
    verdict,
    byStatus ? h('p', {}, t('reports.byStatus', { counts: byStatus })) : null,
    h('h3', {}, t('reports.mismatchesTitle')),
    table(t('reports.mismatchesTitle'), [t('colPayment'), t('colStatus'), t('reports.colCheck'), t('colChain'),
      t('colToken'), t('reports.colExpected'), t('reports.colFound'), t('colDetail')], mismatches, t('reports.noMismatches')),
    h('h3', {}, t('reports.totalsTitle')),
    table(t('reports.totalsTitle'), [t('colChain'), t('colToken'), t('reports.colBalanced'),
      ...LEDGER.map((f) => t(`reports.ledger.${f}`))], totals, t('reports.nothingEnded')),
    h('h3', {}, t('reports.recipientsTitle')),
    table(t('reports.recipientsTitle'), [t('colChain'), t('colToken'), t('reports.colBalanced'), t('reports.colDue'),
      t('reports.colGot')], recipients, t('reports.nothingEnded')),
  ];
}

export async function render(ctx) {
  const { root, mode, params, href, navigate } = ctx;
  const { body: offer } = await get('/reports', { mode });
  const { from, to, range, problem } = chosenRange(params, offer.max_range_days);
  const fromInput = input('from', { type: 'date', value: from, required: true });
  const toInput = input('to', { type: 'date', value: to, required: true });
  const form = h('form', { class: 'inline range' },
    field(t('reports.from'), fromInput), field(t('reports.to'), toInput),
    h('button', { type: 'submit', class: 'primary' }, t('reports.show')));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    navigate(href('/console/reports', { from: fromInput.value, to: toInput.value }));
  });
  append(root, [h('h1', {}, t('reportsTitle')), h('p', {}, t(`reports.intro.${mode}`)), form]);
  if (problem) {
    root.append(h('p', { class: 'notice notice-error', role: 'alert' }, problem));
    return;
  }
  const days = { from: keep(from), to: keep(to) };
  const file = (path, extra = {}) => `/console/api/reports/${path}${query({ mode, from: range.from, to: range.to, ...extra })}`;
  const exports = h('ul', { class: 'exports' }, offer.exports.filter((e) => EXPORTS.includes(e)).map((e) => h('li', {},
    h('a', { class: 'button', href: file(e), download: '' }, t('reports.download', { name: t(`reports.exports.${e}`) })),
    h('span', {}, t(`reports.exportText.${e}`)))));
  const holder = h('div', { 'aria-live': 'polite' }, h('p', { role: 'status' }, t('reports.reconciling')));
  append(root, [
    section(t('reports.exportsTitle'), h('p', {}, t('reports.exportsText', days)), exports),
    section(t('reports.reconciliationTitle'), h('p', {}, t('reports.reconciliationText', days)),
      h('p', {}, h('a', { class: 'button', href: file('reconciliation', { format: 'csv' }), download: '' },
        t('reports.downloadReconciliation'))),
      holder),
  ]);
  try {
    const { body: report } = await get('/reports/reconciliation', { mode, from: range.from, to: range.to });
    clear(holder);
    append(holder, reconciliationView(report, href));
  } catch (error) {
    clear(holder);
    holder.append(h('p', { class: 'notice notice-error', role: 'alert' }, problemText(error)));
  }
}
