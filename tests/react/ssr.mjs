// Server rendering of @intentd/react in Node, without a DOM: importing it touches no
// `window` (it would throw here), and a page with both hooks and an open modal renders
// to a string (the modal renders nothing: it opens only in a browser, in an effect).
// Prints {"react", "html", "window"} as JSON.
import { createElement as h, version } from "react";
import { renderToString } from "react-dom/server";
import { PaymentModal, usePaymentModal, usePaymentSession } from "@intentd/react";

function Page() {
  const session = usePaymentSession({ session_url: "/pay-session", method: "POST" });
  const modal = usePaymentModal({ sessionToken: "itd_sess_x.y" });
  return h(
    "main",
    null,
    h("button", { type: "button", onClick: session.open }, "Pay 3 USDC"),
    h(PaymentModal, { ...session, isOpen: true, sessionToken: "itd_sess_x.y", intentdUrl: "https://intentd.example" }),
    h(PaymentModal, { ...modal, excludeChains: ["BASE_TESTNET"], styles: { theme: "dark" } }),
  );
}

console.log(JSON.stringify({ react: version, html: renderToString(h(Page)), window: typeof window }));
