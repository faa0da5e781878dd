package integration

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	cmted25519 "github.com/cometbft/cometbft/crypto/ed25519"
	voied25519 "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
	"github.com/oasisprotocol/curve25519-voi/primitives/ed25519/extra/ecvrf"
	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/app"
	"github.com/flopsnet/flops/testutil/apptest"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// vrfInput is what block h's proposer runs its VRF over, written out here as the README
// states it: a domain, the chain id, h and the previous block's value.
func vrfInput(h int64, prev []byte) []byte {
	out := append([]byte("flops/beacon/vrf-input/v1"), byte(len(apptest.ChainID)))
	out = append(out, apptest.ChainID...)
	out = binary.BigEndian.AppendUint64(out, uint64(h))
	return append(out, prev...)
}

// proposerTx is an unsigned tx made of msg, as a proposer places it.
func proposerTx(t *testing.T, a *apptest.App, msg *gfltypes.MsgProposerRandomness) []byte {
	t.Helper()
	bz, err := a.ProposerTx(msg)
	require.NoError(t, err)
	return bz
}

// blockValueRevealed is the block's EventBlockValue's "revealed" attribute.
func blockValueRevealed(t *testing.T, res *abci.ResponseFinalizeBlock) string {
	t.Helper()
	evs := res.Events
	for _, r := range res.TxResults {
		evs = append(evs, r.Events...)
	}
	for _, e := range evs {
		if e.Type == "flops.gfl.v1.EventBlockValue" {
			for _, at := range e.Attributes {
				if at.Key == "revealed" {
					return at.Value
				}
			}
		}
	}
	t.Fatal("no EventBlockValue in the block")
	return ""
}

// The validator proposes with its VRF: its PrepareProposal puts the randomness tx first,
// the tx runs unsigned and free, and the block's value is the chain of the VRF's output,
// the same computed here from the validator's key.
func TestProposerRandomnessFixesTheBlockValue(t *testing.T) {
	a := apptest.New(t, apptest.WithAccounts("client"))
	a.Propose = true
	before := a.Balance(a.Account("validator").Address, app.BondDenom)
	for range 3 {
		prev := a.BeaconValue(a.Height())
		res := a.NextBlock(a.SignTx("client", 200_000, banktypes.NewMsgSend(a.Account("client").Address, a.Account("validator").Address, sdk.NewCoins(sdk.NewInt64Coin(app.BondDenom, 1)))))
		h := a.Height()
		require.Len(t, res.TxResults, 2, "the randomness tx, then the block's own")
		require.Zero(t, res.TxResults[0].Code, res.TxResults[0].Log)
		require.Zero(t, res.TxResults[1].Code, res.TxResults[1].Log)
		require.LessOrEqual(t, res.TxResults[0].GasUsed, int64(app.ProposerTxGas))
		require.Equal(t, `true`, blockValueRevealed(t, res))

		alpha := vrfInput(h, prev)
		ok, beta := ecvrf.Verify(voied25519.PublicKey(a.ProposerKey().PubKey().Bytes()), ecvrf.Prove(voied25519.PrivateKey(a.ProposerKey()), alpha), alpha)
		require.True(t, ok)
		want := sha256.Sum256(append(append([]byte("flops/beacon/revealed/v1"), prev...), beta...))
		require.Equal(t, want[:], a.BeaconValue(h))
	}
	require.Equal(t, before.AddRaw(3), a.Balance(a.Account("validator").Address, app.BondDenom), "the randomness tx paid no fee")
	a.AssertInvariants()
}

