// The signed-in user's account: password, and the second factor (TOTP) with its
// recovery codes.
import { post } from './api.js';
import { encodeQr, qrSvgPath } from '/pay/assets/qr.js';
import { append, busy, clear, copyable, field, h, input, notice, section, t } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';

function qr(text) {
  const { d, extent } = qrSvgPath(encodeQr(text));
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${extent} ${extent}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', t('totpQr'));
  svg.setAttribute('class', 'qr');
  const back = document.createElementNS(SVG, 'rect');
  back.setAttribute('width', String(extent));
  back.setAttribute('height', String(extent));
  back.setAttribute('fill', '#fff');
  const path = document.createElementNS(SVG, 'path');
  path.setAttribute('d', d);
  svg.append(back, path);
  return svg;
}

export async function render(ctx) {
  const { root, session, reload } = ctx;
  append(root, [h('h1', {}, t('accountTitle'))]);

  const current = input('current', { type: 'password', autocomplete: 'current-password', required: true });
  const fresh = input('password', { type: 'password', autocomplete: 'new-password', required: true, minlength: 12 });
  const passwordNote = notice();
  const passwordForm = h('form', { class: 'inline' }, field(t('currentPassword'), current), field(t('newPassword'), fresh),
    h('button', { type: 'submit' }, t('changePassword')), passwordNote.el);
  passwordForm.addEventListener('submit', async (event) => {
    event.preventDefault();
    await busy(passwordForm.querySelector('button'), passwordNote, async () => {
      await post('/me/password', { current: current.value, password: fresh.value });
      passwordForm.reset();
      passwordNote.show(t('passwordChanged'));
    });
  });
  root.append(section(t('changePassword'), passwordForm));

  const totp = h('div', {});
  const totpNote = notice();
  root.append(section(t('totpTitle'), totp, totpNote.el));
  let on = session.user.totp_on;
  function show() {
    clear(totp);
    if (!session.totp_available) { totp.append(h('p', {}, t('totpUnavailable'))); return; }
    if (on) {
      const password = input('current', { type: 'password', autocomplete: 'current-password', required: true });
      const off = h('form', { class: 'inline' }, field(t('currentPassword'), password), h('button', { type: 'submit', class: 'danger' }, t('totpTurnOff')));
      off.addEventListener('submit', async (event) => {
        event.preventDefault();
        await busy(off.querySelector('button'), totpNote, async () => {
          await post('/me/totp/off', { current: password.value });
          on = false;
          totpNote.show(t('totpTurnedOff'));
          show();
        });
      });
      append(totp, [h('p', {}, t('totpOn')), off]);
      return;
    }
    const start = h('button', { type: 'button', class: 'primary' }, t('totpStart'));
    start.addEventListener('click', () => busy(start, totpNote, async () => {
      const { body } = await post('/me/totp/start');
      const code = input('code', { inputmode: 'numeric', autocomplete: 'one-time-code', required: true });
      const confirm = h('form', { class: 'inline' }, field(t('codeLabel'), code), h('button', { type: 'submit', class: 'primary' }, t('totpConfirm')));
      confirm.addEventListener('submit', async (event) => {
        event.preventDefault();
        await busy(confirm.querySelector('button'), totpNote, async () => {
          const { body: done } = await post('/me/totp/confirm', { code: code.value });
          on = true;
          clear(totp);
          append(totp, [h('p', {}, t('totpOn')), h('p', {}, t('totpRecovery')),
            h('ul', { class: 'codes' }, done.recovery_codes.map((c) => h('li', {}, h('code', {}, c))))]);
        });
      });
      clear(totp);
      append(totp, [h('p', {}, t('totpScan')), qr(body.uri), h('p', {}, t('totpKey'), ' ', copyable(body.secret)), confirm]);
      code.focus();
    }));
    append(totp, [h('p', {}, t('totpOff')), start]);
  }
  show();
  void reload;
}
