// The console's shell: who is signed in, the mode switch, the navigation, and a small
// router that renders one page module per path (history API; links work as links).
import { ApiError, get, post, setCsrf, whenSignedOut } from './api.js';
import { append, button, clear, h, t } from './dom.js';

const PAGES = [
  { path: /^\/console\/?$/, load: () => import('./page-overview.js'), nav: 'navOverview', href: '/console', need: 'payments.read' },
  { path: /^\/console\/payments\/?$/, load: () => import('./page-payments.js'), nav: 'navPayments', href: '/console/payments', need: 'payments.read' },
  { path: /^\/console\/payments\/(\d+)$/, load: () => import('./page-payment.js'), need: 'payments.read' },
  { path: /^\/console\/approvals\/?$/, load: () => import('./page-approvals.js'), nav: 'navApprovals', href: '/console/approvals', need: 'payments.read' },
  { path: /^\/console\/webhooks\/?$/, load: () => import('./page-webhooks.js'), nav: 'navWebhooks', href: '/console/webhooks', need: 'webhooks.read' },
  { path: /^\/console\/developers\/?$/, load: () => import('./page-developers.js'), nav: 'navDevelopers', href: '/console/developers', need: 'events.read' },
  { path: /^\/console\/reports\/?$/, load: () => import('./page-reports.js'), nav: 'navReports', href: '/console/reports', need: 'reports.read' },
  { path: /^\/console\/team\/?$/, load: () => import('./page-team.js'), nav: 'navTeam', href: '/console/team', need: 'team.read' },
  { path: /^\/console\/audit\/?$/, load: () => import('./page-audit.js'), nav: 'navAudit', href: '/console/audit', need: 'audit.read' },
  { path: /^\/console\/account\/?$/, load: () => import('./page-account.js'), need: null },
];

const root = document.getElementById('app');
let session = null;
let leave = null;

function currentMode() {
  const wanted = new URLSearchParams(location.search).get('mode');
  return wanted === 'live' || wanted === 'test' ? wanted : 'test';
}

// A console path with the current mode kept.
export function href(path, params = {}) {
  const search = new URLSearchParams({ mode: currentMode(), ...params });
  for (const [k, v] of [...search.entries()]) if (v === '' || v === 'undefined') search.delete(k);
  return `${path}?${search.toString()}`;
}

export function navigate(target, { replace = false } = {}) {
  if (replace) history.replaceState(null, '', target);
  else history.pushState(null, '', target);
  route();
}

function signinPath(why) {
  const next = location.pathname + location.search;
  const params = new URLSearchParams({ next });
  if (why) params.set('why', why);
  return `/console/signin?${params.toString()}`;
}

whenSignedOut((error) => {
  session = null;
  navigate(signinPath(error.detail), { replace: true });
});

async function loadSession() {
  try {
    const { body } = await get('/session');
    session = body;
    setCsrf(body.csrf_token);
  } catch (error) {
    if (!(error instanceof ApiError) || error.status !== 401) throw error;
    session = null;
  }
}

function modeSwitch(mode) {
  const choose = (value) => () => {
    if (value === mode) return;
    const search = new URLSearchParams(location.search);
    search.set('mode', value);
    search.delete('cursor');
    navigate(`${location.pathname}?${search.toString()}`);
  };
  return h('div', { class: 'mode', role: 'group', 'aria-label': t('modeLabel') },
    h('span', { class: 'mode-label' }, t('modeLabel')),
    button(t('modeTest'), choose('test'), { 'aria-pressed': String(mode === 'test'), class: 'mode-test' }),
    button(t('modeLive'), choose('live'), { 'aria-pressed': String(mode === 'live'), class: 'mode-live' }));
}

function shell(mode, path) {
  const may = new Set(session.permissions);
  const nav = h('nav', { 'aria-label': t('menu') },
    h('ul', {}, PAGES.filter((p) => p.nav && may.has(p.need)).map((p) => {
      const current = p.path.test(path) || (p.href === '/console/payments' && path.startsWith('/console/payments/'));
      return h('li', {}, h('a', { href: href(p.href), 'aria-current': current ? 'page' : null }, t(p.nav)));
    })));
  const signOut = button(t('signOut'), async () => {
    try { await post('/signout'); } catch { /* signed out anyway */ }
    session = null;
    navigate('/console/signin', { replace: true });
  }, { class: 'link-button' });
  const user = session.user;
  const header = h('header', { class: 'top' },
    h('a', { class: 'brand', href: href('/console') }, t('appName'), h('span', { class: 'client' }, user.client)),
    modeSwitch(mode),
    h('div', { class: 'who' },
      h('a', { href: href('/console/account') }, t('signedInAs', { email: user.email, role: t(`roles.${user.role}`), client: user.client })),
      signOut));
  const banner = h('div', { class: `banner banner-${mode}`, role: 'note' }, mode === 'test' ? t('testBanner') : t('liveBanner'));
  const main = h('main', { id: 'main', tabindex: '-1' });
  clear(root);
  root.classList.toggle('live', mode === 'live');
  append(root, [header, banner, nav, main]);
  // a narrow screen scrolls the menu sideways: keep the current page's entry in sight
  const current = nav.querySelector('[aria-current="page"]');
  if (current) current.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  return main;
}

async function route() {
  if (leave) { leave(); leave = null; }
  const path = location.pathname.replace(/\/+$/, '') || '/console';
  root.setAttribute('aria-busy', 'true');
  if (path === '/console/signin') {
    const page = await import('./page-signin.js');
    clear(root);
    const main = h('main', { id: 'main', class: 'signin', tabindex: '-1' });
    root.append(main);
    await page.render({ root: main, navigate, reload: start });
    root.setAttribute('aria-busy', 'false');
    return;
  }
  if (session === null) await loadSession();
  if (session === null) {
    navigate(signinPath(), { replace: true });
    return;
  }
  const mode = currentMode();
  const main = shell(mode, path);
  const found = PAGES.find((p) => p.path.test(path));
  if (!found) {
    append(main, [h('h1', { tabindex: '-1' }, t('notFoundTitle')), h('p', {}, t('notFoundText'))]);
  } else if (found.need && !session.permissions.includes(found.need)) {
    append(main, [h('h1', { tabindex: '-1' }, t('notFoundTitle')), h('p', {}, t('errors.forbidden_for_role'))]);
  } else {
    const page = await found.load();
    const match = path.match(found.path);
    const params = new URLSearchParams(location.search);
    leave = await page.render({ root: main, session, mode, params, match, href, navigate }) || null;
  }
  root.setAttribute('aria-busy', 'false');
  const heading = main.querySelector('h1');
  if (heading) { heading.setAttribute('tabindex', '-1'); heading.focus({ preventScroll: true }); }
  document.title = `${heading ? heading.textContent : t('appName')} · ${t('appName')}`;
}

async function start() {
  session = null;
  await route();
}

document.addEventListener('click', (event) => {
  const a = event.target.closest('a[href]');
  if (!a || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || a.target) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith('/console') || url.pathname.startsWith('/console/api')) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
});
window.addEventListener('popstate', route);
start();
