/**
 * Where intentd is: the base URL of the deployment whose `/pay/checkout` the modal
 * shows. A `<PaymentModal intentdUrl>` (or a hook's `intentdUrl` option) wins over
 * the default set with `configure`. Module state only; nothing runs at import.
 */

let defaultUrl: string | null = null;

export interface IntentdConfig {
  /** intentd's base URL, e.g. "https://pay.example.com" (a path prefix is kept). */
  intentdUrl: string;
}

/** Sets the intentd base URL every modal uses unless given its own. */
export function configure(config: IntentdConfig): void {
  defaultUrl = checkoutBase(config.intentdUrl).base;
}

/** The checkout's address and origin for an intentd base URL; throws on a bad URL. */
export function checkoutBase(intentdUrl: string): { base: string; origin: string } {
  const url = new URL(intentdUrl.endsWith("/") ? intentdUrl : `${intentdUrl}/`);
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new TypeError(`intentdUrl must be an http(s) URL, not ${url.protocol}`);
  }
  url.search = "";
  url.hash = "";
  return { base: url.href, origin: url.origin };
}

/** The base URL to use: the one given, else the configured default, else null. */
export function resolveIntentdUrl(given: string | undefined): string | null {
  return given ?? defaultUrl;
}
