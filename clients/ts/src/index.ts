// @flopsnet/client: the flops chain for CosmJS. Generated protobuf types (ts-proto), a
// Registry and AminoTypes that know every flops Msg, typed query clients for every flops
// module, and the connection helpers that avoid CosmJS's CometBFT 0.37 fallback (which
// drops block events and broadcastTxCommit results on the chain's CometBFT 0.39).
import { Registry, type OfflineSigner } from "@cosmjs/proto-signing";
import {
  AminoTypes,
  createDefaultAminoConverters,
  createProtobufRpcClient,
  defaultRegistryTypes,
  GasPrice,
  QueryClient,
  SigningStargateClient,
  StargateClient,
  type SigningStargateClientOptions,
} from "@cosmjs/stargate";
import { Comet38Client } from "@cosmjs/tendermint-rpc";

import { flopsAminoConverters } from "./amino.js";
import { QueryClientImpl as DpsQuery } from "./gen/flops/dps/v1/query.js";
import { QueryClientImpl as GflQuery } from "./gen/flops/gfl/v1/query.js";
import { QueryClientImpl as MarketQuery } from "./gen/flops/market/v1/query.js";
import { QueryClientImpl as ReputationQuery } from "./gen/flops/reputation/v1/query.js";
import { QueryClientImpl as StakingSlashQuery } from "./gen/flops/stakingslash/v1/query.js";
import { flopsTypes } from "./msgs.js";

export * as dpsTx from "./gen/flops/dps/v1/tx.js";
export * as dpsTypes from "./gen/flops/dps/v1/types.js";
export * as dpsQuery from "./gen/flops/dps/v1/query.js";
export * as gflTx from "./gen/flops/gfl/v1/tx.js";
export * as gflTypes from "./gen/flops/gfl/v1/types.js";
export * as gflQuery from "./gen/flops/gfl/v1/query.js";
export * as marketTx from "./gen/flops/market/v1/tx.js";
export * as marketTypes from "./gen/flops/market/v1/types.js";
export * as marketQuery from "./gen/flops/market/v1/query.js";
export * as reputationTx from "./gen/flops/reputation/v1/tx.js";
export * as reputationTypes from "./gen/flops/reputation/v1/types.js";
export * as reputationQuery from "./gen/flops/reputation/v1/query.js";
export * as stakingslashTx from "./gen/flops/stakingslash/v1/tx.js";
export * as stakingslashTypes from "./gen/flops/stakingslash/v1/types.js";
export * as stakingslashQuery from "./gen/flops/stakingslash/v1/query.js";
export { AminoConversionError, flopsAminoConverters, messageFromAmino, messageToAmino } from "./amino.js";
export { flopsTypes } from "./msgs.js";
export { msgs as flopsMsgs } from "./schema.js";
export { jobSpecFromJSON, nodeSpecFromJSON, poolSpecFromJSON, SpecError } from "./spec.js";
export { FAILED_ROOT_HEX, isFailedRoot } from "./results.js";
export {
  appendLog, delegateOutputs, delegationDoc, fetchOutputs, manifestRoot, productRoot, readLog, revocationDoc, revokeEverywhere, revokeOutputSessions,
  RevocationRefused, sendRevocation, signedFetch, utf8Complete, DELEGATION_DOMAIN, LOG_TRIMMED, MAX_LOG_CHUNK, MAX_MANIFEST_BYTES, PRODUCT_FILE,
  REVOCATION_DOMAIN,
} from "./outputs.js";
export type { Checked, CheckedFile, FetchOutputsOptions, Held, Manifest, OutputFile, OutputSigner, Revocation, RevokeResult } from "./outputs.js";
export type { PageRequest } from "./gen/cosmos/base/query/v1beta1/pagination.js";

/** The chain's constants: bech32 prefix, SLIP-44 coin type, the fee and staking denom. */
export const chain = {
  bech32Prefix: "flops",
  coinType: 118,
  feeDenom: "udps",
  displayDenom: "DPS",
  decimals: 6,
  /** the non-transferable index of verified power; never a fee */
  gflDenom: "ugfl",
} as const;

/** flopsRegistry: the SDK's default Msgs and every flops Msg. */
export function flopsRegistry(): Registry {
  return new Registry([...defaultRegistryTypes, ...flopsTypes]);
}

/** flopsAminoTypes: the SDK's default amino converters and every flops Msg's. */
export function flopsAminoTypes(): AminoTypes {
  return new AminoTypes({ ...createDefaultAminoConverters(), ...flopsAminoConverters() });
}

/**
 * connectSigning opens a signing client on a flops node's CometBFT RPC endpoint with the
 * flops Registry and AminoTypes. A Direct signer signs SIGN_MODE_DIRECT, an amino signer
 * (Ledger, Keplr's amino mode, a multisig member) SIGN_MODE_LEGACY_AMINO_JSON.
 */
export async function connectSigning(
  rpc: string,
  signer: OfflineSigner,
  options: SigningStargateClientOptions = {},
): Promise<SigningStargateClient> {
  const comet = await Comet38Client.connect(rpc);
  return SigningStargateClient.createWithSigner(comet, signer, {
    registry: flopsRegistry(),
    aminoTypes: flopsAminoTypes(),
    gasPrice: GasPrice.fromString(`0.025${chain.feeDenom}`),
    ...options,
  });
}

/** FlopsQueryClients: a StargateClient and the typed query client of every flops module. */
export interface FlopsQueryClients {
  stargate: StargateClient;
  market: MarketQuery;
  gfl: GflQuery;
  dps: DpsQuery;
  reputation: ReputationQuery;
  stakingslash: StakingSlashQuery;
  /** the CometBFT client they share: block and tx searches, block results, queries at a height */
  comet: Comet38Client;
  disconnect(): void;
}

/** connectQuery opens read-only clients on a flops node's CometBFT RPC endpoint. */
export async function connectQuery(rpc: string): Promise<FlopsQueryClients> {
  const comet = await Comet38Client.connect(rpc);
  const rpcClient = createProtobufRpcClient(new QueryClient(comet));
  return {
    stargate: await StargateClient.create(comet),
    market: new MarketQuery(rpcClient),
    gfl: new GflQuery(rpcClient),
    dps: new DpsQuery(rpcClient),
    reputation: new ReputationQuery(rpcClient),
    stakingslash: new StakingSlashQuery(rpcClient),
    comet,
    disconnect: () => comet.disconnect(),
  };
}
