/**
 * The package's public types. Names follow @chainrails/react where it has one
 * (PaymentModalStyles, PaymentModalProps); the records are intentd's.
 */

/**
 * An intent record as intentd's API renders it (docs/intents.md): the fields a
 * merchant's page most often reads, and every other field of the record as well.
 */
export interface IntentRecord {
  id: number;
  intent_address: string;
  intent_status: string;
  funding_status: string;
  source_chain: string;
  destination_chain: string;
  amount_received: string;
  total_amount_in_asset_token: string;
  asset_token_symbol: string;
  asset_token_decimals: number;
  recipient: string;
  refund_address: string;
  /** The transaction that paid the recipient (the relayer's), once sent. */
  tx_hash: string | null;
  session_id: string | null;
  [field: string]: unknown;
}

/**
 * What `onSuccess` receives: the intent record as the payer's page last read it,
 * COMPLETED, with its `tx_hash` also as `transactionHash` (the name of Chainrails'
 * callback). It comes from the payer's browser: it is not proof of payment. Confirm
 * with your backend (GET /api/v1/intents/{id} with your API key, or a webhook).
 */
export type PaymentResult = IntentRecord & { transactionHash?: string };

/** A failure the modal or the session endpoint reports: a stable code and a text. */
export interface PaymentError {
  code: string;
  message: string;
}

/** intentd's themes: "light" (the default), "dark", "system" (follows the browser). */
export type Theme = "light" | "dark" | "system";

export interface PaymentModalStyles {
  /** A CSS colour (#rgb, #rrggbb, rgb(), hsl() or a colour name) for buttons and links. */
  accentColor?: string;
  /** "light", "dark" or "system"; any other name is "light". */
  theme?: Theme | (string & Record<never, never>);
}

/** The callbacks both hooks take and pass on to `<PaymentModal>`. */
export interface PaymentCallbacks {
  onSuccess?: (result: PaymentResult) => void;
  onCancel?: () => void;
  onError?: (error: PaymentError) => void;
}
