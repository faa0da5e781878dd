// The client against a running chain (FLOPS_RPC, FLOPS_MNEMONIC: an account with DPS). Run
// by tests/e2e (TestNetworkBlocksParamsAndBankSend) on an in-process network, or by hand
// against `make localnet`:
//
//	FLOPS_RPC=http://127.0.0.1:26657 FLOPS_MNEMONIC="..." node --test dist/test/live.test.js
//
// Two accounts from the mnemonic, one signing SIGN_MODE_DIRECT and one
// SIGN_MODE_LEGACY_AMINO_JSON (as a Ledger or a multisig member does), each sign every flops
// Msg. A tx that reaches a block passed the chain's signature check (a refused signature
// ends in CheckTx); the lifecycle a client and a provider start with must also succeed:
// bond, register a node, submit and cancel a job, open a pool, post units and close it. An
// amino-signed tx whose body a relay changed after signing is refused.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";

import { makeCosmoshubPath, Secp256k1HdWallet } from "@cosmjs/amino";
import { DirectSecp256k1HdWallet, type OfflineSigner } from "@cosmjs/proto-signing";
import { BroadcastTxError, type DeliverTxResponse, type SigningStargateClient, type StdFee } from "@cosmjs/stargate";
import { TxBody, TxRaw } from "cosmjs-types/cosmos/tx/v1beta1/tx";

import {
  chain,
  connectQuery,
  connectSigning,
  type FlopsQueryClients,
  flopsMsgs,
  gflTx,
  jobSpecFromJSON,
  marketTx,
  nodeSpecFromJSON,
  poolSpecFromJSON,
} from "../src/index.js";
import { type FieldSchema, messages } from "../src/schema.js";

const rpc = process.env.FLOPS_RPC;
const mnemonic = process.env.FLOPS_MNEMONIC;
const skip = !rpc || !mnemonic ? "FLOPS_RPC and FLOPS_MNEMONIC are not set" : false;

const examples = new URL("../../../../examples/", import.meta.url);
const example = (name: string) => readFileSync(new URL(name, examples), "utf8");

const fee: StdFee = { amount: [{ denom: chain.feeDenom, amount: "25000" }], gas: "1000000" };

// filled sets every field of a Msg, at every depth, to a value that is not its default, so
// that the signature covers every field; the signer field holds the signer.
function filled(typeName: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of messages[typeName].f) {
    out[f.t] = f.r ? [value(f)] : value(f);
  }
  return out;
}

function value(f: FieldSchema): unknown {
  switch (f.k) {
    case "message":
      return filled(f.m as string);
    case "timestamp":
      return { seconds: 1_900_000_000n, nanos: 7 };
    case "duration":
      return { seconds: 7n, nanos: 7 };
    case "string":
      return f.e === "dec" ? "7000000000000000000" : "7";
    case "bool":
      return true;
    case "bytes":
      return new Uint8Array([7, 7, 7]);
    case "int64":
    case "uint64":
      return 7n;
    case "enum":
      return 1;
    default:
      return 7;
  }
}

interface Signer {
  mode: "direct" | "amino";
  address: string;
  client: SigningStargateClient;
}

async function send(s: Signer, typeUrl: string, value: object): Promise<DeliverTxResponse> {
  try {
    return await s.client.signAndBroadcast(s.address, [{ typeUrl, value }], fee, `ts ${s.mode}`);
  } catch (e) {
    if (e instanceof BroadcastTxError) {
      assert.fail(`${typeUrl} (${s.mode}) refused before a block, code ${e.code} ${e.codespace}: ${e.log}`);
    }
    throw e;
  }
}

async function ok(s: Signer, typeUrl: string, value: object): Promise<DeliverTxResponse> {
  const res = await send(s, typeUrl, value);
  assert.equal(res.code, 0, `${typeUrl} (${s.mode}) failed in the block: ${res.rawLog}`);
  return res;
}

function response<T>(res: DeliverTxResponse, codec: { decode(b: Uint8Array): T }): T {
  assert.equal(res.msgResponses.length, 1);
  return codec.decode(res.msgResponses[0].value);
}

