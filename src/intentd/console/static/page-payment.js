// One payment: why it waits, cancel and refund (a confirmation that states the
// amounts), a pending approval, the record, the event timeline, deposits with explorer
// links, our transactions (status, gas, fee), and the webhook deliveries of its events.
import { get, post } from './api.js';
import {
  append, busy, button, clear, confirmDialog, definitionList, external, h, mono, notice, problemText,
  section, short, statusBadge, t, table, time,
} from './dom.js';
import { reasonText } from './reasons.js';

const TERMINAL = new Set(['COMPLETED', 'EXPIRED', 'REFUNDED', 'CANCELLED']);
const POLL_MS = 4000;
const RECORD_FIELDS = ['intent_status', 'funding_status', 'total_amount_in_asset_token', 'amount_received',
  'asset_token_symbol', 'total_amount_in_usd', 'fees_in_asset_token', 'source_chain', 'destination_chain',
  'intent_address', 'recipient', 'refund_address', 'sender', 'created_at', 'expires_at', 'tx_hash', 'session_id', 'metadata'];

const AMOUNTS = new Set(['total_amount_in_asset_token', 'amount_received', 'fees_in_asset_token']);

function recordValue(name, value, record, explorers) {
  if (value === null || value === undefined || value === '') return t('dash');
  if (AMOUNTS.has(name)) return `${value} ${record.asset_token_symbol}`;
  if (name === 'total_amount_in_usd') return `$${value}`;
  if (explorers[name]) return external(explorers[name], value);
  if (name.endsWith('_at')) return time(value);
  if (name === 'metadata') return mono(JSON.stringify(value));
  if (name === 'intent_status') return statusBadge(value);
  if (typeof value === 'string' && value.startsWith('0x')) return mono(value);
  return String(value);
}

function commandsBlock(ctx, detail, refresh, flash) {
  const { session, mode } = ctx;
  const note = flash;
  const id = detail.record.id;
  const may = new Set(session.permissions);
  const offers = [];
  for (const [name, permission, label] of [['cancel', 'payments.cancel', t('cancelPayment')], ['refund', 'payments.refund', t('refundPayment')]]) {
    const offer = detail.commands[name];
    if (!offer.allowed || !may.has(permission) || detail.approval) continue;
    const action = button(label, async () => {
      const lines = [t(name === 'cancel' ? 'confirmCancel' : 'confirmRefund',
        { id, amount: offer.refund_amount, symbol: offer.symbol, to: offer.refund_to })];
      if (offer.needs_approval) lines.push(t('confirmApproval', { usd: offer.usd ?? '?' }));
      const ok = await confirmDialog({
        title: label,
        lines,
        confirm: name === 'cancel' ? t('confirmButtonCancel') : t('confirmButtonRefund', { amount: offer.refund_amount, symbol: offer.symbol }),
        danger: true,
      });
      if (!ok) { action.focus(); return; }
      await busy(action, note, async () => {
        const answer = await post(`/payments/${id}/${name}`, { refund_base_units: offer.refund_base_units }, { mode });
        note.show(answer.status === 202 ? t('waitingApproval') : t(name === 'cancel' ? 'doneCancel' : 'doneRefund'), 'info');
        await refresh(true);
      });
    }, { class: 'danger' });
    offers.push(action);
  }
  if (!offers.length) return null;
  return section(t('actionsTitle'), h('div', { class: 'buttons' }, offers));
}

function approvalBlock(ctx, approval, refresh, flash) {
  if (!approval) return null;
  const note = flash;
  const may = ctx.session.permissions.includes('refunds.approve');
  const own = approval.requested_by === ctx.session.user.email;
  const buttons = [];
  if (may && !own) {
    const yes = button(t('approve'), () => busy(yes, note, async () => {
      const ok = await confirmDialog({
        title: t('approve'),
        lines: [t('confirmApprove', { amount: approval.amount, symbol: approval.asset_token_symbol, usd: approval.amount_usd ?? '?', intent: approval.intent_id })],
        confirm: t('approve'),
        danger: true,
      });
      if (!ok) return;
      await post(`/approvals/${approval.id}/approve`);
      note.show(t('approved'));
      await refresh(true);
    }), { class: 'danger' });
    buttons.push(yes);
  }
  if (may || own) {
    const no = button(own ? t('withdraw') : t('reject'), () => busy(no, note, async () => {
      await post(`/approvals/${approval.id}/reject`);
      note.show(t('rejected'));
      await refresh(true);
    }));
    buttons.push(no);
  }
  return section(t('approvalTitle'), definitionList([
    [t('colCommand'), t(`commands.${approval.command}`)],
    [t('colAmount'), `${approval.amount} ${approval.asset_token_symbol} (≈ $${approval.amount_usd ?? '?'})`],
    [t('colRequestedBy'), approval.requested_by],
    [t('colRequestedAt'), time(approval.requested_at)],
    [t('colExpires'), time(approval.expires_at)],
  ]), h('div', { class: 'buttons' }, buttons));
}