// The attacks on the proposer's randomness tx, each refused:
//   - a proposal whose first tx carries another key's proof, or the previous block's
//     genuine proof replayed: the validators refuse the proposal; a node that executes such
//     a block anyway (synced, not proposed to it) fails the tx and seals the block's value
//     as withheld;
//   - the genuine tx, or one signed and paying a fee, sent through the mempool or
//     simulated: refused before it reaches a block, so only a proposer places it.
func TestAttackForgedProposerRandomness(t *testing.T) {
	a := apptest.New(t)
	a.Propose = true
	a.NextBlock()
	genuine := a.LastResults // the randomness tx of the last block
	require.Zero(t, genuine.TxResults[0].Code)
	a.Propose = false

	h := a.Height() + 1
	prev := a.BeaconValue(a.Height())
	v, err := a.StakingKeeper.GetValidatorByConsAddr(a.Ctx(), a.ProposerAddress())
	require.NoError(t, err)
	op, err := sdk.ValAddressFromBech32(v.GetOperator())
	require.NoError(t, err)
	operator := sdk.AccAddress(op).String()
	other := cmted25519.GenPrivKeyFromSecret([]byte("not the proposer"))
	forged := proposerTx(t, a, &gfltypes.MsgProposerRandomness{Proposer: operator, Height: h, Proof: ecvrf.Prove(voied25519.PrivateKey(other), vrfInput(h, prev))})
	require.Equal(t, abci.ResponseProcessProposal_REJECT, a.ProcessProposalOf(forged), "another key's proof")
	stale := proposerTx(t, a, &gfltypes.MsgProposerRandomness{Proposer: operator, Height: h - 1, Proof: ecvrf.Prove(voied25519.PrivateKey(a.ProposerKey()), vrfInput(h-1, a.BeaconValue(h-2)))})
	require.Equal(t, abci.ResponseProcessProposal_REJECT, a.ProcessProposalOf(stale), "the previous block's proof replayed")
	wrongInput := proposerTx(t, a, &gfltypes.MsgProposerRandomness{Proposer: operator, Height: h, Proof: ecvrf.Prove(voied25519.PrivateKey(a.ProposerKey()), vrfInput(h, nil))})
	require.Equal(t, abci.ResponseProcessProposal_REJECT, a.ProcessProposalOf(wrongInput), "the proposer's VRF over another input")
	good := proposerTx(t, a, &gfltypes.MsgProposerRandomness{Proposer: operator, Height: h, Proof: ecvrf.Prove(voied25519.PrivateKey(a.ProposerKey()), vrfInput(h, prev))})
	require.Equal(t, abci.ResponseProcessProposal_ACCEPT, a.ProcessProposalOf(good))

	// through the mempool and simulation: refused, whether unsigned or signed with a fee
	for name, tx := range map[string][]byte{
		"unsigned": good,
		"signed":   a.SignTx("validator", 300_000, &gfltypes.MsgProposerRandomness{Proposer: operator, Height: h, Proof: ecvrf.Prove(voied25519.PrivateKey(a.ProposerKey()), vrfInput(h, prev))}),
		"beside a send": a.SignTx("validator", 300_000,
			banktypes.NewMsgSend(a.Account("validator").Address, a.Account("validator").Address, sdk.NewCoins(sdk.NewInt64Coin(app.BondDenom, 1))),
			&gfltypes.MsgProposerRandomness{Proposer: operator, Height: h, Proof: ecvrf.Prove(voied25519.PrivateKey(a.ProposerKey()), vrfInput(h, prev))}),
	} {
		res, err := a.CheckTx(&abci.RequestCheckTx{Tx: tx, Type: abci.CheckTxType_New})
		require.NoError(t, err)
		require.NotZero(t, res.Code, name)
		require.Contains(t, res.Log, "placed by a block's proposer", name)
		_, _, err = a.Simulate(tx)
		require.ErrorContains(t, err, "placed by a block's proposer", name)
	}

	// a node executes the forged block anyway: the tx fails, the value is sealed as withheld
	res := a.NextBlock(forged)
	require.NotZero(t, res.TxResults[0].Code)
	require.Equal(t, gfltypes.ModuleName, res.TxResults[0].Codespace, res.TxResults[0].Log)
	require.Equal(t, `false`, blockValueRevealed(t, res))
	withheld := sha256.Sum256(append(append([]byte("flops/beacon/withheld/v1"), prev...), binary.BigEndian.AppendUint64(nil, uint64(h))...))
	require.Equal(t, withheld[:], a.BeaconValue(h))
	a.AssertInvariants()
}

