// The checkout's look as the embedding page asks for it (the modal's `styles`):
// a theme ("light", the default; "dark"; "system": the browser's preference) and
// an accent colour for buttons and links, with the button text in black or white,
// whichever reads better on it. Only colours are taken: a value that is not a plain
// colour (#rgb, #rrggbb, #rrggbbaa, rgb(), hsl(), a name) is ignored.

export const THEMES = ['light', 'dark', 'system'];

export function themeName(value) {
  return THEMES.includes(value) ? value : 'light';
}

const COLOR = /^(#[0-9a-f]{3,4}|#[0-9a-f]{6}|#[0-9a-f]{8}|(rgb|hsl)a?\([0-9.,%\s/+-]{1,60}\)|[a-z]{3,30})$/i;

export function accentColor(value) {
  const text = String(value ?? '').trim();
  return COLOR.test(text) ? text : null;
}

// Relative luminance (WCAG 2) of an sRGB channel 0..255.
function channel(value) {
  const c = value / 255;
  return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
}

// The text colour for a background given as the browser computes colours
// ("rgb(r, g, b)" or "rgba(r, g, b, a)"): near-black or white, whichever contrasts more.
export function inkFor(computed) {
  const parts = /rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)/.exec(String(computed));
  if (!parts) return '#fff';
  const [r, g, b] = parts.slice(1, 4).map(Number);
  const light = 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
  const dark = 0.2126 * channel(15) + 0.7152 * channel(23) + 0.0722 * channel(42); // #0f172a
  const onWhite = 1.05 / (light + 0.05);
  const onDark = (light + 0.05) / (dark + 0.05);
  return onDark > onWhite ? '#0f172a' : '#fff';
}

// Sets the theme on <html> and the accent as CSS variables (through the CSSOM, which
// the page's Content-Security-Policy allows; no style attribute is written).
export function applyTheme(theme, accent) {
  const root = document.documentElement;
  root.dataset.theme = themeName(theme);
  const color = accentColor(accent);
  if (color === null || !CSS.supports('color', color)) return;
  const probe = document.createElement('span');
  probe.style.color = color;
  document.body.append(probe);
  const computed = getComputedStyle(probe).color;
  probe.remove();
  root.style.setProperty('--accent', color);
  root.style.setProperty('--accent-ink', inkFor(computed));
}
