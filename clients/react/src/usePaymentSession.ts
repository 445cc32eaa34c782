"use client"; // React Server Components: these run on the client (Next.js)

/**
 * `usePaymentSession`: asks the merchant's backend for a session (as @chainrails/react's
 * hook of that name does) and holds what `<PaymentModal>` needs; spread its result
 * into the modal.
 *
 * The session endpoint (`session_url`, same origin, with cookies) answers the JSON of
 * intentd's POST /api/v1/sessions (or the Chainrails SDK's `getSessionToken`). It is
 * asked once on mount, so the first `open()` shows the checkout at once, and again
 * whenever a payment needs a session the payer has not used yet and that has time
 * left: each `open()` after a payment shown, after the session came near its end
 * (`isFresh`), and on the checkout's "Start again" after an expiry. Answers that
 * arrive after a newer request, or after unmount, are dropped.
 */
import { useCallback, useEffect, useRef, useState } from "react";

import { isFresh, readSession, type Session } from "./session.js";
import type { PaymentCallbacks } from "./types.js";

export interface UsePaymentSessionOptions extends PaymentCallbacks {
  /** The merchant's endpoint that creates a session with its API key. */
  session_url: string;
  /** How to call it: "GET" (the default, as @chainrails/react) or "POST". */
  method?: "GET" | "POST" | undefined;
  /** Headers to add to the request (a CSRF token, say). */
  headers?: Record<string, string> | undefined;
  /** intentd's base URL, passed on to `<PaymentModal>` (default: `configure`'s). */
  intentdUrl?: string | undefined;
}

export interface PaymentSession extends PaymentCallbacks {
  sessionToken: string | undefined;
  amount: string | undefined;
  isOpen: boolean;
  session_url: string;
  open: () => void;
  close: () => void;
  isPending: boolean;
  error: string | null;
  refetch: () => void;
  intentdUrl: string | undefined;
}

interface State {
  session: Session | null;
  isPending: boolean;
  error: string | null;
}

const IDLE: State = { session: null, isPending: false, error: null };

export function usePaymentSession(options: UsePaymentSessionOptions): PaymentSession {
  const { session_url, method = "GET", onSuccess, onCancel, onError, intentdUrl } = options;
  const [state, setState] = useState<State>(IDLE);
  const [isOpen, setOpen] = useState(false);
  // What the callbacks read: the newest options, and the state as they last set it.
  const latest = useRef({ options, state: IDLE, isOpen: false, used: false, asked: 0 });

  useEffect(() => {
    latest.current.options = options;
  });

  const refetch = useCallback((): void => {
    const now = latest.current;
    const asked = ++now.asked;
    const { session_url: url, method: verb = "GET", headers } = now.options;
    now.used = false;
    now.state = { session: null, isPending: true, error: null };
    setState(now.state);
    const failed = (message: string): void => {
      if (asked !== latest.current.asked) return;
      latest.current.state = { session: null, isPending: false, error: message };
      setState(latest.current.state);
      if (latest.current.isOpen) {
        latest.current.isOpen = false;
        setOpen(false);
        latest.current.options.onError?.({ code: "session_unavailable", message });
      }
    };
    fetch(url, {
      method: verb,
      credentials: "same-origin",
      cache: "no-store",
      headers: { Accept: "application/json", ...headers },
    })
      .then(async (response) => {
        if (!response.ok) throw new Error(`the session endpoint answered HTTP ${response.status}`);
        const session = readSession(await response.json(), Date.now(), response.headers.get("date"));
        if (asked !== latest.current.asked) return;
        latest.current.state = { session, isPending: false, error: null };
        if (latest.current.isOpen) latest.current.used = true;
        setState(latest.current.state);
      })
      .catch((err: unknown) => failed(err instanceof Error ? err.message : String(err)));
  }, []);

  useEffect(() => {
    refetch();
    const mine = latest.current;
    return () => {
      mine.asked += 1; // drops the answer still on its way
    };
  }, [session_url, method, refetch]);

  const open = useCallback((): void => {
    const now = latest.current;
    const { session, isPending } = now.state;
    if (!isPending && (session === null || now.used || !isFresh(session, Date.now()))) refetch();
    else if (session !== null) now.used = true;
    now.isOpen = true;
    setOpen(true);
  }, [refetch]);

  const close = useCallback((): void => {
    latest.current.isOpen = false;
    setOpen(false);
  }, []);

  return {
    sessionToken: state.session?.sessionToken,
    amount: state.session?.amount,
    isOpen,
    session_url,
    open,
    close,
    isPending: state.isPending,
    error: state.error,
    refetch,
    onSuccess,
    onCancel,
    onError,
    intentdUrl,
  };
}
