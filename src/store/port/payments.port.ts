/** Part of the store port (../store.port.ts): the sandbox payment processor's own records. */

export interface PaymentRecord {
  status: 'authorized' | 'declined';
  amountCents: number;
}

/** What a `settleTo` call did: see PaymentGateway.settleTo. */
/** What the processor's authorisation under `key` is to be brought to: the ledger's amount at its version. */
export interface GatewayTarget {
  key: string;
  cardId: number;
  currency: string;
  amountCents: number;
  version: number;
}

export type SettleToResult = 'applied' | 'superseded' | 'not-authorised';

export interface PaymentStore {
  /** Records the first outcome for `key` and returns whichever outcome is stored for it. */
  authorizeOnce(request: {
    key: string;
    cardId: number;
    currency: string;
    amountCents: number;
    approved: boolean;
    now: number;
  }): Promise<PaymentRecord>;
  /**
   * Sets the payment under `key` to `amountCents` at `version` unless it holds that version or a later one
   * ('superseded'). A key with no authorisation: a target of 0 is recorded as a declined payment, so that an
   * authorisation arriving later under the key is declined; a target above 0 is 'not-authorised'.
   */
  settleTo(request: GatewayTarget & { now: number }): Promise<SettleToResult>;
  find(key: string): Promise<PaymentRecord | null>;
}
