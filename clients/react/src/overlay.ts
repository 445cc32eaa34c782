/**
 * The modal's overlay on the merchant's page, made as intentd's `/pay/modal.js` makes
 * it: a dialog host in a closed shadow root, styled with inline `!important`
 * properties (the page's CSS cannot reach or break it), holding an iframe of intentd's
 * checkout. The frame's messages are taken only from that frame and intentd's origin.
 *
 * Only called from effects, in a browser; nothing here runs at import.
 */
import { readFrameMessage, type FrameEvent } from "./checkout.js";

export interface OverlayOptions {
  /** intentd's origin: messages from any other are ignored. */
  origin: string;
  label: string;
  theme: string | undefined;
  /** A message of the frame, read. */
  onEvent: (event: FrameEvent) => void;
  /** Escape pressed on the page (the frame handles its own). */
  onEscape: () => void;
}

export interface Overlay {
  /** Shows the checkout at `src` (replacing a frame already shown). */
  show(src: string): void;
  /** Removes the overlay and gives focus back; safe to call twice. */
  destroy(): void;
}

function css(element: HTMLElement, rules: Record<string, string>): void {
  for (const [name, value] of Object.entries(rules)) element.style.setProperty(name, value, "important");
}

function dark(theme: string | undefined): boolean {
  if (theme === "dark") return true;
  return theme === "system" && window.matchMedia?.("(prefers-color-scheme: dark)").matches === true;
}

export function openOverlay(options: OverlayOptions): Overlay {
  const previous = document.activeElement;
  const overflow = document.body.style.overflow;
  const host = document.createElement("div");
  const root = host.attachShadow({ mode: "closed" });
  const box = document.createElement("div");
  let frame: HTMLIFrameElement | null = null;
  let destroyed = false;

  css(host, {
    all: "initial", position: "fixed", inset: "0", "z-index": "2147483647", display: "flex",
    "align-items": "center", "justify-content": "center", background: "rgba(15, 23, 42, 0.55)",
  });
  host.setAttribute("role", "dialog");
  host.setAttribute("aria-modal", "true");
  host.setAttribute("aria-label", options.label);
  css(box, {
    width: "min(440px, 100vw)", height: "min(760px, 100vh)",
    background: dark(options.theme) ? "#0f172a" : "#fff",
    "border-radius": "min(12px, calc((100vw - 440px) * 99))", overflow: "hidden",
    "box-shadow": "0 20px 50px rgba(0, 0, 0, 0.3)", display: "flex",
  });
  root.appendChild(box);
  document.body.appendChild(host);
  document.body.style.overflow = "hidden";

  function onMessage(event: MessageEvent): void {
    if (!frame || event.source !== frame.contentWindow || event.origin !== options.origin) return;
    const read = readFrameMessage(event.data);
    if (read === null) return;
    if (read.event === "resize") {
      css(box, { height: `min(${Math.ceil(read.height)}px, 100vh)` });
      return;
    }
    options.onEvent(read);
  }

  function onKey(event: KeyboardEvent): void {
    if (event.key === "Escape") options.onEscape();
  }

  window.addEventListener("message", onMessage);
  document.addEventListener("keydown", onKey, true);

  return {
    show(src: string): void {
      if (destroyed) return;
      frame?.remove();
      frame = document.createElement("iframe");
      frame.title = options.label;
      frame.setAttribute("allow", "clipboard-write");
      css(frame, { border: "0", width: "100%", height: "100%", display: "block" });
      frame.src = src;
      box.appendChild(frame);
      frame.focus();
    },
    destroy(): void {
      if (destroyed) return;
      destroyed = true;
      window.removeEventListener("message", onMessage);
      document.removeEventListener("keydown", onKey, true);
      host.remove();
      document.body.style.overflow = overflow;
      if (previous instanceof HTMLElement) previous.focus();
    },
  };
}
