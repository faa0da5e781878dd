// Wallets behind one interface: Keplr through window.keplr (the chain suggested from the
// repo's chain info first), or a local signer from a test mnemonic (demos and tests).
import { DirectSecp256k1HdWallet, type OfflineSigner } from "@cosmjs/proto-signing";
import { chain } from "@flopsnet/client";

import type { Config } from "./config.js";

export interface Wallet {
  kind: "keplr" | "local";
  address: string;
  signer: OfflineSigner;
}

interface Keplr {
  experimentalSuggestChain(info: unknown): Promise<void>;
  enable(chainId: string): Promise<void>;
  getOfflineSignerAuto(chainId: string): Promise<OfflineSigner>;
}

export function keplrAvailable(): boolean {
  return typeof (window as unknown as { keplr?: Keplr }).keplr !== "undefined";
}

export async function keplrWallet(cfg: Config): Promise<Wallet> {
  const keplr = (window as unknown as { keplr?: Keplr }).keplr;
  if (!keplr) throw new Error("Keplr is not installed in this browser");
  await keplr.experimentalSuggestChain(cfg.keplr);
  await keplr.enable(cfg.chainId);
  // Auto: direct signing for a software key, amino JSON for a Ledger (both are accepted).
  const signer = await keplr.getOfflineSignerAuto(cfg.chainId);
  const [account] = await signer.getAccounts();
  return { kind: "keplr", address: account.address, signer };
}

export async function localWallet(mnemonic: string): Promise<Wallet> {
  const signer = await DirectSecp256k1HdWallet.fromMnemonic(mnemonic, { prefix: chain.bech32Prefix });
  const [account] = await signer.getAccounts();
  return { kind: "local", address: account.address, signer };
}
