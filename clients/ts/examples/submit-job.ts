import { readFileSync } from "node:fs";
import { DirectSecp256k1HdWallet } from "@cosmjs/proto-signing";
import { connectSigning, jobSpecFromJSON, marketTx } from "@flopsnet/client";

const wallet = await DirectSecp256k1HdWallet.fromMnemonic(process.env.MNEMONIC as string, { prefix: "flops" });
const [{ address }] = await wallet.getAccounts();
const client = await connectSigning(process.env.RPC ?? "http://127.0.0.1:26657", wallet);
const spec = jobSpecFromJSON(readFileSync(process.argv[2], "utf8")); // YAML or JSON, as the CLI reads it
const res = await client.signAndBroadcast(address, [{ typeUrl: "/flops.market.v1.MsgSubmitJob", value: { owner: address, spec } }], "auto");
const { jobId, escrow } = marketTx.MsgSubmitJobResponse.decode(res.msgResponses[0].value);
console.log(`job ${jobId} submitted in block ${res.height}, ${escrow} udps in escrow`);
client.disconnect();
