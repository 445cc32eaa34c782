// The Chainrails SDK (@chainrails/sdk, as published) against a running intentd, used as a
// merchant who moves to intentd would: the only change is the SDK's base URL.
//
// Input (environment): INTENTD_API_URL (".../api/v1"), INTENTD_API_KEY (a test key),
// SDK_SOURCE_TOKEN (tokenIn on BASE_TESTNET), SDK_DESTINATION_TOKEN (tokenOut on
// ARBITRUM_TESTNET), SDK_SENDER, SDK_RECIPIENT, SDK_REFUND (addresses).
// Output: one JSON line per call, {"call", "ok": true, "value"} or {"call", "ok": false,
// "status", "body"}; the test (tests/e2e/test_chainrails_sdk.py) judges them. Exit 0
// unless the script itself breaks. Between creating the intent and triggering its
// processing, the script prints {"pay": intent_address, "amount": total} and waits for
// one line on stdin: the payer's transfer is mined.
import { createInterface } from "node:readline";
import { Chainrails, crapi } from "@chainrails/sdk";

const input = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const base = env("INTENTD_API_URL");
const sourceToken = env("SDK_SOURCE_TOKEN");
const destinationToken = env("SDK_DESTINATION_TOKEN");
const sender = env("SDK_SENDER");
const recipient = env("SDK_RECIPIENT");
const refund = env("SDK_REFUND");

async function call(name, run) {
  try {
    const value = await run();
    console.log(JSON.stringify({ call: name, ok: true, value }));
    return value;
  } catch (error) {
    const response = error.response;
    const body = response ? await response.text() : String(error);
    console.log(JSON.stringify({ call: name, ok: false, status: response?.status ?? null, body }));
    return null;
  }
}

// A list shows an intent once every transaction older than its own has ended
// (docs/api.md, "Listing intents"): ask again for a while before recording the answer.
async function listed(name, run, count) {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      const found = await run();
      if (count(found) > 0 || Date.now() > deadline) return call(name, async () => found);
    } catch {
      return call(name, run);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

await Chainrails.config({ api_key: env("INTENTD_API_KEY"), env: "staging" });
// The SDK has no base URL setting: its environments name Chainrails' hosts. This is
// the one change a merchant makes (docs/api.md, "Chainrails SDK compatibility").
Chainrails.getBaseUrl = () => base;

// --- the merchant's backend, with its API key ---------------------------------------
await call("chains.getSupported", () => crapi.chains.getSupported());
await call("chains.getSupported.testnet", () => crapi.chains.getSupported({ network: "testnet" }));
await call("quotes.getAll", () =>
  crapi.quotes.getAll({
    destinationChain: "ARBITRUM_TESTNET",
    tokenOut: destinationToken,
    amount: "3",
    recipient,
    excludeChains: "BASE_MAINNET,STARKNET_TESTNET",
  }),
);
const intent = await call("intents.create", () =>
  crapi.intents.create({
    sender,
    amount: "3",
    tokenIn: sourceToken,
    amountSymbol: "USDC",
    source_chain: "BASE_TESTNET",
    destination_chain: "ARBITRUM_TESTNET",
    recipient,
    refund_address: refund,
    metadata: { description: "a coffee", reference: "order-1" },
  }),
);
if (intent) {
  await call("intents.getById", () => crapi.intents.getById(String(intent.id)));
  await call("intents.getForAddress", () => crapi.intents.getForAddress(intent.intent_address));
  console.log(JSON.stringify({ pay: intent.intent_address, amount: intent.total_amount_in_asset_token }));
  await input.next();
  await call("intents.triggerProcessing", () =>
    crapi.intents.triggerProcessing(intent.intent_address),
  );
}
await listed("intents.getForSender", () => crapi.intents.getForSender(sender), (f) => f.length);
await listed(
  "intents.getAll",
  () => crapi.intents.getAll({ limit: 10, offset: 0, status: "funded" }),
  (f) => f.data.length,
);
await call("intents.getAll.offset", () => crapi.intents.getAll({ limit: 10, offset: 10 }));
const session = await call("auth.getSessionToken", () =>
  crapi.auth.getSessionToken({
    recipient,
    token: "USDC", // the SDK looks its address up in its own table of real tokens
    destinationChain: "ARBITRUM_TESTNET",
    amount: "2",
  }),
);

// --- the payment modal, with the session token only ----------------------------------
if (session) {
  await Chainrails.config({ api_key: "", seesion_token: session.sessionToken });
  await call("client.getClientInfoForSession", () => crapi.client.getClientInfoForSession());
  await call("quotes.getAllForSession", () =>
    crapi.quotes.getAllForSession({ amount: "2", excludeChains: "ARBITRUM_TESTNET" }),
  );
  const paid = await call("intents.createForSession", () =>
    crapi.intents.createForSession({
      sender,
      amount: "2",
      tokenIn: sourceToken,
      sourceChain: "BASE_TESTNET",
      refundAddress: refund,
      metadata: { description: "typed by the payer", reference: "not stored" },
    }),
  );
  if (paid) {
    await call("intents.getForSession", () => crapi.intents.getForSession(paid.intent_address));
    await call("intents.triggerProcessingForSession", () =>
      crapi.intents.triggerProcessingForSession(paid.intent_address),
    );
  }
  // a session token is not an API key: the merchant's calls stay closed to it
  await call("intents.getAll.withSessionToken", () => crapi.intents.getAll({ limit: 1 }));
}
process.exit(0); // stdin stays open
