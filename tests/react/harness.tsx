// The browser tests' probe of @intentd/react (tests/unit/react/test_react_modal_frame.py):
// both hooks and two modals against a fake intentd whose checkout the test drives, so
// each callback and each session request can be watched. window.events logs callbacks.
import { createRoot } from "react-dom/client";
import { PaymentModal, usePaymentModal, usePaymentSession } from "@intentd/react";

type Logged = [string, unknown?];
declare global {
  interface Window {
    events: Logged[];
  }
}
window.events = [];
const log = (name: string) => (value?: unknown) => window.events.push(value === undefined ? [name] : [name, value]);

function Probe() {
  const session = usePaymentSession({
    session_url: "/session",
    onSuccess: log("success"),
    onCancel: log("cancel"),
    onError: log("error"),
  });
  const modal = usePaymentModal({
    sessionToken: "itd_sess_fixed",
    onSuccess: log("modal-success"),
    onCancel: log("modal-cancel"),
    onError: log("modal-error"),
  });
  const state = { token: session.sessionToken ?? null, pending: session.isPending, error: session.error };
  return (
    <main>
      <button type="button" onClick={session.open}>Pay by session</button>
      <button type="button" onClick={modal.open}>Pay by token</button>
      <output id="state">{JSON.stringify({ ...state, open: session.isOpen, modalOpen: modal.isOpen })}</output>
      <PaymentModal
        {...session}
        intentdUrl="http://intentd.test"
        excludeChains={["BASE_TESTNET"]}
        styles={{ theme: "dark", accentColor: "#6d28d9" }}
      />
      <PaymentModal {...modal} intentdUrl="http://intentd.test/sub/" label="Checkout" />
    </main>
  );
}

createRoot(document.getElementById("root")!).render(<Probe />);
