// Every text the payer sees, in one table per language: translate by adding a table.
// {name} is replaced by a value. The page picks the table of ?lang= (or #lang=), then
// of the browser's language, then English.

export const STRINGS = {
  en: {
    pageTitle: 'Payment',
    loading: 'Loading the payment…',
    close: 'Close',
    cancel: 'Cancel payment',
    back: 'Back',
    headingPay: 'Pay {amount} {symbol}',
    headingPayOpen: 'Pay in {symbol}',
    recipientGets: '{recipient} gets {amount} {symbol} on {chain}.',
    recipientGetsOpen: '{recipient} gets the amount you choose, in {symbol} on {chain}.',
    amountLabel: 'Amount to pay ({symbol})',
    amountHint: 'The recipient gets this amount; fees are added to what you send.',
    amountInvalid: 'Enter an amount, such as 12.50.',
    showOptions: 'Show payment options',
    chooseLegend: 'Pay with',
    optionTitle: '{symbol} on {chain}',
    optionDetail: 'You send {total} {symbol} · fees {fees} {symbol} (${usd}) · about {seconds} s',
    noOptions: 'No way to pay this amount is available. Try another amount.',
    refundLabel: 'Your wallet address (for refunds)',
    refundHint: 'Anything that must be returned goes back to this address.',
    refundInvalid: 'Enter a wallet address: 0x and 40 hexadecimal characters.',
    chooseInvalid: 'Choose how to pay.',
    continue: 'Continue',
    headingSend: 'Send {amount} {symbol}',
    sendOn: 'on {chain} (chain id {chainId}), to this address:',
    addressLabel: 'Deposit address',
    amountToSend: 'Exact amount',
    copy: 'Copy',
    copied: 'Copied',
    copyAddress: 'Copy the deposit address',
    copyAmount: 'Copy the amount',
    qrLabel: 'QR code of the payment request for a wallet app',
    openWallet: 'Open in a wallet app',
    expiresIn: 'Expires in {time}',
    paymentMade: 'I have made payment',
    checking: 'Checking the chain…',
    testNetworkNote: 'Test network: after sending, press “I have made payment”.',
    statusWaiting: 'Waiting for your payment.',
    statusPartial: 'Received {received} {symbol}. Still missing: {missing} {symbol}.',
    statusOver: 'Received {received} {symbol}, {excess} {symbol} more than needed: the excess goes back to {refund}.',
    statusFunded: 'Payment received. Sending it to the recipient…',
    statusSent: 'Sent to the recipient. Waiting for confirmation…',
    statusDone: 'Done. The recipient has been paid.',
    statusRefunding: 'Refund under way to {refund}.',
    statusRefunded: 'Refunded to {refund}.',
    headingDone: 'Payment complete',
    doneDetail: '{recipient} received {amount} {symbol} on {chain}.',
    transaction: 'Transaction on the recipient’s chain:',
    doneExcess: 'You sent {excess} {symbol} more than needed: it goes back to {refund}.',
    headingExpired: 'This payment has expired',
    expiredDetail: 'Nothing was received in time, so nothing was charged.',
    expiredPartial: 'What you sent ({received} {symbol}) goes back to {refund}.',
    startAgain: 'Start again',
    expiredLink: 'Ask the merchant for a new payment link.',
    headingCancelled: 'This payment was cancelled',
    cancelledDetail: 'The merchant cancelled it. Do not send anything to this address.',
    headingRefund: 'Payment refunded',
    refundDetail: 'The payment could not be completed; the funds go back to {refund}.',
    headingError: 'Something went wrong',
    tryAgain: 'Try again',
    errorNoSession: 'This page needs a payment session. Ask the merchant for a new link.',
    headingLinkRefused: 'This link cannot be used',
    errorSessionInQuery: 'This payment link carries its session after “?session=”, where web servers record it, so it is not used. Ask the merchant for a link with “#session=” instead.',
    errorNetwork: 'The payment service cannot be reached. Check your connection and try again.',
  },
};

export function chooseStrings(preferred) {
  for (const tag of preferred) {
    if (!tag) continue;
    const lang = tag.toLowerCase().split('-')[0];
    if (STRINGS[lang]) return { lang, table: STRINGS[lang] };
  }
  return { lang: 'en', table: STRINGS.en };
}

export function format(template, values = {}) {
  return template.replace(/\{(\w+)\}/g, (all, name) => (name in values ? String(values[name]) : all));
}
