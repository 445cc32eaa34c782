// Overview: volume by chain and token (today, 30 days), counts by status, and the
// payments that need attention, each with why.
import { get } from './api.js';
import { append, h, link, section, statusBadge, t, table, time } from './dom.js';
import { reasonText } from './reasons.js';

function volume(title, rows) {
  return section(title, table(title, [t('colChain'), t('colToken'), t('colCount'), t('colAmount'), t('colUsd')],
    rows.map((r) => [r.chain, r.symbol, String(r.count), `${r.amount} ${r.symbol}`, `$${r.usd}`])));
}

function counts(title, byStatus) {
  const entries = Object.entries(byStatus).sort(([a], [b]) => a.localeCompare(b));
  return section(title, entries.length
    ? h('ul', { class: 'counts' }, entries.map(([status, n]) => h('li', {}, statusBadge(status), h('strong', {}, String(n)))))
    : h('p', { class: 'empty' }, t('none')));
}

export async function render(ctx) {
  const { root, mode, href } = ctx;
  const { body } = await get('/overview', { mode });
  const attention = body.attention.length
    ? h('ul', { class: 'attention' }, body.attention.map((p) => h('li', {},
      h('div', { class: 'line' }, link(href(`/console/payments/${p.id}`), `#${p.id}`), ' ', statusBadge(p.status),
        ` ${p.amount} ${p.symbol} · ${p.source_chain} · `, time(p.updated_at)),
      h('ul', { class: 'reasons' }, p.reasons.map((r) => h('li', {}, reasonText(r)))))))
    : h('p', { class: 'empty' }, t('attentionNone'));
  append(root, [
    h('h1', {}, t('overviewTitle')),
    body.approvals_pending ? h('p', { class: 'notice notice-warn' }, t('approvalsWaiting', { count: body.approvals_pending }), ' ',
      link(href('/console/approvals'), t('seeApprovals'))) : null,
    h('div', { class: 'grid' }, volume(t('volumeToday'), body.today), volume(t('volume30'), body.days30)),
    h('div', { class: 'grid' }, counts(t('statusNow'), body.live), counts(t('statusEnded'), body.ended30)),
    section(t('attentionTitle'), attention),
  ]);
}
