/**
 * The protocol between the page and intentd's checkout frame (docs/payment-modal.md,
 * "Messages between the frame and the page"): the frame's address, and its messages
 * read into typed events. Pure; no DOM, no network.
 */
import type { IntentRecord, PaymentError, PaymentResult } from "./types.js";

export interface FrameOptions {
  /** The page's origin: the only one the frame posts its messages to. */
  parentOrigin: string;
  excludeChains?: readonly string[] | undefined;
  lang?: string | undefined;
  theme?: string | undefined;
  accentColor?: string | undefined;
}

/**
 * The checkout's address for a session. Everything goes in the fragment, which the
 * browser never sends to a server, so the session token stays out of every log.
 */
export function checkoutUrl(base: string, sessionToken: string, options: FrameOptions): string {
  const params = new URLSearchParams({ session: sessionToken, embed: "1", origin: options.parentOrigin });
  const exclude = (options.excludeChains ?? []).map(String).filter((name) => name !== "");
  if (exclude.length > 0) params.set("exclude", exclude.join(","));
  if (options.lang) params.set("lang", options.lang);
  if (options.theme) params.set("theme", options.theme);
  if (options.accentColor) params.set("accent", options.accentColor);
  return `${base}pay/checkout#${params.toString()}`;
}

export type FrameEvent =
  | { event: "success"; intent: IntentRecord }
  | { event: "error"; error: PaymentError }
  | { event: "resize"; height: number }
  | { event: "cancel" | "close" | "restart" | "expired" | "cancelled" | "ready" };

const PLAIN = new Set(["cancel", "close", "restart", "expired", "cancelled", "ready"]);

/** A frame message as an event, or null for anything else (other tools' messages too). */
export function readFrameMessage(data: unknown): FrameEvent | null {
  if (typeof data !== "object" || data === null) return null;
  const message = data as Record<string, unknown>;
  if (message.type !== "intentd-pay" || typeof message.event !== "string") return null;
  const event = message.event;
  if (event === "success") {
    const intent = message.intent;
    if (typeof intent !== "object" || intent === null) return null;
    return { event, intent: intent as IntentRecord };
  }
  if (event === "error") {
    const error = (typeof message.error === "object" && message.error) || {};
    const { code, message: text } = error as Record<string, unknown>;
    return {
      event,
      error: { code: typeof code === "string" ? code : "error", message: typeof text === "string" ? text : "" },
    };
  }
  if (event === "resize") {
    const height = message.height;
    return typeof height === "number" && Number.isFinite(height) && height > 0 ? { event, height } : null;
  }
  if (PLAIN.has(event)) return { event } as FrameEvent;
  return null;
}

/** What onSuccess receives: the record, with `tx_hash` also as `transactionHash`. */
export function paymentResult(intent: IntentRecord): PaymentResult {
  const hash = typeof intent.tx_hash === "string" && intent.tx_hash !== "" ? intent.tx_hash : undefined;
  return hash === undefined ? { ...intent } : { ...intent, transactionHash: hash };
}
