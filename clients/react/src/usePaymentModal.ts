"use client"; // React Server Components: these run on the client (Next.js)

/**
 * `usePaymentModal`: the modal's open state for a session token the page already has
 * (as @chainrails/react's hook of that name); spread its result into
 * `<PaymentModal>`. Without a session endpoint there is no new session to fetch: when
 * the session has ended and the payer presses "Start again", the modal closes and
 * `onError` gets `session_expired`; give it a new token with `updateSession`.
 */
import { useCallback, useEffect, useState } from "react";

import type { PaymentCallbacks } from "./types.js";

export interface UsePaymentModalOptions extends PaymentCallbacks {
  sessionToken: string | null;
  amount?: string | undefined;
  /** intentd's base URL, passed on to `<PaymentModal>` (default: `configure`'s). */
  intentdUrl?: string | undefined;
}

export interface PaymentModalState extends PaymentCallbacks {
  sessionToken: string | null;
  updateSession: (session: { sessionToken: string; amount?: string }) => void;
  amount: string | undefined;
  isOpen: boolean;
  open: () => void;
  close: () => void;
  intentdUrl: string | undefined;
}

export function usePaymentModal(options: UsePaymentModalOptions): PaymentModalState {
  const { onSuccess, onCancel, onError, intentdUrl } = options;
  const [sessionToken, setToken] = useState(options.sessionToken);
  const [amount, setAmount] = useState(options.amount);
  const [isOpen, setOpen] = useState(false);

  useEffect(() => {
    setToken(options.sessionToken);
  }, [options.sessionToken]);

  const updateSession = useCallback((session: { sessionToken: string; amount?: string }) => {
    setToken(session.sessionToken);
    setAmount(session.amount);
  }, []);
  const open = useCallback(() => setOpen(true), []);
  const close = useCallback(() => setOpen(false), []);

  return { sessionToken, updateSession, amount, isOpen, open, close, onSuccess, onCancel, onError, intentdUrl };
}
