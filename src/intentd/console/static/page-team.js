// Team: users of the client, their roles, sign-in links, disabling; and the refund
// approval threshold.
import { get, patch, post, put } from './api.js';
import {
  append, busy, button, clear, copyable, field, h, input, notice, section, select, t, table,
} from './dom.js';

export async function render(ctx) {
  const { root, session } = ctx;
  const mayWrite = session.permissions.includes('team.write');
  const note = notice();
  const users = h('div', {});
  append(root, [h('h1', {}, t('teamTitle')), note.el]);

  function showLink(email, link) {
    note.el.hidden = false;
    note.el.className = 'notice notice-info';
    clear(note.el);
    append(note.el, [t('linkOnce', { email, link: '' }), copyable(link)]);
  }

  if (mayWrite) {
    const email = input('email', { type: 'email', required: true, autocomplete: 'off' });
    const role = select('role', ['owner', 'admin', 'developer', 'support', 'viewer'].map((r) => [r, t(`roles.${r}`)]), 'viewer');
    const form = h('form', { class: 'inline card' }, h('h2', {}, t('invite')), field(t('email'), email), field(t('role'), role),
      h('button', { type: 'submit', class: 'primary' }, t('invite')));
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      await busy(form.querySelector('button[type=submit]'), note, async () => {
        const { body } = await post('/team', { email: email.value.trim(), role: role.value });
        showLink(body.user.email, body.signin_link);
        form.reset();
        await load();
      });
    });
    root.append(form);
  }
  root.append(section(t('teamMembers'), users));

  async function load() {
    const { body } = await get('/team');
    clear(users);
    users.append(table(t('teamMembers'), [t('colEmail'), t('colRole'), t('colState'), t('colTotp'), ''],
      body.data.map((u) => {
        const actions = [];
        let roleCell = t(`roles.${u.role}`);
        if (mayWrite) {
          const role = select('role', body.roles.map((r) => [r, t(`roles.${r}`)]), u.role, { 'aria-label': `${t('changeRole')}: ${u.email}` });
          role.addEventListener('change', () => busy(role, note, async () => { await patch(`/team/${u.id}`, { role: role.value }); await load(); }));
          const toggle = button(u.active ? t('disable') : t('enable'), () => busy(toggle, note, async () => {
            await post(`/team/${u.id}/${u.active ? 'disable' : 'enable'}`);
            await load();
          }), { class: u.active ? 'danger' : null });
          const fresh = button(t('newLink'), () => busy(fresh, note, async () => {
            const { body: answer } = await post(`/team/${u.id}/link`);
            showLink(u.email, answer.signin_link);
          }));
          roleCell = role;
          actions.push(toggle, fresh);
        }
        return [u.email, roleCell, u.active ? t('active') : t('inactive'), u.totp_on ? t('yes') : t('no'),
          h('div', { class: 'buttons' }, actions)];
      })));
  }
  await load();

  const { body: policy } = await get('/policy');
  const threshold = input('threshold', { inputmode: 'decimal', value: policy.refund_approval_above_usd ?? '', disabled: !session.permissions.includes('settings.write') });
  const policyNote = notice();
  const policyForm = h('form', { class: 'inline' }, field(t('threshold'), threshold),
    session.permissions.includes('settings.write') ? h('button', { type: 'submit' }, t('save')) : null, policyNote.el);
  policyForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    await busy(policyForm.querySelector('button'), policyNote, async () => {
      const value = threshold.value.trim();
      await put('/policy', { refund_approval_above_usd: value === '' ? null : value });
      policyNote.show(t('policySaved'));
    });
  });
  root.append(section(t('policyTitle'), h('p', {}, t('policyText')), policyForm));
}
