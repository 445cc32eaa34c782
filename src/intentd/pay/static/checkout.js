// The checkout flow, one page for both embeddings: the hosted payment link
// (/pay/checkout#session=TOKEN) and the modal's frame (…&embed=1&origin=ORIGIN).
// Steps: amount (when the session leaves it open) -> source chain and token ->
// deposit address, QR code, countdown, live status -> an end state. Talks to
// intentd with the session token only; tells the embedding page by postMessage.
import { sessionApi, loadConfig } from './api.js';
import {
  chainLabel, clock, fromUnits, intentStatus, isAddress, paymentUri, shortAddress, toUnits,
} from './payment.js';
import { chooseStrings, format } from './strings.js';
import { applyTheme } from './theme.js';
import { copyButton, h, qrCode, trapFocus } from './view.js';

const POLL_MS = 2000;
const fragment = new URLSearchParams(window.location.hash.slice(1));
const query = new URLSearchParams(window.location.search);
const param = (name) => fragment.get(name) ?? query.get(name);
const token = param('session');
const embedded = param('embed') === '1' && window.parent !== window;
const parentOrigin = param('origin');
const excluded = (param('exclude') || '').split(',').filter(Boolean);
const { lang, table: T } = chooseStrings([param('lang'), ...(navigator.languages || [])]);
const say = (key, values) => format(T[key], values);
const app = document.getElementById('app');
const api = sessionApi(token);
const state = { config: null, session: null, amount: null, quotes: [], intent: null, timers: [] };

function tell(event, detail = {}) {
  if (embedded && parentOrigin) window.parent.postMessage({ type: 'intentd-pay', event, ...detail }, parentOrigin);
}

function stopTimers() {
  state.timers.forEach((id) => clearInterval(id));
  state.timers = [];
}

function show(screen, ...children) {
  const bar = embedded
    ? h('div', { class: 'bar' }, h('button', {
      type: 'button', class: 'close', 'aria-label': screen === 'done' ? T.close : T.cancel, onclick: () => leave(screen),
    }, '×'))
    : null;
  app.replaceChildren(...[bar, ...children].filter(Boolean));
  app.dataset.screen = screen;
  app.setAttribute('aria-busy', 'false');
  fit();
  const heading = app.querySelector('h1');
  if (heading) {
    heading.tabIndex = -1;
    heading.focus();
  }
}

// Tells the modal how tall the content is, so that its box fits it (up to the screen).
function fit() {
  if (embedded) tell('resize', { height: Math.ceil(app.getBoundingClientRect().height) });
}

function leave(screen) {
  stopTimers();
  tell(screen === 'done' ? 'close' : 'cancel');
}

function summary() {
  const { session } = state;
  const symbol = session.token.symbol;
  const values = {
    amount: state.amount ?? session.amount, symbol, chain: chainLabel(session.destinationChain),
    recipient: shortAddress(session.recipient),
  };
  const fixed = values.amount !== null;
  return [
    h('h1', {}, say(fixed ? 'headingPay' : 'headingPayOpen', values)),
    h('p', { class: 'lead' }, say(fixed ? 'recipientGets' : 'recipientGetsOpen', values)),
  ];
}

function failure(error, retry) {
  stopTimers();
  if (error.code === 'session_expired') return expired(null);
  const message = error.code === 'network' ? T.errorNetwork : error.message;
  tell('error', { error: { code: error.code, message } });
  show('error', h('h1', {}, T.headingError), h('p', { role: 'alert' }, message),
    retry ? h('button', { type: 'button', class: 'primary', onclick: retry }, T.tryAgain) : null);
}

function amountStep(refused = '') {
  const symbol = state.session.token.symbol;
  const error = h('p', { id: 'amount-error', class: 'error', role: 'alert' }, typeof refused === 'string' ? refused : '');
  const input = h('input', {
    id: 'amount', name: 'amount', inputmode: 'decimal', autocomplete: 'off', required: true,
    'aria-describedby': 'amount-hint amount-error', value: state.amount ?? '',
    'aria-invalid': typeof refused === 'string' && refused !== '' ? 'true' : null,
  });
  const form = h('form', { novalidate: true },
    h('label', { for: 'amount' }, say('amountLabel', { symbol })), input,
    h('p', { id: 'amount-hint', class: 'hint' }, T.amountHint), error,
    h('button', { type: 'submit', class: 'primary' }, T.showOptions));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const units = toUnits(input.value, state.session.token.decimals);
    if (units === null || units === 0n) {
      error.textContent = T.amountInvalid;
      input.setAttribute('aria-invalid', 'true');
      input.focus();
      return;
    }
    state.amount = fromUnits(units, state.session.token.decimals);
    loadQuotes();
  });
  show('amount', ...summary(), form);
}

