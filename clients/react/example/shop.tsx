// The demo shop of `make modal-demo` in React (http://127.0.0.1:8090/react): the page
// docs/payment-modal.md shows, and the page the browser tests build against React 18
// and 19 (tests/e2e/test_react_modal.py). Its backend (src/intentd_dev/modal_demo)
// answers POST /session?product=… with intentd's session JSON.
import { useState } from "react";
import { createRoot } from "react-dom/client";
import { PaymentModal, usePaymentSession, type PaymentResult } from "@intentd/react";

declare global {
  interface Window {
    lastPayment?: PaymentResult;
  }
}

const intentdUrl = document.documentElement.dataset.intentd ?? "http://127.0.0.1:8080";

function Product(props: { product: string; label: string; excludeChains?: string[]; say: (text: string) => void }) {
  const { product, label, excludeChains, say } = props;
  const session = usePaymentSession({
    session_url: `/session?product=${product}`,
    method: "POST",
    onSuccess: (payment) => {
      // Shown to the payer only: the order is paid when your backend reads the intent
      // (GET /api/v1/intents/{id} with your API key) or gets its webhook.
      say(`Paid: intent ${payment.id}, ${payment.intent_status}.`);
      window.lastPayment = payment;
    },
    onCancel: () => say("Payment cancelled."),
    onError: (error) => say(`Payment error: ${error.code}: ${error.message}`),
  });
  return (
    <>
      <button type="button" onClick={() => { say(""); session.open(); }}>{label}</button>
      <PaymentModal
        {...session}
        intentdUrl={intentdUrl}
        excludeChains={excludeChains}
        styles={{ accentColor: "#6d28d9", theme: "light" }}
      />
    </>
  );
}

function Shop() {
  const [result, say] = useState("");
  return (
    <main>
      <h1>Demo shop, in React</h1>
      <p>The same shop as <a href="/">the page without a framework</a>, with @intentd/react.</p>
      <div className="products">
        <Product product="coffee" label="Buy a coffee: 3 USDC" say={say} />
        <Product product="donation" label="Donate: you choose the amount" say={say} />
        <Product product="coffee" label="Buy a coffee, not from Base Testnet" excludeChains={["BASE_TESTNET"]} say={say} />
      </div>
      <p id="result" role="status" aria-live="polite">{result}</p>
    </main>
  );
}

createRoot(document.getElementById("root")!).render(<Shop />);
