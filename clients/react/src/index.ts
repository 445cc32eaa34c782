/**
 * @intentd/react: intentd's payment modal for React pages, with the surface of
 * @chainrails/react where it can (docs/payment-modal.md, "From Chainrails").
 * No side effects at import; the DOM is touched only in effects, in a browser.
 */
export { PaymentModal, type PaymentModalProps } from "./PaymentModal.js";
export { configure, type IntentdConfig } from "./config.js";
export {
  usePaymentModal,
  type PaymentModalState,
  type UsePaymentModalOptions,
} from "./usePaymentModal.js";
export {
  usePaymentSession,
  type PaymentSession,
  type UsePaymentSessionOptions,
} from "./usePaymentSession.js";
export { checkoutUrl, readFrameMessage, paymentResult, type FrameEvent } from "./checkout.js";
export { isFresh, readSession, type Session } from "./session.js";
export type {
  IntentRecord,
  PaymentCallbacks,
  PaymentError,
  PaymentModalStyles,
  PaymentResult,
  Theme,
} from "./types.js";
