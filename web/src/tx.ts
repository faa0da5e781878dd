// Signing: every Msg is simulated first (the chain's own checks, so nothing invalid is ever
// broadcast), then signed with 1.5x the simulated gas and broadcast; a tx that fails in its
// block is an error too.
import type { EncodeObject } from "@cosmjs/proto-signing";
import { calculateFee, GasPrice, type DeliverTxResponse } from "@cosmjs/stargate";

import { errorText, type Chain } from "./chain.js";

export class TxError extends Error {
  /** field: the spec field the chain named first in its error, when it named one */
  constructor(message: string, readonly field?: string) {
    super(message);
    this.name = "TxError";
  }
}

/** fieldOf reads the field a chain validation error starts with ("task_count 0: must be
 * 1 to 64: invalid job spec" -> "task_count"). */
export function fieldOf(message: string): string | undefined {
  const m = /^(?:spec\.)?([a-z_]+(?:\[\d+\])?(?:\.[a-z_]+(?:\[\d+\])?)*)[ :]/.exec(message);
  return m?.[1];
}

export async function simulate(chain: Chain, msgs: EncodeObject[]): Promise<number> {
  if (!chain.signing || !chain.wallet) throw new TxError("connect a wallet first");
  try {
    return await chain.signing.simulate(chain.wallet.address, msgs, "");
  } catch (e) {
    const text = errorText(e);
    throw new TxError(text, fieldOf(text));
  }
}

export async function send(chain: Chain, msgs: EncodeObject[]): Promise<DeliverTxResponse> {
  const gas = await simulate(chain, msgs);
  const fee = calculateFee(Math.ceil(gas * 1.5), GasPrice.fromString(chain.config.gasPrice));
  let res: DeliverTxResponse;
  try {
    res = await chain.signing!.signAndBroadcast(chain.wallet!.address, msgs, fee, "");
  } catch (e) {
    throw new TxError(errorText(e));
  }
  if (res.code !== 0) {
    const text = errorText(res.rawLog ?? `code ${res.code}`);
    throw new TxError(`the tx failed in block ${res.height}: ${text}`, fieldOf(text));
  }
  return res;
}