async function loadQuotes() {
  const open = state.session.amount === null;
  try {
    state.quotes = (await api.quotes(open ? state.amount : null, excluded)).quotes;
  } catch (error) {
    if (open && error.status === 422) return amountStep(error.message);
    return failure(error, loadQuotes);
  }
  chooseStep();
}

function option(quote, index) {
  const symbol = quote.asset_token_symbol;
  const fees = fromUnits(
    toUnits(quote.fees_in_asset_token, quote.asset_token_decimals) + toUnits(quote.app_fee_in_asset_token, quote.asset_token_decimals),
    quote.asset_token_decimals,
  );
  const usd = (Number(quote.fees_in_usd) + Number(quote.app_fee_in_usd)).toFixed(2);
  const id = `option-${index}`;
  return h('div', { class: 'option' },
    h('input', { type: 'radio', name: 'route', id, value: String(index), 'aria-describedby': `${id}-detail` }),
    h('label', { for: id },
      h('span', { class: 'option-title' }, say('optionTitle', { symbol, chain: chainLabel(quote.source_chain) })),
      h('span', { class: 'option-detail', id: `${id}-detail` }, say('optionDetail', {
        total: quote.total_amount_in_asset_token, symbol, fees, usd, seconds: quote.estimated_seconds,
      }))));
}

function chooseStep() {
  const open = state.session.amount === null;
  const back = open ? h('button', { type: 'button', class: 'secondary', onclick: amountStep }, T.back) : null;
  if (state.quotes.length === 0) return show('choose', ...summary(), h('p', { role: 'alert' }, T.noOptions), back);
  const error = h('p', { id: 'choose-error', class: 'error', role: 'alert' });
  const refund = h('input', {
    id: 'refund', name: 'refund', autocomplete: 'off', spellcheck: 'false', required: true,
    'aria-describedby': 'refund-hint choose-error', placeholder: '0x…',
  });
  const form = h('form', { novalidate: true },
    h('fieldset', {}, h('legend', {}, T.chooseLegend), state.quotes.map(option)),
    h('label', { for: 'refund' }, T.refundLabel), refund,
    h('p', { id: 'refund-hint', class: 'hint' }, T.refundHint), error,
    h('div', { class: 'actions' }, back, h('button', { type: 'submit', class: 'primary' }, T.continue)));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const chosen = form.querySelector('input[name="route"]:checked');
    if (!chosen) {
      error.textContent = T.chooseInvalid;
      form.querySelector('input[name="route"]').focus();
      return;
    }
    if (!isAddress(refund.value)) {
      error.textContent = T.refundInvalid;
      refund.setAttribute('aria-invalid', 'true');
      refund.focus();
      return;
    }
    createIntent(state.quotes[Number(chosen.value)], refund.value.trim());
  });
  show('choose', ...summary(), form);
}

async function createIntent(quote, refundAddress) {
  const body = { source_chain: quote.source_chain, tokenIn: quote.tokenIn, refund_address: refundAddress };
  if (state.session.amount === null) body.amount = state.amount;
  const key = `${Date.now()}-${Math.random().toString(36).slice(2)}`;
  try {
    state.intent = await api.createIntent(body, key);
  } catch (error) {
    return failure(error, () => createIntent(quote, refundAddress));
  }
  payStep();
}

function payStep() {
  const intent = state.intent;
  const chain = state.config.chains[intent.source_chain];
  const symbol = intent.asset_token_symbol;
  const amount = intent.total_amount_in_asset_token;
  const uri = paymentUri({
    token: intent.tokenIn, to: intent.intent_address, chainId: chain.chain_id,
    units: toUnits(amount, intent.asset_token_decimals).toString(),
  });
  const status = h('p', { id: 'status', class: 'status', role: 'status', 'aria-live': 'polite' });
  const countdown = h('p', { class: 'countdown', role: 'timer', 'aria-live': 'off' });
  const made = chain.network === 'test'
    ? h('button', { type: 'button', class: 'secondary', onclick: () => paymentMade(made, status) }, T.paymentMade)
    : null;
  show('pay',
    h('h1', {}, say('headingSend', { amount, symbol })),
    h('p', { class: 'lead' }, say('sendOn', { chain: chainLabel(intent.source_chain), chainId: chain.chain_id })),
    h('div', { class: 'pay' },
      qrCode(uri, T.qrLabel),
      h('dl', {},
        h('dt', {}, T.addressLabel),
        h('dd', {}, h('code', { id: 'deposit-address' }, intent.intent_address), copyButton(intent.intent_address, T.copyAddress, T)),
        h('dt', {}, T.amountToSend),
        h('dd', {}, h('code', { id: 'deposit-amount' }, `${amount} ${symbol}`), copyButton(amount, T.copyAmount, T)))),
    h('p', {}, h('a', { href: uri, class: 'wallet' }, T.openWallet)),
    countdown, status,
    made ? h('p', { class: 'hint' }, T.testNetworkNote) : null,
    made);
  const tick = () => {
    const left = (Date.parse(intent.expires_at) - Date.now()) / 1000;
    countdown.textContent = say('expiresIn', { time: clock(left) });
    if (left <= 0) timeUp();
  };
  tick();
  state.timers.push(setInterval(tick, 1000), setInterval(() => poll(status), POLL_MS));
  update(intent, status);
}

