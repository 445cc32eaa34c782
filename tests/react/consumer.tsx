// Type-checked against the packed declarations under React 18's and React 19's types
// (tests/unit/react/test_react_package.py): what a merchant writes compiles, what is
// wrong does not (each @ts-expect-error must meet an error, or the check fails).
import {
  configure,
  PaymentModal,
  usePaymentModal,
  usePaymentSession,
  type PaymentError,
  type PaymentResult,
} from "@intentd/react";

configure({ intentdUrl: "https://intentd.example" });

export function Checkout() {
  const session = usePaymentSession({
    session_url: "/pay-session",
    method: "POST",
    onSuccess: (payment: PaymentResult) => {
      const hash: string | undefined = payment.transactionHash;
      const id: number = payment.id;
      const status: string = payment.intent_status;
      console.log(hash, id, status, payment.tx_hash);
    },
    onCancel: () => {},
    onError: (error: PaymentError) => console.log(error.code, error.message),
  });
  const modal = usePaymentModal({ sessionToken: null, amount: "3" });
  modal.updateSession({ sessionToken: "itd_sess_x.y", amount: "3" });
  // @ts-expect-error session_url is required
  usePaymentSession({ method: "GET" });
  // @ts-expect-error the method is GET or POST
  usePaymentSession({ session_url: "/s", method: "PUT" });
  return (
    <>
      <button type="button" onClick={session.open} disabled={session.isPending}>Pay</button>
      {session.error ? <p role="alert">{session.error}</p> : null}
      <PaymentModal
        {...session}
        excludeChains={["BASE_TESTNET"]}
        styles={{ accentColor: "#6d28d9", theme: "system" }}
        className="kept-for-chainrails-code"
      />
      <PaymentModal {...modal} intentdUrl="https://intentd.example" lang="en" />
      {/* @ts-expect-error isOpen and close are required */}
      <PaymentModal sessionToken="itd_sess_x.y" />
      {/* @ts-expect-error onSuccess takes a PaymentResult */}
      <PaymentModal isOpen close={() => {}} onSuccess={(n: number) => n} />
    </>
  );
}
