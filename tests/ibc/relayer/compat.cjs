// Loaded with `node -r ./compat.cjs` before ts-relayer (@confio/relayer 0.12), the newest IBC
// relayer installable here, so that it can relay between chains on Cosmos SDK 0.54 and
// ibc-go v11. It is a compatibility layer over three changes the relayer predates; it changes
// nothing the relayer signs or proves:
//
// 1. SDK 0.54 account numbers use all 64 bits. CosmJS before 0.39 parses them into a JS number
//    and throws ("Number can only safely store up to 53 bits"), so package.json overrides
//    every @cosmjs package to 0.39, which keeps them as bigint.
// 2. CosmJS 0.39's QueryClient dropped queryRawProof, which the relayer calls for every IBC
//    proof. It is restored below as CosmJS 0.32 wrote it: an ABCI store query with prove=true,
//    the key checked, the proof ops passed through unchanged (the counterparty chain verifies
//    them, so a wrong proof fails there, not here).
// 3. ibc-go v10+ writes packet data and acks only as packet_data_hex / packet_ack_hex; the
//    relayer reads packet_data / packet_ack. The string attribute is added back as the hex
//    decoded as UTF-8, which is exact for ICS-20's JSON packets (the only ones relayed here).
//    CometBFT 0.38+ block results carry finalize-block events, not begin/end-block ones.
"use strict";

const { QueryClient, fromTendermintEvent } = require("@cosmjs/stargate");
const utils = require("@confio/relayer/build/lib/utils");

const sameBytes = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

QueryClient.prototype.queryRawProof = async function queryRawProof(store, queryKey, desiredHeight) {
  const response = await this.cometClient.abciQuery({
    path: `/store/${store}/key`,
    data: queryKey,
    prove: true,
    height: desiredHeight,
  });
  if (response.code) throw new Error(`Query failed with (${response.code}): ${response.log}`);
  if (!sameBytes(queryKey, response.key)) throw new Error("Response key doesn't match the query key");
  if (!response.height) throw new Error("No query height returned");
  const ops = response.proof?.ops ?? [];
  if (ops.length !== 2) throw new Error(`Expected 2 proof ops, got ${ops.length}`);
  return {
    key: response.key,
    value: response.value,
    height: response.height - 1,
    proof: { ops: ops.map(({ type, key, data }) => ({ type, key, data })) },
  };
};

const withStringAttributes = (events) =>
  events.map(fromTendermintEvent).map(({ type, attributes }) => {
    const have = new Set(attributes.map((a) => a.key));
    const added = attributes
      .filter((a) => a.key.endsWith("_hex") && !have.has(a.key.slice(0, -4)))
      .map((a) => ({ key: a.key.slice(0, -4), value: Buffer.from(a.value, "hex").toString("utf8") }));
    return { type, attributes: [...attributes, ...added] };
  });

const parsePackets = utils.parsePacketsFromEvents;
const parseAcks = utils.parseAcksFromTxEvents;
utils.parsePacketsFromEvents = (events) => parsePackets(withStringAttributes(events));
utils.parsePacketsFromTendermintEvents = (events) => parsePackets(withStringAttributes(events));
utils.parseAcksFromTxEvents = (events) => parseAcks(withStringAttributes(events));
utils.parsePacketsFromBlockResult = (result) =>
  parsePackets(
    withStringAttributes([
      ...(result.beginBlockEvents ?? []),
      ...(result.endBlockEvents ?? []),
      ...(result.finalizeBlockEvents ?? []),
    ]),
  );
