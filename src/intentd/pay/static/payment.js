// Pure helpers of the checkout: decimal amounts as exact integers, the EIP-681
// payment URI, and what an intent record means to the payer. No DOM, no network.

export const NATIVE = '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee';

export function toUnits(text, decimals) {
  const match = /^\s*(\d+)(?:\.(\d*))?\s*$/.exec(String(text));
  if (!match) return null;
  const fraction = (match[2] || '').replace(/0+$/, '');
  if (fraction.length > decimals) return null;
  return BigInt(match[1] + fraction.padEnd(decimals, '0'));
}

export function fromUnits(units, decimals) {
  const digits = units.toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole;
}

export function isAddress(text) {
  return /^0x[0-9a-fA-F]{40}$/.test(String(text).trim());
}

// EIP-681: native value to the address, or an ERC-20 transfer call on the token.
export function paymentUri({ token, to, chainId, units }) {
  if (token.toLowerCase() === NATIVE) return `ethereum:${to}@${chainId}?value=${units}`;
  return `ethereum:${token}@${chainId}/transfer?address=${to}&uint256=${units}`;
}

const FINAL = new Set(['COMPLETED', 'EXPIRED', 'REFUNDED', 'CANCELLED']);

// What the payer should be told about an intent: a strings key, its values, and
// whether the flow is over ("done", "expired", "cancelled", "refund") or still going (null).
export function intentStatus(intent) {
  const decimals = intent.asset_token_decimals;
  const total = toUnits(intent.total_amount_in_asset_token, decimals);
  const received = toUnits(intent.amount_received, decimals);
  const values = {
    symbol: intent.asset_token_symbol,
    received: intent.amount_received,
    refund: intent.refund_address,
  };
  const status = intent.intent_status;
  if (status === 'COMPLETED') return { key: 'statusDone', values, end: 'done' };
  if (status === 'INITIATED') return { key: 'statusSent', values, end: null };
  if (status === 'REFUNDED') return { key: 'statusRefunded', values, end: 'refund' };
  if (status === 'REFUNDING') return { key: 'statusRefunding', values, end: 'refund' };
  if (status === 'EXPIRED') return { key: 'statusWaiting', values, end: 'expired' };
  if (status === 'CANCELLED') return { key: 'statusWaiting', values, end: 'cancelled' };
  if (received > total) {
    return { key: 'statusOver', values: { ...values, excess: fromUnits(received - total, decimals) }, end: null };
  }
  if (status === 'FUNDED') return { key: 'statusFunded', values, end: null };
  if (received > 0n) {
    return { key: 'statusPartial', values: { ...values, missing: fromUnits(total - received, decimals) }, end: null };
  }
  return { key: 'statusWaiting', values, end: null };
}

export function isFinal(intent) {
  return FINAL.has(intent.intent_status);
}

export function clock(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const pad = (n) => String(n).padStart(2, '0');
  return h ? `${h}:${pad(m)}:${pad(s % 60)}` : `${m}:${pad(s % 60)}`;
}

export function chainLabel(name) {
  return name.toLowerCase().split('_').map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join(' ');
}

export function shortAddress(address) {
  return `${address.slice(0, 6)}…${address.slice(-4)}`;
}
