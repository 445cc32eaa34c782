// The package's pure parts (node --test, against the packed package): the session
// endpoint's answer read in either naming, with the browser's clock offset; when a
// session is too old for a payment; the checkout's address (the token in the fragment
// only); the frame's messages read, anything else ignored; what onSuccess receives.
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkoutUrl, configure, isFresh, paymentResult, readFrameMessage, readSession } from "@intentd/react";

const NOW = Date.parse("2026-11-26T12:00:00Z");

test("a session answer in intentd's names or the Chainrails SDK's", () => {
  const ours = readSession(
    { session_token: "itd_sess_a.b", amount: "3", expires_at: "2026-11-26T12:15:00Z", session_id: "ses_1" },
    NOW,
    null,
  );
  assert.deepEqual(ours, { sessionToken: "itd_sess_a.b", amount: "3", expiresAt: NOW + 900_000, receivedAt: NOW });
  const theirs = readSession({ sessionToken: "itd_sess_c.d", amount: 2, expiresAt: "2026-11-26T12:01:00Z" }, NOW, null);
  assert.deepEqual(theirs, { sessionToken: "itd_sess_c.d", amount: "2", expiresAt: NOW + 60_000, receivedAt: NOW });
  const open = readSession({ session_token: "t", amount: null }, NOW, null);
  assert.equal(open.amount, undefined);
  assert.equal(open.expiresAt, null);
});

test("the session's end moves with the browser's offset from the server's clock", () => {
  // the browser runs 5 minutes fast: the session still has its 15 minutes
  const fast = NOW + 300_000;
  const session = readSession(
    { session_token: "t", expires_at: "2026-11-26T12:15:00Z" },
    fast,
    "Thu, 26 Nov 2026 12:00:00 GMT",
  );
  assert.equal(session.expiresAt - fast, 900_000);
  assert.equal(isFresh(session, fast + 60_000), true);
  const unreadable = readSession({ session_token: "t", expires_at: "2026-11-26T12:15:00Z" }, fast, "yesterday");
  assert.equal(unreadable.expiresAt, NOW + 900_000);
});

test("answers without a token are refused with session_unavailable", () => {
  for (const body of [null, "itd_sess_x", {}, { session_token: "" }, { session_token: 5 }, { token: "x" }]) {
    assert.throws(() => readSession(body, NOW, null), (err) => err.code === "session_unavailable", String(body));
  }
});

test("a session is fresh until two minutes before its end, a short one until half its life", () => {
  const long = readSession({ session_token: "t", expires_at: "2026-11-26T12:15:00Z" }, NOW, null);
  assert.equal(isFresh(long, NOW + 779_000), true);
  assert.equal(isFresh(long, NOW + 780_000), false);
  assert.equal(isFresh(long, NOW + 2_000_000), false);
  const short = readSession({ session_token: "t", expires_at: "2026-11-26T12:01:00Z" }, NOW, null);
  assert.equal(isFresh(short, NOW + 29_000), true);
  assert.equal(isFresh(short, NOW + 30_000), false);
  const unsaid = readSession({ session_token: "t" }, NOW, null);
  assert.equal(isFresh(unsaid, NOW + 10 ** 9), true);
});

test("the checkout's address carries everything in its fragment", () => {
  const url = new URL(
    checkoutUrl("https://pay.example.com/intentd/", "itd_sess_secret.sig", {
      parentOrigin: "https://shop.example",
      excludeChains: ["BASE_TESTNET", "", "ARBITRUM_MAINNET"],
      lang: "en",
      theme: "dark",
      accentColor: "#6d28d9",
    }),
  );
  assert.equal(url.origin + url.pathname, "https://pay.example.com/intentd/pay/checkout");
  assert.equal(url.search, "");
  const fragment = new URLSearchParams(url.hash.slice(1));
  assert.deepEqual(Object.fromEntries(fragment), {
    session: "itd_sess_secret.sig",
    embed: "1",
    origin: "https://shop.example",
    exclude: "BASE_TESTNET,ARBITRUM_MAINNET",
    lang: "en",
    theme: "dark",
    accent: "#6d28d9",
  });
  const bare = new URL(checkoutUrl("https://i.example/", "t", { parentOrigin: "https://s.example" }));
  assert.deepEqual([...new URLSearchParams(bare.hash.slice(1)).keys()], ["session", "embed", "origin"]);
});

test("configure takes http(s) URLs only", () => {
  assert.throws(() => configure({ intentdUrl: "javascript:alert(1)" }), TypeError);
  assert.throws(() => configure({ intentdUrl: "not a url" }), TypeError);
  configure({ intentdUrl: "https://pay.example.com" });
});

test("the frame's messages are read; anything else is ignored", () => {
  const intent = { id: 7, intent_status: "COMPLETED", tx_hash: "0xabc" };
  assert.deepEqual(readFrameMessage({ type: "intentd-pay", event: "success", intent }), { event: "success", intent });
  assert.deepEqual(readFrameMessage({ type: "intentd-pay", event: "cancel" }), { event: "cancel" });
  assert.deepEqual(readFrameMessage({ type: "intentd-pay", event: "restart" }), { event: "restart" });
  assert.deepEqual(readFrameMessage({ type: "intentd-pay", event: "resize", height: 412.5 }), {
    event: "resize",
    height: 412.5,
  });
  assert.deepEqual(readFrameMessage({ type: "intentd-pay", event: "error", error: { code: "network" } }), {
    event: "error",
    error: { code: "network", message: "" },
  });
  assert.deepEqual(readFrameMessage({ type: "intentd-pay", event: "error" }), {
    event: "error",
    error: { code: "error", message: "" },
  });
  for (const data of [
    null,
    "success",
    { type: "other", event: "success", intent },
    { type: "intentd-pay", event: "success" },
    { type: "intentd-pay", event: "success", intent: null },
    { type: "intentd-pay", event: "resize", height: -1 },
    { type: "intentd-pay", event: "resize", height: "9" },
    { type: "intentd-pay", event: "launch" },
    { type: "intentd-pay" },
  ]) {
    assert.equal(readFrameMessage(data), null, JSON.stringify(data));
  }
});

test("onSuccess gets the record with tx_hash also as transactionHash", () => {
  const sent = paymentResult({ id: 1, intent_status: "COMPLETED", tx_hash: "0xdef" });
  assert.equal(sent.transactionHash, "0xdef");
  assert.equal(sent.tx_hash, "0xdef");
  const unsent = paymentResult({ id: 2, intent_status: "COMPLETED", tx_hash: null });
  assert.equal("transactionHash" in unsent, false);
});
