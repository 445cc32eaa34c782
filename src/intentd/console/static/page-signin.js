// Sign in: email and password, then the second factor if the account has one; or a
// one-time sign-in link (#link=… in the address, never sent to the server as such),
// which sets a password first.
import { post } from './api.js';
import { append, busy, clear, field, h, input, notice, t } from './dom.js';

function nextPath() {
  const next = new URLSearchParams(location.search).get('next') || '/console';
  return next.startsWith('/console') && !next.startsWith('/console/signin') ? next : '/console';
}

function form(title, text, fields, submitLabel, onSubmit) {
  const note = notice();
  const submit = h('button', { type: 'submit', class: 'primary' }, submitLabel);
  const el = h('form', { novalidate: true }, fields, note.el, submit);
  el.addEventListener('submit', async (event) => {
    event.preventDefault();
    note.hide();
    await busy(submit, note, () => onSubmit(note));
  });
  return [h('h1', {}, title), text ? h('p', {}, text) : null, el];
}

export async function render(ctx) {
  const { root } = ctx;
  const done = async (body) => {
    if (body && body.second_factor) {
      secondFactor();
      return;
    }
    history.replaceState(null, '', nextPath());
    await ctx.reload();
  };

  function secondFactor(recovery = false) {
    clear(root);
    const code = input('code', { autocomplete: 'one-time-code', inputmode: recovery ? 'text' : 'numeric', required: true });
    const toggle = h('button', { type: 'button', class: 'link-button' }, recovery ? t('useCode') : t('useRecovery'));
    toggle.addEventListener('click', () => secondFactor(!recovery));
    append(root, form(t('secondFactorTitle'), recovery ? null : t('secondFactorText'),
      [field(recovery ? t('recoveryLabel') : t('codeLabel'), code)], t('verify'), async () => {
        const body = recovery ? { recovery_code: code.value } : { code: code.value };
        const answer = await post('/signin/second-factor', body);
        await done(answer.body);
      }));
    root.append(toggle);
    code.focus();
  }

  function withLink(token) {
    clear(root);
    const password = input('password', { type: 'password', autocomplete: 'new-password', required: true, minlength: 12 });
    const again = input('again', { type: 'password', autocomplete: 'new-password', required: true });
    append(root, form(t('linkTitle'), t('linkText'),
      [field(t('newPassword'), password), field(t('repeatPassword'), again)], t('setPassword'), async (note) => {
        if (password.value !== again.value) {
          note.show(t('passwordsDiffer'), 'error');
          return;
        }
        const answer = await post('/signin/link', { token, password: password.value });
        await done(answer.body);
      }));
    password.focus();
  }

  function withPassword() {
    clear(root);
    const email = input('email', { type: 'email', autocomplete: 'username', required: true });
    const password = input('password', { type: 'password', autocomplete: 'current-password', required: true });
    const why = new URLSearchParams(location.search).get('why');
    append(root, form(t('signinTitle'), why ? t('signedOutNote', { why }) : null,
      [field(t('email'), email), field(t('password'), password)], t('signinButton'), async () => {
        const answer = await post('/signin', { email: email.value, password: password.value });
        await done(answer.body);
      }));
    email.focus();
  }

  const fragment = new URLSearchParams(location.hash.slice(1));
  const token = fragment.get('link');
  if (token) {
    history.replaceState(null, '', location.pathname + location.search); // the token leaves the address bar
    withLink(token);
  } else {
    withPassword();
  }
}