// TestAttackProposerSteersDrawsWithoutDrand: with drand off, a proposer tries header hashes
// to choose which node the scheduler gives a task. The draws use the previous block's
// value, the chain of the proposers' VRF outputs, in which the header hash plays no part:
// chains that differ only in their proposers' header hashes give every task to the same
// node. (Before, the value was the header hash itself: each salt moved the tasks.)
func TestAttackProposerSteersDrawsWithoutDrand(t *testing.T) {
	providers := []string{"p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"}
	run := func(salt string) map[uint32]uint64 {
		a := apptest.New(t, apptest.WithAccounts(append([]string{"client"}, providers...)...), apptest.WithGenesis(func(e apptest.GenesisEditor) {
			var g gfltypes.GenesisState
			e.Edit(gfltypes.ModuleName, &g, func() { g.Params.ChallengeIntervalBlocks = 1_000_000 })
		}))
		a.HeaderHash = func(h int64) []byte {
			sum := sha256.Sum256(append([]byte(salt), apptest.BlockHash(h)...))
			return sum[:]
		}
		a.Propose = true
		for _, p := range providers {
			bondAndRegister(t, a, p, 1)
		}
		job := submit(t, a, gemmJob(a, 8, markettypes.ALLOCATION_MODE_ASSIGN))
		got := map[uint32]uint64{}
		for i := 0; i < 5 && len(got) < 8; i++ {
			a.NextBlock()
			for _, tk := range jobTasks(t, a, job) {
				if tk.NodeId != 0 {
					got[tk.Index] = tk.NodeId
				}
			}
		}
		require.Len(t, got, 8)
		a.AssertInvariants()
		return got
	}
	honest := run("honest proposer")
	nodes := map[uint64]bool{}
	for _, n := range honest {
		nodes[n] = true
	}
	require.Greater(t, len(nodes), 1, "the draw spreads the tasks")
	for _, salt := range []string{"ground 1", "ground 2", "ground 3"} {
		require.Equal(t, honest, run(salt), fmt.Sprintf("the header hash of %q changed who got the tasks", salt))
	}
}

// The randomness tx takes its room from the block's limits: a proposal of mempool txs
// that fills the block's gas limit on its own leaves out the last one, so that the block,
// randomness tx first, stays within the limit it is executed under.
func TestProposerRandomnessLeavesRoomInTheBlock(t *testing.T) {
	names := []string{"s1", "s2", "s3", "s4", "s5", "s6"}
	a := apptest.New(t, apptest.WithAccounts(names...))
	maxGas := a.ConsensusParamsMaxGas()
	require.Positive(t, maxGas)
	per := uint64(maxGas) / uint64(len(names)) // six txs fill the block exactly
	var txs [][]byte
	for _, n := range names {
		txs = append(txs, a.SignTx(n, per, banktypes.NewMsgSend(a.Account(n).Address, a.Account("validator").Address, sdk.NewCoins(sdk.NewInt64Coin(app.BondDenom, 1)))))
	}
	res, err := a.PrepareProposal(&abci.RequestPrepareProposal{
		MaxTxBytes: 4 << 20, Txs: txs, Height: a.Height() + 1, Time: a.BlockTime().Add(time.Second), ProposerAddress: a.ProposerAddress(),
	})
	require.NoError(t, err)
	require.Len(t, res.Txs, len(names), "the randomness tx and five of the six")
	first, err := a.TxConfig().TxDecoder()(res.Txs[0])
	require.NoError(t, err)
	require.IsType(t, &gfltypes.MsgProposerRandomness{}, first.GetMsgs()[0])
	require.Equal(t, txs[:5], res.Txs[1:])
}
