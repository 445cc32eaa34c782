// Why a payment waits, as a sentence of the strings table.
import { t } from './dom.js';

export function reasonText(why) {
  const params = { ...why.params };
  for (const key of ['until']) {
    if (params[key]) params[key] = new Date(params[key]).toISOString().replace('T', ' ').slice(0, 16) + ' UTC';
  }
  return t(`reasons.${why.reason}`, params);
}
