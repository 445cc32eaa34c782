// Developers: API keys of this mode (create with scopes, shown once; revoke) and the
// event log.
import { get, post } from './api.js';
import {
  append, busy, button, clear, confirmDialog, copyable, h, link, mono, notice, section, select, t, table, time,
} from './dom.js';

export async function render(ctx) {
  const { root, mode, session, href, params, navigate } = ctx;
  const may = new Set(session.permissions);
  const note = notice();
  append(root, [h('h1', {}, t('developersTitle')), note.el]);

  if (may.has('keys.read')) {
    const keys = h('div', {});
    const box = section(t('keysTitle'));
    if (may.has('keys.write')) {
      const scopes = h('fieldset', { class: 'checks' }, h('legend', {}, t('scopesLabel')));
      const form = h('form', { class: 'inline' }, scopes, h('button', { type: 'submit', class: 'primary' }, t('createKey')));
      form.addEventListener('submit', async (event) => {
        event.preventDefault();
        await busy(form.querySelector('button[type=submit]'), note, async () => {
          const chosen = [...form.querySelectorAll('input[name=scope]:checked')].map((i) => i.value);
          const { body } = await post('/keys', { scopes: chosen.length ? chosen : null }, { mode });
          note.el.hidden = false;
          note.el.className = 'notice notice-info';
          clear(note.el);
          append(note.el, [t('keyOnce', { key: '' }), copyable(body.api_key)]);
          form.reset();
          await loadKeys();
        });
      });
      box.append(form);
      box.scopes = scopes;
    }
    box.append(keys);
    root.append(box);
    async function loadKeys() {
      const { body } = await get('/keys', { mode });
      if (box.scopes && !box.scopes.querySelector('input')) {
        for (const scope of body.scopes) box.scopes.append(h('label', {}, h('input', { type: 'checkbox', name: 'scope', value: scope }), ` ${scope}`));
      }
      clear(keys);
      keys.append(table(t('keysTitle'), [t('colPrefix'), t('colMode'), t('colScopes'), t('colCreated'), t('colStatus'), ''],
        body.data.map((k) => {
          let revoke = null;
          if (!k.revoked_at && may.has('keys.write')) {
            revoke = button(t('revoke'), async () => {
              const ok = await confirmDialog({ title: t('revoke'), lines: [t('confirmRevoke', { prefix: k.prefix })], confirm: t('revoke'), danger: true });
              if (ok) await busy(revoke, note, async () => { await post(`/keys/${k.id}/revoke`); await loadKeys(); });
            }, { class: 'danger' });
          }
          return [mono(`${k.prefix}…`), k.mode, k.scopes ? k.scopes.join(', ') : t('allScopes'), time(k.created_at),
            k.revoked_at ? [t('revoked'), ' ', time(k.revoked_at)] : t('active'), revoke];
        }), t('noKeys')));
    }
    await loadKeys();
  }

  if (may.has('events.read')) {
    const type = params.get('type') || '';
    const chooser = select('type', [['', t('all')], ...session.event_types.map((v) => [v, v])], type, { 'aria-label': t('fType') });
    chooser.addEventListener('change', () => navigate(href('/console/developers', { type: chooser.value })));
    const events = h('div', {});
    const more = button(t('more'), () => loadEvents(), { hidden: true });
    root.append(section(t('eventsTitle'), h('div', { class: 'toolbar' }, chooser), events, more));
    let cursor = null;
    const rows = [];
    async function loadEvents() {
      const { body } = await get('/events', { mode, type, cursor });
      for (const e of body.data) {
        rows.push([time(e.created_at), e.type, link(href(`/console/payments/${e.intent.id}`), `#${e.intent.id}`), String(e.sequence), mono(e.id)]);
      }
      cursor = body.next_cursor;
      more.hidden = !cursor;
      clear(events);
      events.append(table(t('eventsTitle'), [t('colTime'), t('colEvent'), t('colPayment'), t('colSequence'), t('colEventId')], rows, t('noEvents')));
    }
    await loadEvents();
  }
}
