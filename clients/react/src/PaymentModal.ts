"use client"; // React Server Components: these run on the client (Next.js)

/**
 * `<PaymentModal>`: intentd's payment modal as a React component, with the props of
 * @chainrails/react's (spread a `usePaymentSession` or `usePaymentModal` result into
 * it). While `isOpen`, it shows intentd's checkout (`/pay/checkout` on intentd's
 * origin) over the page; it renders nothing into the React tree (so nothing on the
 * server) and touches the DOM only in effects.
 */
import { useEffect, useRef, type HTMLAttributes } from "react";

import { checkoutUrl, paymentResult, type FrameEvent } from "./checkout.js";
import { checkoutBase, resolveIntentdUrl } from "./config.js";
import { openOverlay, type Overlay } from "./overlay.js";
import type { PaymentCallbacks, PaymentModalStyles } from "./types.js";

export interface PaymentModalProps
  extends PaymentCallbacks,
    Omit<HTMLAttributes<HTMLDivElement>, "onError" | "onCancel"> {
  /** The session token (from your backend's POST /api/v1/sessions). */
  sessionToken?: string | null | undefined;
  /** Shown by Chainrails' modal; intentd's reads the amount from the session. */
  amount?: string | undefined;
  session_url?: string | undefined;
  isOpen: boolean;
  isPending?: boolean | undefined;
  open?: (() => void) | undefined;
  /** Called when the payer closes the modal (after onCancel or onSuccess). */
  close: () => void;
  /** Asks for a new session: when the payer presses "Start again" after an expiry. */
  refetch?: (() => void) | undefined;
  /** Source chains not to offer (intentd's or the Chainrails SDK's names). */
  excludeChains?: readonly string[] | undefined;
  styles?: PaymentModalStyles | undefined;
  /** intentd's base URL; default: the one given to `configure`. */
  intentdUrl?: string | undefined;
  /** The checkout's language (default: the browser's). */
  lang?: string | undefined;
  /** The dialog's accessible name (default "Payment"). */
  label?: string | undefined;
}

export function PaymentModal(props: PaymentModalProps): null {
  const latest = useRef(props);
  const overlay = useRef<Overlay | null>(null);
  const { isOpen, sessionToken, excludeChains, styles, lang } = props;
  const label = props.label ?? "Payment";
  const intentdUrl = resolveIntentdUrl(props.intentdUrl);
  const theme = styles?.theme;
  const accentColor = styles?.accentColor;
  const exclude = (excludeChains ?? []).join(",");

  useEffect(() => {
    latest.current = props;
  });

  useEffect(() => {
    if (!isOpen) return undefined;
    let origin: string;
    try {
      if (intentdUrl === null) throw new TypeError("no intentd URL: pass intentdUrl or call configure()");
      origin = checkoutBase(intentdUrl).origin;
    } catch (err) {
      latest.current.onError?.({ code: "configuration", message: String((err as Error).message ?? err) });
      latest.current.close();
      return undefined;
    }
    let succeeded = false;
    const shown = openOverlay({ origin, label, theme, onEvent, onEscape: () => finish(true) });
    overlay.current = shown;

    function finish(cancelled: boolean): void {
      shown.destroy();
      overlay.current = null;
      if (cancelled && !succeeded) latest.current.onCancel?.();
      latest.current.close();
    }

    function onEvent(event: FrameEvent): void {
      const now = latest.current;
      if (event.event === "success") {
        if (succeeded) return;
        succeeded = true;
        now.onSuccess?.(paymentResult(event.intent));
      } else if (event.event === "cancel" || event.event === "close") {
        finish(true);
      } else if (event.event === "error") {
        now.onError?.(event.error);
      } else if (event.event === "restart") {
        if (now.refetch) {
          now.refetch();
        } else {
          now.onError?.({ code: "session_expired", message: "the session has ended; give the modal a new one" });
          finish(false);
        }
      }
    }

    return () => {
      shown.destroy();
      if (overlay.current === shown) overlay.current = null;
    };
  }, [isOpen, intentdUrl, label, theme]);

  useEffect(() => {
    const shown = overlay.current;
    if (!isOpen || !sessionToken || shown === null || intentdUrl === null) return;
    const base = checkoutBase(intentdUrl).base;
    shown.show(checkoutUrl(base, sessionToken, {
      parentOrigin: window.location.origin,
      excludeChains: exclude === "" ? [] : exclude.split(","),
      lang,
      theme,
      accentColor,
    }));
  }, [isOpen, sessionToken, intentdUrl, exclude, lang, theme, accentColor]);

  return null;
}
