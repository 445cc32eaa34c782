// Webhooks: endpoints (create, edit, enable/disable, rotate the secret, send a test,
// delete), each one's delivery attempts (redeliver one), recovery of a time window, and
// a banner on an endpoint disabled by failures.
import { del, get, patch, post } from './api.js';
import {
  append, busy, button, clear, confirmDialog, copyable, field, h, input, mono, notice, problemText, section, t, table, time,
} from './dom.js';

// The event types are the server's (the session's event_types): written once, in EventType.
function typeChecks(types, selected) {
  return h('fieldset', { class: 'checks' }, h('legend', {}, t('eventTypes')),
    types.map((type) => h('label', {}, h('input', { type: 'checkbox', name: 'type', value: type, checked: selected && selected.includes(type) }), ` ${type}`)));
}

function chosenTypes(form) {
  const values = [...form.querySelectorAll('input[name=type]:checked')].map((i) => i.value);
  return values.length ? values : null;
}

export async function render(ctx) {
  const { root, mode, session } = ctx;
  const may = session.permissions.includes('webhooks.write');
  const note = notice();
  const list = h('div', {});
  append(root, [h('h1', {}, t('webhooksTitle')), note.el]);

  if (may) {
    const url = input('url', { type: 'url', required: true, placeholder: t('urlPlaceholder') });
    const description = input('description', {});
    const form = h('form', { class: 'card' }, h('h2', {}, t('addEndpoint')),
      field(t('url'), url), field(t('description'), description), typeChecks(session.event_types, null),
      h('button', { type: 'submit', class: 'primary' }, t('create')));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      note.hide();
      await busy(form.querySelector('button[type=submit]'), note, async () => {
        const { body } = await post('/webhooks', { url: url.value.trim(), description: description.value, event_types: chosenTypes(form) }, { mode });
        note.el.hidden = false;
        note.el.className = 'notice notice-info';
        clear(note.el);
        append(note.el, [t('secretOnce', { secret: '' }), copyable(body.secret)]);
        form.reset();
        await load();
      });
    });
    root.append(form);
  }
  root.append(list);

  function endpointView(e) {
    const local = notice();
    const attempts = h('div', {});
    let banner = null;
    if (!e.enabled && (e.disabled_reason === 'failing' || e.disabled_reason === 'gone')) {
      const text = e.disabled_reason === 'gone' ? t('goneBanner') : t('disabledBanner', { since: e.failing_since || e.disabled_at });
      banner = h('p', { class: 'notice notice-error', role: 'alert' }, text);
    } else if (!e.enabled) {
      banner = h('p', { class: 'notice notice-warn' }, t('disabledByYou'));
    }
    const buttons = [];
    if (may) {
      const toggle = button(e.enabled ? t('disable') : t('enable'), () => busy(toggle, local, async () => {
        await patch(`/webhooks/${e.id}`, { enabled: !e.enabled }, { mode });
        await load();
      }));
      const test = button(t('sendTest'), () => busy(test, local, async () => {
        await post(`/webhooks/${e.id}/test`, {}, { mode });
        local.show(t('testSent'));
        setTimeout(() => showAttempts(), 1500);
      }), { disabled: !e.enabled });
      const rotate = button(t('rotate'), () => busy(rotate, local, async () => {
        const { body } = await post(`/webhooks/${e.id}/rotate-secret`, {}, { mode });
        local.el.hidden = false;
        local.el.className = 'notice notice-info';
        clear(local.el);
        append(local.el, [t('secretOnce', { secret: '' }), copyable(body.secret)]);
      }));
      const remove = button(t('deleteEndpoint'), async () => {
        const ok = await confirmDialog({ title: t('deleteEndpoint'), lines: [t('confirmDelete', { url: e.url })], confirm: t('deleteEndpoint'), danger: true });
        if (!ok) return;
        await busy(remove, local, async () => { await del(`/webhooks/${e.id}`, { mode }); await load(); });
      }, { class: 'danger' });
      buttons.push(toggle, test, rotate, remove);
    }
    let editor = null;
    if (may) {
      const url = input('url', { type: 'url', required: true, value: e.url });
      const description = input('description', { value: e.description });
      const form = h('form', {}, field(t('url'), url), field(t('description'), description), typeChecks(session.event_types, e.event_types),
        h('button', { type: 'submit', class: 'primary' }, t('save')));
      form.addEventListener('submit', async (event) => {
        event.preventDefault();
        await busy(form.querySelector('button[type=submit]'), local, async () => {
          await patch(`/webhooks/${e.id}`, { url: url.value.trim(), description: description.value, event_types: chosenTypes(form) }, { mode });
          await load();
        });
      });
      editor = h('details', { class: 'edit' }, h('summary', {}, t('edit')), form);
    }
    const since = input('since', { type: 'datetime-local', step: '1' });
    const until = input('until', { type: 'datetime-local', step: '1' });
    const recoverForm = may ? h('form', { class: 'inline' }, h('h3', {}, t('recoverTitle')),
      field(t('recoverSince'), since), field(t('recoverUntil'), until),
      h('button', { type: 'submit' }, t('recover'))) : null;
    recoverForm?.addEventListener('submit', async (event) => {
      event.preventDefault();
      await busy(recoverForm.querySelector('button'), local, async () => {
        const body = { since: new Date(since.value).toISOString() };
        if (until.value) body.until = new Date(until.value).toISOString();
        const { body: answer } = await post(`/webhooks/${e.id}/recover`, body, { mode });
        local.show(t('recovered', { count: answer.recovered }));
        setTimeout(() => showAttempts(), 1500);
      });
    });

    async function showAttempts() {
      try {
        const { body } = await get(`/webhooks/${e.id}/attempts`, { mode, limit: 50 });
        clear(attempts);
        attempts.append(table(`${t('attemptsTitle')} ${e.url}`,
          [t('colTime'), t('colEvent'), t('colDelivery'), t('colStatus'), t('colLatency'), t('colOutcome'), t('colResponse'), ''],
          body.data.map((a) => {
            const again = may ? button(t('redeliver'), () => busy(again, local, async () => {
              await post(`/webhooks/${e.id}/deliveries/${a.delivery_id}/redeliver`, {}, { mode });
              local.show(t('redelivered', { id: a.delivery_id }));
              setTimeout(() => showAttempts(), 1500);
            }), { disabled: !e.enabled }) : null;
            return [time(a.attempted_at), a.event_type, `${a.delivery_id} (${a.delivery_status})`,
              a.status_code === null ? (a.error || t('dash')) : String(a.status_code), `${a.latency_ms} ms`, a.outcome,
              mono((a.response || '').slice(0, 60), a.response || ''), again];
          }), t('noAttempts')));
      } catch (error) {
        local.show(problemText(error), 'error');
      }
    }
    const view = section(e.url,
      banner,
      h('p', {}, [e.enabled ? t('enabled') : t('disabled'), e.description ? ` · ${e.description}` : '',
        ` · ${e.event_types ? e.event_types.join(', ') : t('allEvents')}`, ' · ', time(e.created_at)]),
      h('div', { class: 'buttons' }, buttons), local.el, editor, recoverForm,
      h('h3', {}, t('attemptsTitle')), attempts);
    view.classList.add('card');
    view.dataset.endpoint = e.id;
    showAttempts();
    return view;
  }

  async function load() {
    const { body } = await get('/webhooks', { mode });
    clear(list);
    if (!body.data.length) list.append(h('p', { class: 'empty' }, t('noEndpoints')));
    for (const e of body.data) list.append(endpointView(e));
  }
  await load();
}
