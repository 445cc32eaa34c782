// DOM building without innerHTML (nothing the server or a user typed is ever parsed
// as HTML), the strings table, formatting, tables, notices and confirmation dialogs.
import { STRINGS } from './strings.js';

const T = STRINGS.en;

// The text of `key` (a dotted path into the table), with {name} replaced from `params`.
export function t(key, params = {}) {
  let value = key.split('.').reduce((node, part) => (node ? node[part] : undefined), T);
  if (typeof value !== 'string') value = key;
  return value.replace(/\{(\w+)\}/g, (_, name) => (name in params ? String(params[name]) : `{${name}}`));
}

export function has(key) {
  return typeof key.split('.').reduce((node, part) => (node ? node[part] : undefined), T) === 'string';
}

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (name === 'class') el.className = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

// A polite live region: says something to screen readers without moving focus.
export function announce(text) {
  let region = document.getElementById('announcer');
  if (!region) {
    region = h('div', { id: 'announcer', class: 'offscreen', 'aria-live': 'polite' });
    document.body.append(region);
  }
  region.textContent = '';
  setTimeout(() => { region.textContent = text; }, 50);
}

export function time(iso) {
  if (!iso) return t('dash');
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return h('time', { datetime: iso, title: iso }, d.toISOString().replace('T', ' ').slice(0, 19) + ' UTC');
}

export function short(text, keep = 10) {
  if (!text) return t('dash');
  return text.length > keep * 2 + 1 ? `${text.slice(0, keep)}…${text.slice(-6)}` : text;
}

export function mono(text, full = text) {
  return h('code', { title: full }, text);
}

export function link(href, label, attrs = {}) {
  return h('a', { href, ...attrs }, label);
}

export function external(href, label) {
  if (!href) return mono(label);
  return h('a', { href, rel: 'noopener noreferrer', target: '_blank' }, mono(label));
}

export function statusBadge(status) {
  const key = `statuses.${status}`;
  return h('span', { class: `badge badge-${String(status).toLowerCase()}` }, has(key) ? t(key) : status);
}

// A table in a scrollable, focusable region (keyboard users can scroll it).
export function table(label, columns, rows, empty = t('none')) {
  if (!rows.length) return h('p', { class: 'empty' }, empty);
  return h('div', { class: 'table-wrap', role: 'region', 'aria-label': label, tabindex: '0' },
    h('table', {},
      h('caption', { class: 'offscreen' }, label),
      h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows.map((cells) => h('tr', {}, cells.map((c) => h('td', {}, c)))))));
}

export function definitionList(pairs) {
  return h('dl', { class: 'fields' }, pairs.flatMap(([name, value]) => [h('dt', {}, name), h('dd', {}, value)]));
}

export function section(title, ...content) {
  const id = `s-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  return h('section', { 'aria-labelledby': id }, h('h2', { id }, title), ...content);
}

// A notice region: role=alert for problems, status for news.
export function notice() {
  const el = h('div', { class: 'notice', role: 'status', hidden: true });
  return {
    el,
    show(text, kind = 'info') {
      el.hidden = false;
      el.className = `notice notice-${kind}`;
      el.setAttribute('role', kind === 'error' ? 'alert' : 'status');
      el.textContent = text;
    },
    hide() { el.hidden = true; el.textContent = ''; },
  };
}

export function problemText(error) {
  if (!error) return '';
  const code = error.code || 'network';
  const key = `errors.${code}`;
  return has(key) ? t(key, { detail: error.detail || '' }) : (error.detail || code);
}

// A modal confirmation (<dialog>: focus is kept inside, Escape closes it). Resolves true
// when `confirm` is pressed.
export function confirmDialog({ title, lines, confirm, danger = false }) {
  return new Promise((resolve) => {
    const yes = h('button', { type: 'button', class: danger ? 'danger' : 'primary' }, confirm);
    const no = h('button', { type: 'button' }, t('keep'));
    const dialog = h('dialog', { 'aria-labelledby': 'dialog-title' },
      h('h2', { id: 'dialog-title' }, title),
      lines.map((line) => h('p', {}, line)),
      h('div', { class: 'buttons' }, no, yes));
    const done = (value) => { dialog.close(); dialog.remove(); resolve(value); };
    yes.addEventListener('click', () => done(true));
    no.addEventListener('click', () => done(false));
    dialog.addEventListener('cancel', (event) => { event.preventDefault(); done(false); });
    document.body.append(dialog);
    dialog.showModal();
    no.focus();
  });
}

export function field(label, input, hint) {
  const id = input.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  input.id = id;
  return h('div', { class: 'field' }, h('label', { for: id }, label), input, hint ? h('small', {}, hint) : null);
}

export function input(name, attrs = {}) {
  return h('input', { name, ...attrs });
}

export function select(name, options, value, attrs = {}) {
  return h('select', { name, ...attrs },
    options.map(([v, label]) => h('option', { value: v, selected: v === value }, label)));
}

export function button(label, onclick, attrs = {}) {
  return h('button', { type: 'button', onclick, ...attrs }, label);
}

// Runs `action` with the button disabled and a busy label; shows its problem in `note`.
export async function busy(buttonEl, note, action) {
  const label = buttonEl.textContent;
  buttonEl.disabled = true;
  buttonEl.textContent = t('working');
  try {
    return await action();
  } catch (error) {
    if (note) note.show(problemText(error), 'error');
    return undefined;
  } finally {
    buttonEl.disabled = false;
    buttonEl.textContent = label;
  }
}

export function copyable(text) {
  const button = h('button', { type: 'button', class: 'copy' }, t('copy'));
  button.addEventListener('click', async () => {
    try { await navigator.clipboard.writeText(text); } catch { /* the text is shown anyway */ }
    button.textContent = t('copied');
    announce(t('copied'));
    setTimeout(() => { button.textContent = t('copy'); }, 1500);
  });
  return h('span', { class: 'secret' }, h('code', {}, text), button);
}
