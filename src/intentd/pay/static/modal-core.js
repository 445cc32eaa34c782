// The payment modal for merchant pages; no framework needed. intentd serves this
// code as /pay/modal.js (an ES module exporting openPayment) and /pay/pay.js (a
// classic script defining window.IntentdPay.openPayment).
//
// openPayment({ session_url, excludeChains, styles, onSuccess, onCancel, onError, label })
//   POSTs to session_url (the merchant's own backend, same-origin, with cookies),
//   which answers JSON with a session_token; then shows intentd's checkout page
//   (/pay/checkout) in an iframe over the page. The token goes to the frame in
//   the URL fragment, which is never sent to a server. The frame's messages are
//   accepted only from that frame and intentd's origin. styles: { theme: "light" |
//   "dark" | "system", accentColor: a CSS colour }, applied by the checkout.
//   onSuccess(intent) fires when the payment completes; onCancel() when the payer
//   closes before that; onError({ code, message }) on failures. Returns { close }.
function createOpenPayment(base) {
  var origin = new URL(base).origin;

  function css(el, rules) {
    for (var name in rules) el.style.setProperty(name, rules[name], 'important');
  }

  return function openPayment(options) {
    var opts = options || {};
    if (typeof opts.session_url !== 'string' || opts.session_url === '') {
      throw new TypeError('openPayment: session_url is required');
    }
    var exclude = Array.isArray(opts.excludeChains) ? opts.excludeChains.map(String) : [];
    var styles = opts.styles || {};
    var previous = document.activeElement;
    var host = document.createElement('div');
    var root = host.attachShadow({ mode: 'closed' });
    var box = document.createElement('div');
    var frame = null;
    var closed = false;
    var succeeded = false;

    css(host, {
      all: 'initial', position: 'fixed', inset: '0', 'z-index': '2147483647', display: 'flex',
      'align-items': 'center', 'justify-content': 'center', background: 'rgba(15, 23, 42, 0.55)',
    });
    host.setAttribute('role', 'dialog');
    host.setAttribute('aria-modal', 'true');
    host.setAttribute('aria-label', opts.label || 'Payment');
    css(box, {
      width: 'min(440px, 100vw)', height: 'min(760px, 100vh)', background: '#fff',
      'border-radius': 'min(12px, calc((100vw - 440px) * 99))', overflow: 'hidden',
      'box-shadow': '0 20px 50px rgba(0, 0, 0, 0.3)', display: 'flex',
    });
    root.appendChild(box);
    document.body.appendChild(host);

    function call(fn, value) {
      if (typeof fn === 'function') {
        try { fn(value); } catch (err) { setTimeout(function () { throw err; }); }
      }
    }

    function close() {
      if (closed) return;
      closed = true;
      window.removeEventListener('message', onMessage);
      document.removeEventListener('keydown', onKey, true);
      host.remove();
      if (previous && typeof previous.focus === 'function') previous.focus();
    }

    function cancel() {
      var before = succeeded;
      close();
      if (!before) call(opts.onCancel);
    }

    function fail(error) {
      close();
      call(opts.onError, error);
    }

    function onKey(event) {
      if (event.key === 'Escape') cancel();
    }

    function onMessage(event) {
      if (!frame || event.source !== frame.contentWindow || event.origin !== origin) return;
      var msg = event.data;
      if (!msg || msg.type !== 'intentd-pay') return;
      if (msg.event === 'success' && !succeeded) {
        succeeded = true;
        call(opts.onSuccess, msg.intent);
      } else if (msg.event === 'close' || msg.event === 'cancel') {
        cancel();
      } else if (msg.event === 'error') {
        call(opts.onError, msg.error);
      } else if (msg.event === 'restart') {
        load();
      } else if (msg.event === 'resize' && typeof msg.height === 'number' && msg.height > 0) {
        css(box, { height: 'min(' + Math.ceil(msg.height) + 'px, 100vh)' });
      }
    }

    function mount(token) {
      if (closed) return;
      var params = new URLSearchParams({ session: token, embed: '1', origin: window.location.origin });
      if (exclude.length) params.set('exclude', exclude.join(','));
      if (opts.lang) params.set('lang', String(opts.lang));
      if (styles.theme) params.set('theme', String(styles.theme));
      if (styles.accentColor) params.set('accent', String(styles.accentColor));
      if (frame) frame.remove();
      frame = document.createElement('iframe');
      frame.title = opts.label || 'Payment';
      frame.setAttribute('allow', 'clipboard-write');
      css(frame, { border: '0', width: '100%', height: '100%', display: 'block' });
      frame.src = base + 'checkout#' + params.toString();
      box.appendChild(frame);
      frame.focus();
    }

    function load() {
      fetch(opts.session_url, {
        method: 'POST', credentials: 'same-origin', headers: { Accept: 'application/json' },
      }).then(function (response) {
        if (!response.ok) throw new Error('session_url answered HTTP ' + response.status);
        return response.json();
      }).then(function (body) {
        if (!body || typeof body.session_token !== 'string') throw new Error('session_url gave no session_token');
        mount(body.session_token);
      }).catch(function (err) {
        fail({ code: 'session_unavailable', message: String((err && err.message) || err) });
      });
    }

    window.addEventListener('message', onMessage);
    document.addEventListener('keydown', onKey, true);
    load();
    return { close: close };
  };
}
