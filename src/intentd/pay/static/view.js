// DOM building without innerHTML (nothing the server or the payer typed is ever
// parsed as HTML), copy buttons, and the QR code as an inline SVG.
import { encodeQr, qrSvgPath } from './qr.js';

const SVG = 'http://www.w3.org/2000/svg';

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (name === 'class') el.className = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

// Says something to screen readers without moving focus (a polite live region).
export function announce(text) {
  let region = document.getElementById('announcer');
  if (!region) {
    region = h('div', { id: 'announcer', class: 'offscreen', 'aria-live': 'polite' });
    document.body.append(region);
  }
  region.textContent = '';
  setTimeout(() => { region.textContent = text; }, 50);
}

export function copyButton(text, label, t) {
  const button = h('button', { type: 'button', class: 'copy', 'aria-label': label }, t.copy);
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      const area = h('textarea', { class: 'offscreen', 'aria-hidden': 'true' });
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand('copy');
      area.remove();
    }
    button.textContent = t.copied;
    announce(`${t.copied}: ${text}`);
    button.dataset.copied = 'true';
    setTimeout(() => {
      button.textContent = t.copy;
      delete button.dataset.copied;
    }, 1500);
  });
  return button;
}

export function qrCode(text, label) {
  const { d, extent } = qrSvgPath(encodeQr(text));
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${extent} ${extent}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', label);
  svg.setAttribute('class', 'qr');
  svg.setAttribute('shape-rendering', 'crispEdges');
  const back = document.createElementNS(SVG, 'rect');
  back.setAttribute('width', String(extent));
  back.setAttribute('height', String(extent));
  back.setAttribute('fill', '#fff');
  const path = document.createElementNS(SVG, 'path');
  path.setAttribute('d', d);
  path.setAttribute('fill', '#000');
  svg.append(back, path);
  return svg;
}

// Keeps Tab and Shift+Tab inside the page when it is the modal's frame.
export function trapFocus(root) {
  root.addEventListener('keydown', (event) => {
    if (event.key !== 'Tab') return;
    const items = [...root.querySelectorAll('button, input, a[href], [tabindex="0"]')]
      .filter((el) => !el.disabled && el.offsetParent !== null);
    if (items.length === 0) return;
    const first = items[0];
    const last = items[items.length - 1];
    if (event.shiftKey && document.activeElement === first) {
      last.focus();
      event.preventDefault();
    } else if (!event.shiftKey && document.activeElement === last) {
      first.focus();
      event.preventDefault();
    }
  });
}
