// The checkout's calls to intentd, same-origin, with the session token only
// (docs/api.md, Sessions). Problems become ApiError with the API's stable code.

export class ApiError extends Error {
  constructor(status, code, detail) {
    super(detail || code);
    this.status = status;
    this.code = code;
  }
}

export function sessionApi(token) {
  const base = new URL('../api/v1/', window.location.href);
  async function call(method, path, { body, headers = {}, params } = {}) {
    const url = new URL(path, base);
    for (const [name, value] of params || []) url.searchParams.append(name, value);
    let response;
    try {
      response = await fetch(url, {
        method,
        headers: {
          Authorization: `Bearer ${token}`,
          Accept: 'application/json',
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: 'no-store',
        credentials: 'omit',
      });
    } catch {
      throw new ApiError(0, 'network', 'network');
    }
    const data = await response.json().catch(() => null);
    if (!response.ok) {
      throw new ApiError(response.status, data?.code || 'http_error', data?.detail || response.statusText);
    }
    return data;
  }
  return {
    session: () => call('GET', 'session'),
    quotes: (amount, exclude) => call('GET', 'session/quotes', {
      params: [
        ...(amount === null ? [] : [['amount', amount]]),
        ...exclude.map((name) => ['excludeChains', name]),
      ],
    }),
    createIntent: (body, key) => call('POST', 'session/intents', { body, headers: { 'Idempotency-Key': key } }),
    intent: (address) => call('GET', `session/intents/${address}`),
    paymentMade: (address) => call('POST', `session/intents/${address}/payment-made`),
  };
}

export async function loadConfig() {
  const response = await fetch(new URL('config.json', window.location.href), { cache: 'no-store' });
  if (!response.ok) throw new ApiError(response.status, 'config', 'config');
  return response.json();
}
