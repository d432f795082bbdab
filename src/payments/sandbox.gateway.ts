import type { Store } from '../store/port/store.port.js';
import type { AuthorizeResult, PaymentGateway } from './payment-gateway.js';

/**
 * The sandbox processor behind `card:add` cards: it keeps its authorisations in the store's payment records
 * and declines every authorisation on a card added with `--decline`; `latencyMs` simulates a processor's delay.
 */
export function createSandboxGateway(
  store: Pick<Store, 'payments' | 'clients'>,
  clock: () => number = Date.now,
  latencyMs = 0,
): PaymentGateway {
  // Whether a card declines is fixed when it is added, and cards are never deleted: once read, it is kept
  // (bounded), so an authorisation costs the store one statement, not two.
  const declines = new Map<number, boolean>();
  const cardDeclines = async (cardId: number): Promise<boolean | null> => {
    const known = declines.get(cardId);
    if (known !== undefined) return known;
    const card = await store.clients.findCardById(cardId);
    if (!card) return null;
    if (declines.size >= 10_000) declines.clear();
    declines.set(cardId, card.declines);
    return card.declines;
  };
  return {
    // Its records are the store's payment rows (authorizeOnce, settleTo): commits in the order store itself.
    inStore: true,
    async authorize({ key, cardId, amountCents, currency }): Promise<AuthorizeResult> {
      // A real processor answers in tens of milliseconds; the sandbox can be told to take as long.
      if (latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, latencyMs));
      const approved = (await cardDeclines(cardId)) === false;
      const record = await store.payments.authorizeOnce({
        key,
        cardId,
        currency,
        amountCents,
        approved,
        now: clock(),
      });
      return { approved: record.status === 'authorized', amountCents: record.amountCents };
    },
    async settleTo(request) {
      if (!Number.isSafeInteger(request.amountCents) || request.amountCents < 0)
        throw new RangeError(`payment ${request.key}: target ${request.amountCents} cents is not an amount`);
      return store.payments.settleTo({ ...request, now: clock() });
    },
  };
}
