/**
 * The merchant's session endpoint's answer, read: the token, the amount, and when the
 * session ends on this browser's clock. Pure; no DOM, no network.
 *
 * The answer may carry intentd's names (`session_token`, `expires_at`: the JSON of
 * POST /api/v1/sessions) or Chainrails' (`sessionToken`, `expiresAt`: what
 * `crapi.auth.getSessionToken` answers, against Chainrails or intentd).
 */

/** A session as the hooks hold it. */
export interface Session {
  sessionToken: string;
  amount: string | undefined;
  /** When the session ends, in this browser's milliseconds (Date.now()), or null if unsaid. */
  expiresAt: number | null;
  /** When the answer arrived, in this browser's milliseconds. */
  receivedAt: number;
}

/** The longest a session is kept for a payment before it ends: an intent needs time
 * left on its session (intentd's `intents.min_expires_in`, 60 s by default) and the
 * payer needs time to choose. Shorter sessions keep half their life. */
export const FRESH_MARGIN_MS = 120_000;

export class SessionAnswerError extends Error {
  readonly code = "session_unavailable";
}

function field(body: Record<string, unknown>, ours: string, theirs: string): unknown {
  return body[ours] ?? body[theirs];
}

/**
 * Reads the endpoint's JSON. `serverDate` is the answer's Date header (the merchant
 * server's clock): the session's end is moved by the browser's offset from it, so a
 * browser whose clock is wrong neither throws a live session away nor keeps a dead one.
 */
export function readSession(body: unknown, receivedAt: number, serverDate: string | null): Session {
  if (typeof body !== "object" || body === null) {
    throw new SessionAnswerError("the session endpoint answered no JSON object");
  }
  const record = body as Record<string, unknown>;
  const token = field(record, "session_token", "sessionToken");
  if (typeof token !== "string" || token === "") {
    throw new SessionAnswerError("the session endpoint answered no session_token");
  }
  const amount = record.amount;
  const ends = field(record, "expires_at", "expiresAt");
  let expiresAt: number | null = null;
  if (typeof ends === "string" && !Number.isNaN(Date.parse(ends))) {
    const server = serverDate === null ? Number.NaN : Date.parse(serverDate);
    const offset = Number.isNaN(server) ? 0 : receivedAt - server;
    expiresAt = Date.parse(ends) + offset;
  }
  return {
    sessionToken: token,
    amount: typeof amount === "string" || typeof amount === "number" ? String(amount) : undefined,
    expiresAt,
    receivedAt,
  };
}

/**
 * Whether `session` can still be given to a payer at `now`: it ends more than
 * FRESH_MARGIN_MS from now (or half its life, for a short one). A session whose
 * end is unsaid is taken as fresh; intentd's checkout says so if it has ended.
 */
export function isFresh(session: Session, now: number): boolean {
  if (session.expiresAt === null) return true;
  const life = session.expiresAt - session.receivedAt;
  return session.expiresAt - now > Math.min(FRESH_MARGIN_MS, life / 2);
}