function view(ctx, detail, refresh, flash) {
  const r = detail.record;
  const whys = detail.waiting;
  const why = whys.length
    ? h('ul', { class: 'reasons', id: 'why' }, whys.map((w) => h('li', { 'data-reason': w.reason }, reasonText(w))))
    : h('p', { class: 'empty', id: 'why' }, t('whyNothing'));
  const events = table(t('timelineTitle'), [t('colSequence'), t('colTime'), t('colEvent'), t('colStatus')],
    detail.events.map((e) => [String(e.sequence), time(e.created_at), e.type, statusBadge(e.intent.intent_status)]));
  const deposits = table(t('depositsTitle'), [t('colTx'), t('colChain'), t('colBlock'), t('colFrom'), t('colAmount'), t('colOutcome')],
    detail.deposits.map((d) => [external(d.explorer, short(d.tx_hash)), d.chain, String(d.block_number), mono(short(d.from, 6), d.from),
      `${d.amount} ${d.symbol ?? ''}`, [d.disposition, d.reason ? ` (${d.reason})` : '', d.held_by_reorg ? ` · ${t('heldByReorg')}` : '']]));
  const txRows = detail.actions.flatMap((a) => (a.transactions.length ? a.transactions : [null]).map((tx) => [
    [a.kind, a.reason ? ` (${a.reason})` : '', tx && tx.purpose !== 'transfer' ? h('small', {}, ` · ${tx.purpose}`) : null],
    a.chain, `${a.amount} ${a.symbol ?? ''}`, a.status,
    tx ? external(tx.explorer, short(tx.tx_hash)) : t('dash'), tx ? tx.status : t('dash'),
    tx && tx.gas_used !== null ? String(tx.gas_used) : t('dash'), tx && tx.gas_price_gwei ? tx.gas_price_gwei : t('dash'),
    tx && tx.fee.amount ? `${tx.fee.amount} ${tx.fee.symbol}` : t('dash')]));
  const transactions = table(t('transactionsTitle'), [t('colKind'), t('colChain'), t('colAmount'), t('colActionStatus'), t('colTx'),
    t('colTxStatus'), t('colGas'), t('colGasPrice'), t('colFee')], txRows);
  const deliveries = detail.deliveries.length ? h('ul', { class: 'deliveries' }, detail.deliveries.map((d) => h('li', {},
    h('div', { class: 'line' }, h('strong', {}, `${d.event_type} #${d.sequence}`), ` → ${d.url} · ${d.status} · ${t('colAttempts')}: ${d.attempts}`),
    table(`${t('attemptsTitle')} ${d.id}`, [t('colTime'), t('colStatus'), t('colLatency'), t('colOutcome'), t('colResponse')],
      d.tries.map((a) => [time(a.attempted_at), a.status_code === null ? (a.error || t('dash')) : String(a.status_code),
        `${a.latency_ms} ms`, a.outcome, mono(short(a.response, 30), a.response)]))))) : h('p', { class: 'empty' }, t('none'));
  return [
    h('h1', {}, t('paymentTitle', { id: r.id }), ' ', statusBadge(r.intent_status)),
    flash.el,
    section(t('whyTitle'), why),
    approvalBlock(ctx, detail.approval, refresh, flash),
    commandsBlock(ctx, detail, refresh, flash),
    section(t('recordTitle'), definitionList(RECORD_FIELDS.map((f) => [t(`fields.${f}`), recordValue(f, r[f], r, detail.explorer)]))),
    section(t('timelineTitle'), events),
    section(t('depositsTitle'), deposits),
    section(t('transactionsTitle'), transactions),
    section(t('deliveriesTitle'), deliveries),
  ];
}

export async function render(ctx) {
  const { root, mode, match } = ctx;
  const id = match[1];
  const holder = h('div', {});
  const problem = notice();
  const flash = notice();
  append(root, [problem.el, holder]);
  let last = '';
  let stopped = false;
  async function refresh(force = false) {
    try {
      const { body } = await get(`/payments/${id}`, { mode });
      const mark = JSON.stringify([body.record.intent_status, body.record.amount_received, body.events.length,
        body.waiting, body.approval && body.approval.status, body.actions.map((a) => [a.status, a.transactions.length]),
        body.deliveries.map((d) => [d.status, d.attempts])]);
      if (!force && mark === last) return body;
      last = mark;
      const focused = document.activeElement && document.activeElement.closest('main') ? null : document.activeElement;
      clear(holder);
      append(holder, view(ctx, body, refresh, flash));
      if (focused) focused.focus?.();
      return body;
    } catch (error) {
      problem.show(problemText(error), 'error');
      return null;
    }
  }
  const first = await refresh(true);
  const timer = setInterval(async () => {
    if (stopped) return;
    const body = await refresh();
    if (body && TERMINAL.has(body.record.intent_status) && !body.deliveries.some((d) => d.status === 'pending')) clearInterval(timer);
  }, POLL_MS);
  if (!first) clearInterval(timer);
  return () => { stopped = true; clearInterval(timer); };
}
