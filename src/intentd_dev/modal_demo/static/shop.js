// The demo merchant page: open intentd's payment modal for a product.
const intentd = document.documentElement.dataset.intentd || 'http://127.0.0.1:8080';
const { openPayment } = await import(`${intentd}/pay/modal.js`);
const result = document.getElementById('result');

for (const button of document.querySelectorAll('[data-product]')) {
  button.addEventListener('click', () => {
    result.textContent = '';
    openPayment({
      session_url: `/session?product=${button.dataset.product}`,
      excludeChains: button.dataset.exclude ? button.dataset.exclude.split(',') : [],
      onSuccess: (intent) => {
        result.textContent = `Paid: intent ${intent.id}, ${intent.intent_status}.`;
        window.lastPayment = intent;
      },
      onCancel: () => { result.textContent = 'Payment cancelled.'; },
      onError: (error) => { result.textContent = `Payment error: ${error.code}: ${error.message}`; },
    });
  });
}

const wallet = await (await fetch('/wallet')).json();
const details = document.getElementById('wallet-details');
const row = (name, value) => {
  const dt = document.createElement('dt');
  const dd = document.createElement('dd');
  dt.textContent = name;
  dd.textContent = value;
  details.append(dt, dd);
};
row('Address', wallet.address);
row('Private key', wallet.private_key);
const chainSelect = document.getElementById('dev-chain');
const tokenSelect = document.getElementById('dev-token');
for (const chain of wallet.chains) {
  row(`${chain.name}`, `chain id ${chain.chain_id}, RPC ${chain.rpc_url}`);
  for (const token of chain.tokens) row(`  ${token.symbol} on ${chain.name}`, `${token.address}, balance ${token.balance}`);
  chainSelect.append(new Option(chain.name, chain.name));
}
const fillTokens = () => {
  const chain = wallet.chains.find((c) => c.name === chainSelect.value);
  tokenSelect.replaceChildren(...chain.tokens.map((t) => new Option(t.symbol, t.address)));
};
chainSelect.addEventListener('change', fillTokens);
fillTokens();
document.getElementById('dev-pay-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const out = document.getElementById('dev-pay-result');
  out.textContent = 'Sending…';
  const body = Object.fromEntries(new FormData(event.target));
  const answer = await fetch('/dev-pay', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const data = await answer.json();
  out.textContent = answer.ok ? `Sent: ${data.tx_hash}` : `Failed: ${data.error}`;
});