async function poll(status) {
  try {
    update(await api.intent(state.intent.intent_address), status);
  } catch (error) {
    if (error.code === 'session_expired') timeUp();
  }
}

async function paymentMade(button, status) {
  button.disabled = true;
  status.textContent = T.checking;
  try {
    update((await api.paymentMade(state.intent.intent_address)).intent, status);
  } catch (error) {
    if (error.code === 'session_expired') return timeUp();
    status.textContent = error.message;
  } finally {
    button.disabled = false;
  }
}

function update(intent, status) {
  state.intent = intent;
  const view = intentStatus(intent);
  app.dataset.status = intent.intent_status;
  const text = say(view.key, view.values);
  if (status.textContent !== text) status.textContent = text;
  if (view.end === 'done') done();
  else if (view.end === 'expired') expired(intent);
  else if (view.end === 'cancelled') cancelled();
  else if (view.end === 'refund') refunded(intent);
}

function timeUp() {
  stopTimers();
  expired(state.intent);
}

function done() {
  stopTimers();
  const intent = state.intent;
  tell('success', { intent });
  show('done', h('h1', {}, T.headingDone),
    h('p', { role: 'status' }, say('doneDetail', {
      recipient: shortAddress(intent.recipient), amount: state.amount ?? state.session.amount,
      symbol: state.session.token.symbol, chain: chainLabel(intent.destination_chain),
    })),
    excess(intent) ? h('p', {}, say('doneExcess', {
      excess: excess(intent), symbol: intent.asset_token_symbol, refund: intent.refund_address,
    })) : null,
    intent.tx_hash ? h('p', { class: 'hint' }, T.transaction, h('code', { class: 'block' }, intent.tx_hash)) : null,
    embedded ? h('button', { type: 'button', class: 'primary', onclick: () => leave('done') }, T.close) : null);
}

function excess(intent) {
  const decimals = intent.asset_token_decimals;
  const extra = toUnits(intent.amount_received, decimals) - toUnits(intent.total_amount_in_asset_token, decimals);
  return extra > 0n ? fromUnits(extra, decimals) : null;
}

function expired(intent) {
  stopTimers();
  const partial = intent && toUnits(intent.amount_received, intent.asset_token_decimals) > 0n;
  tell('expired');
  show('expired', h('h1', {}, T.headingExpired),
    h('p', { role: 'alert' }, partial
      ? say('expiredPartial', { received: intent.amount_received, symbol: intent.asset_token_symbol, refund: intent.refund_address })
      : T.expiredDetail),
    embedded
      ? h('button', { type: 'button', class: 'primary', onclick: () => tell('restart') }, T.startAgain)
      : h('p', {}, T.expiredLink));
}

function cancelled() {
  stopTimers();
  tell('cancelled');
  show('cancelled', h('h1', {}, T.headingCancelled),
    h('p', { role: 'alert' }, T.cancelledDetail),
    embedded
      ? h('button', { type: 'button', class: 'primary', onclick: () => tell('restart') }, T.startAgain)
      : h('p', {}, T.expiredLink));
}

function refunded(intent) {
  stopTimers();
  tell('error', { error: { code: 'refunded', message: say('refundDetail', { refund: intent.refund_address }) } });
  show('refund', h('h1', {}, T.headingRefund),
    h('p', { role: 'alert' }, say(intent.intent_status === 'REFUNDED' ? 'statusRefunded' : 'refundDetail', { refund: intent.refund_address })));
}

async function start() {
  document.documentElement.lang = lang;
  document.title = T.pageTitle;
  applyTheme(param('theme'), param('accent'));
  if (embedded) {
    trapFocus(document.body);
    new ResizeObserver(fit).observe(app);
  }
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && embedded) leave(app.dataset.screen);
  });
  if (!token) return failure({ code: 'no_session', message: T.errorNoSession }, null);
  app.replaceChildren(h('p', { role: 'status' }, T.loading));
  try {
    [state.config, state.session] = await Promise.all([loadConfig(), api.session()]);
  } catch (error) {
    return failure(error, start);
  }
  tell('ready');
  if (state.session.amount === null) amountStep();
  else loadQuotes();
}

start();