describe("flops client against a running chain", { skip }, () => {
  let query: FlopsQueryClients;
  const signers: Signer[] = [];

  before(async () => {
    query = await connectQuery(rpc as string);
    const direct = await DirectSecp256k1HdWallet.fromMnemonic(mnemonic as string, {
      prefix: chain.bech32Prefix,
      hdPaths: [makeCosmoshubPath(0)],
    });
    const amino = await Secp256k1HdWallet.fromMnemonic(mnemonic as string, {
      prefix: chain.bech32Prefix,
      hdPaths: [makeCosmoshubPath(1)],
    });
    for (const [mode, w] of [
      ["direct", direct],
      ["amino", amino],
    ] as [Signer["mode"], OfflineSigner][]) {
      const [account] = await w.getAccounts();
      signers.push({
        mode,
        address: account.address,
        client: await connectSigning(rpc as string, w, { broadcastPollIntervalMs: 200 }),
      });
    }
  });

  after(() => {
    query?.disconnect();
    for (const s of signers) s.client.disconnect();
  });

  test("queries: chain id, balance, every module's params", async () => {
    assert.match(await query.stargate.getChainId(), /.+/);
    const bal = await query.stargate.getBalance(signers[0].address, chain.feeDenom);
    assert.ok(BigInt(bal.amount) >= 350_000_000n, `the direct account holds ${bal.amount}${bal.denom}`);
    assert.ok((await query.market.Params({})).params !== undefined);
    assert.ok((await query.gfl.Params({})).params !== undefined);
    assert.ok((await query.dps.Params({})).params !== undefined);
    assert.ok((await query.reputation.Params({})).params !== undefined);
    assert.ok((await query.stakingslash.Params({})).params !== undefined);
  });

  test("bank send, direct to amino, then amino back", async () => {
    const [d, a] = signers;
    const r1 = await d.client.sendTokens(d.address, a.address, [{ denom: chain.feeDenom, amount: "170000000" }], fee);
    assert.equal(r1.code, 0, r1.rawLog);
    const before = BigInt((await query.stargate.getBalance(d.address, chain.feeDenom)).amount);
    const r2 = await a.client.sendTokens(a.address, d.address, [{ denom: chain.feeDenom, amount: "1234" }], fee);
    assert.equal(r2.code, 0, r2.rawLog);
    const after = BigInt((await query.stargate.getBalance(d.address, chain.feeDenom)).amount);
    assert.equal(after - before, 1234n);
  });

  // the two accounts run side by side
  describe("each sign mode", { concurrency: true }, () => {
  for (const mode of ["direct", "amino"] as const) {
    describe(`${mode} signing`, { concurrency: 1 }, () => {
      const s = () => signers.find((x) => x.mode === mode) as Signer;

      test("a provider bonds, registers a node and updates it", async () => {
        await ok(s(), "/flops.stakingslash.v1.MsgBond", { provider: s().address, amount: { denom: chain.feeDenom, amount: "100000000" } });
        // examples/node.yaml's first GPU (one GPU needs 100 DPS of collateral)
        const spec = nodeSpecFromJSON(example("node.yaml"));
        spec.gpus = spec.gpus.slice(0, 1);
        spec.gpus[0].uuid = `GPU-ts-${mode}`;
        const reg = response(await ok(s(), "/flops.gfl.v1.MsgRegisterNode", { operator: s().address, spec }), gflTx.MsgRegisterNodeResponse);
        assert.ok(reg.nodeId > 0n);
        const node = await query.gfl.Node({ nodeId: reg.nodeId });
        assert.equal(node.node?.operator, s().address);
        assert.equal(node.node?.gpus.length, 1);
        assert.equal(node.node?.region, "eu-west");
        spec.region = `ts-${mode}`;
        await ok(s(), "/flops.gfl.v1.MsgUpdateNode", { operator: s().address, nodeId: reg.nodeId, spec });
        assert.equal((await query.gfl.Node({ nodeId: reg.nodeId })).node?.region, `ts-${mode}`);
      });

      test("a client submits a job from examples/job.yaml and cancels it", async () => {
        const spec = jobSpecFromJSON(example("job.yaml"));
        const before = BigInt((await query.stargate.getBalance(s().address, chain.feeDenom)).amount);
        const res = await ok(s(), "/flops.market.v1.MsgSubmitJob", { owner: s().address, spec });
        const { jobId, escrow } = response(res, marketTx.MsgSubmitJobResponse);
        assert.equal(escrow, "20400000"); // 4 x 1 x (5 + 0.1) DPS
        const job = await query.market.Job({ jobId });
        assert.equal(job.job?.owner, s().address);
        const spent = before - BigInt((await query.stargate.getBalance(s().address, chain.feeDenom)).amount);
        assert.equal(spent, 20_400_000n + 25_000n);
        await ok(s(), "/flops.market.v1.MsgCancelJob", { owner: s().address, jobId });
      });

      test("a client opens a pool, posts units and closes it", async () => {
        const spec = poolSpecFromJSON(example("pool.yaml"));
        const res = await ok(s(), "/flops.market.v1.MsgCreatePool", { owner: s().address, spec });
        const { poolId } = response(res, marketTx.MsgCreatePoolResponse);
        const pool = await query.market.Pool({ poolId, omitSpec: false });
        assert.equal(pool.pool?.owner, s().address);
        await ok(s(), "/flops.market.v1.MsgSubmitUnits", {
          owner: s().address,
          poolId,
          units: [{ uri: "https://example.com/units/1.bin", sha256: "ab".repeat(32), path: "" }],
        });
        await ok(s(), "/flops.market.v1.MsgClosePool", { owner: s().address, poolId });
      });

      test("every flops Msg with every field set is signed, verified and reaches its handler", async () => {
        // one tx holding all 35 a client or provider signs: the signature covers every field
        // of every Msg (MsgProposerRandomness is placed by a block's proposer, unsigned, and
        // never accepted from the mempool: checked below)
        const proposerOnly = "/flops.gfl.v1.MsgProposerRandomness";
        const all = flopsMsgs.filter((m) => m.typeUrl !== proposerOnly).map((m) => {
          const value = filled(m.typeUrl.slice(1));
          value[m.signer] = s().address;
          return { typeUrl: m.typeUrl, value };
        });
        const big: StdFee = { amount: [{ denom: chain.feeDenom, amount: "100000" }], gas: "4000000" };
        try {
          const res = await s().client.signAndBroadcast(s().address, all, big, "");
          assert.ok(res.height > 0);
          // the first Msg runs and is refused by its handler (a made-up id or authority)
          assert.notEqual(res.code, 0);
          assert.match(res.rawLog ?? "", /message index: 0/);
        } catch (e) {
          if (!(e instanceof BroadcastTxError)) throw e;
          // name the Msgs whose signature the chain refused
          const refused: string[] = [];
          for (const m of all) {
            try {
              await s().client.signAndBroadcast(s().address, [m], fee, "");
            } catch (e2) {
              if (e2 instanceof BroadcastTxError) refused.push(`${m.typeUrl}: ${e2.log}`);
            }
          }
          assert.fail(`${mode} signature refused: ${e.log}\n${refused.join("\n")}`);
        }
        const randomness = filled(proposerOnly.slice(1));
        randomness.proposer = s().address;
        await assert.rejects(s().client.signAndBroadcast(s().address, [{ typeUrl: proposerOnly, value: randomness }], fee, ""), (e: unknown) => {
          assert.ok(e instanceof BroadcastTxError, String(e));
          assert.match(e.log ?? "", /placed by a block's proposer/);
          return true;
        });
      });

      test("a tx whose body changed after signing is refused", async () => {
        const spec = jobSpecFromJSON(example("job.yaml"));
        const msg = { typeUrl: "/flops.market.v1.MsgSubmitJob", value: { owner: s().address, spec } };
        const signed = await s().client.sign(s().address, [msg], fee, "");
        const body = TxBody.decode(signed.bodyBytes);
        const tampered = marketTx.MsgSubmitJob.decode(body.messages[0].value);
        assert.equal(tampered.spec?.maxPricePerTask?.amount, "5000000");
        (tampered.spec as NonNullable<typeof tampered.spec>).maxPricePerTask = { denom: chain.feeDenom, amount: "500000000" };
        body.messages[0].value = marketTx.MsgSubmitJob.encode(tampered).finish();
        const forged = TxRaw.encode({ ...signed, bodyBytes: TxBody.encode(body).finish() }).finish();
        await assert.rejects(s().client.broadcastTx(forged), (e: unknown) => {
          assert.ok(e instanceof BroadcastTxError, String(e));
          assert.equal(e.code, 4, e.log);
          assert.match(e.log ?? "", /signature verification failed/);
          return true;
        });
        // the tx as signed is accepted
        const res = await s().client.broadcastTx(TxRaw.encode(signed).finish());
        assert.equal(res.code, 0, res.rawLog);
        const { jobId } = response(res, marketTx.MsgSubmitJobResponse);
        await ok(s(), "/flops.market.v1.MsgCancelJob", { owner: s().address, jobId });
      });
    });
  }
  });
});

