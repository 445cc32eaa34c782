// Refund approvals: the pending ones (approve, reject) and the decided ones.
import { get, post } from './api.js';
import { append, busy, button, clear, confirmDialog, h, link, notice, select, t, table, time } from './dom.js';

export async function render(ctx) {
  const { root, mode, href, session, params, navigate } = ctx;
  const status = params.get('status') || 'pending';
  const note = notice();
  const holder = h('div', {});
  const filter = select('status', [['pending', t('approvalsPending')], ['', t('approvalsAll')]], status, { 'aria-label': t('colStatus') });
  filter.addEventListener('change', () => navigate(href('/console/approvals', { status: filter.value || 'all' })));
  append(root, [h('h1', {}, t('approvalsTitle')), h('div', { class: 'toolbar' }, filter), note.el, holder]);
  const may = session.permissions.includes('refunds.approve');

  async function load() {
    const { body } = await get('/approvals', { mode, status: status === 'all' ? '' : status });
    clear(holder);
    holder.append(table(t('approvalsTitle'),
      [t('colId'), t('colCommand'), t('colAmount'), t('colRequestedBy'), t('colRequestedAt'), t('colExpires'), t('colStatus'), t('colDecidedBy'), t('actionsTitle')],
      body.data.map((a) => {
        const actions = [];
        if (a.status === 'pending' && may && a.requested_by !== session.user.email) {
          const yes = button(t('approve'), () => busy(yes, note, async () => {
            const ok = await confirmDialog({
              title: t('approve'),
              lines: [t('confirmApprove', { amount: a.amount, symbol: a.asset_token_symbol, usd: a.amount_usd ?? '?', intent: a.intent_id })],
              confirm: t('approve'),
              danger: true,
            });
            if (!ok) return;
            await post(`/approvals/${a.id}/approve`);
            note.show(t('approved'));
            await load();
          }), { class: 'danger' });
          actions.push(yes);
        }
        if (a.status === 'pending' && (may || a.requested_by === session.user.email)) {
          const no = button(a.requested_by === session.user.email ? t('withdraw') : t('reject'), () => busy(no, note, async () => {
            await post(`/approvals/${a.id}/reject`);
            note.show(t('rejected'));
            await load();
          }));
          actions.push(no);
        }
        return [link(href(`/console/payments/${a.intent_id}`), `#${a.intent_id}`), t(`commands.${a.command}`),
          `${a.amount} ${a.asset_token_symbol} (≈ $${a.amount_usd ?? '?'})`, a.requested_by, time(a.requested_at),
          time(a.expires_at), t(`approvalStatus.${a.status}`), a.decided_by || t('dash'), h('div', { class: 'buttons' }, actions)];
      }), t('noApprovals')));
  }
  await load();
}
