package integration

import (
	"sort"
	"strings"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	"github.com/cosmos/gogoproto/proto"
	"github.com/stretchr/testify/require"

	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	storetypes "github.com/cosmos/cosmos-sdk/store/v2/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	txtypes "github.com/cosmos/cosmos-sdk/types/tx"
	"github.com/cosmos/cosmos-sdk/types/tx/signing"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	epochstypes "github.com/cosmos/cosmos-sdk/x/epochs/types"

	"github.com/flopsnet/flops/testutil/apptest"
	"github.com/flopsnet/flops/testutil/msgfill"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// FuzzFlopsMsg feeds arbitrary bytes as each flops Msg (kind picks the type, body is its
// encoding) through the app's whole tx path: the app's tx decoder unpacks them, the ante
// handler checks the signature of the account the fuzzer signs with, the Msg runs in a
// block. Whatever the bytes: no panic leaves the tx path, every registered invariant
// holds after the block, and a rejected tx writes nothing but, once past the ante
// handler, its signer's sequence. The seed corpus is one filled message of every type and
// valid ones for the market's main paths (testdata/fuzz/FuzzFlopsMsg holds what fuzzing
// found worth keeping); `make fuzz` fuzzes it, .ci/run for a short while.
func FuzzFlopsMsg(f *testing.F) {
	mds, err := msgfill.FlopsMsgs()
	require.NoError(f, err)
	a := apptest.New(f, apptest.WithAccounts("fuzzer", "client"), apptest.WithGenesis(quietBlocks))
	fz := a.Account("fuzzer")
	op := fz.String()

	// something for the messages to act on: the fuzzer's bonded node, a job and a pool of
	// the client's
	node := bondAndRegister(f, a, "fuzzer", 2)
	job := submit(f, a, gemmJob(a, 2, markettypes.ALLOCATION_MODE_ASSIGN))
	a.MustDeliver("client", &markettypes.MsgCreatePool{Owner: a.Account("client").String(), Spec: gemmPoolSpec(1_000_000, 10_000_000)})
	a.NextBlock()

	kinds := map[string]uint8{}
	for i, md := range mds {
		kinds[string(md.FullName())] = uint8(i)
		msg, _, err := msgfill.Filled(md, op)
		require.NoError(f, err)
		bz, err := proto.Marshal(msg)
		require.NoError(f, err)
		f.Add(uint8(i), bz)
	}
	valid := []sdk.Msg{
		&sstypes.MsgBond{Provider: op, Amount: sdk.NewInt64Coin(udps, 100_000_000)},
		&gfltypes.MsgRegisterNode{Operator: op, Spec: a100("seed", 1)},
		&gfltypes.MsgUpdateNode{Operator: op, NodeId: node, Spec: a100("fuzzer", 2)},
		&markettypes.MsgSubmitJob{Owner: op, Spec: gemmJob(a, 3, markettypes.ALLOCATION_MODE_AUCTION)},
		&markettypes.MsgCancelJob{Owner: op, JobId: job},
		&markettypes.MsgCreatePool{Owner: op, Spec: gemmPoolSpec(1_000_000, 5_000_000)},
		&markettypes.MsgJoinPool{Provider: op, PoolId: 1, NodeId: node},
		&markettypes.MsgAckTask{Provider: op, TaskId: 1},
	}
	for _, m := range valid {
		bz, err := proto.Marshal(m)
		require.NoError(f, err)
		f.Add(kinds[proto.MessageName(m)], bz)
	}

	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		a.SetT(t)
		defer a.SetT(f)
		md := mds[int(kind)%len(mds)]
		raw := rawTx(t, a, fz, "/"+string(md.FullName()), body)
		// the block's hooks run first; the tx then runs in the open block, as the
		// simulations deliver theirs, so that what it wrote is all that changes
		var log string
		var changed []storeKey
		a.NextBlockThen(func() {
			ctx := a.NewContextLegacy(false, cmtproto.Header{Height: a.Height() + 1})
			before := snapshotStores(ctx, a.StoreNames(), a.GetKey)
			tx, err := a.TxConfig().TxDecoder()(raw) // the decoder the app was built with
			if err == nil {
				_, _, err = a.SimDeliver(func(sdk.Tx) ([]byte, error) { return raw, nil }, tx)
			}
			if err != nil {
				log = err.Error()
				changed = changedKeys(before, snapshotStores(ctx, a.StoreNames(), a.GetKey))
			}
		}) // a panic out of the tx path fails here
		a.AssertInvariants()
		for _, k := range changed {
			// a rejected tx that passed the ante handler keeps its signer's sequence
			if k.store == authtypes.StoreKey && strings.HasSuffix(k.key, string(fz.Address)) {
				continue
			}
			t.Fatalf("%s rejected (%s) but wrote %s key %X", md.FullName(), log, k.store, k.key)
		}
	})
}

// quietBlocks: no epoch ends and no PoCP challenge comes during a fuzz run (the blocks
// stay cheap).
func quietBlocks(e apptest.GenesisEditor) {
	var g gfltypes.GenesisState
	e.Edit(gfltypes.ModuleName, &g, func() { g.Params.ChallengeIntervalBlocks = 1 << 40 })
	var ep epochstypes.GenesisState
	e.Edit(epochstypes.ModuleName, &ep, func() {
		for i := range ep.Epochs {
			ep.Epochs[i].Duration = 365 * 24 * time.Hour
		}
	})
}

// rawTx is a SIGN_MODE_DIRECT tx of the fuzzer carrying body as a Msg of typeURL, built
// by hand: the bytes reach the app's decoder as they are.
func rawTx(t testing.TB, a *apptest.App, acc *apptest.Account, typeURL string, body []byte) []byte {
	t.Helper()
	onChain := a.AccountKeeper.GetAccount(a.Ctx(), acc.Address)
	require.NotNil(t, onChain)
	bodyBytes, err := proto.Marshal(&txtypes.TxBody{Messages: []*codectypes.Any{{TypeUrl: typeURL, Value: body}}})
	require.NoError(t, err)
	pk, err := codectypes.NewAnyWithValue(acc.Priv.PubKey())
	require.NoError(t, err)
	authInfo, err := proto.Marshal(&txtypes.AuthInfo{
		SignerInfos: []*txtypes.SignerInfo{{
			PublicKey: pk, Sequence: onChain.GetSequence(),
			ModeInfo: &txtypes.ModeInfo{Sum: &txtypes.ModeInfo_Single_{Single: &txtypes.ModeInfo_Single{Mode: signing.SignMode_SIGN_MODE_DIRECT}}},
		}},
		Fee: &txtypes.Fee{GasLimit: apptest.DefaultGas},
	})
	require.NoError(t, err)
	doc, err := proto.Marshal(&txtypes.SignDoc{BodyBytes: bodyBytes, AuthInfoBytes: authInfo, ChainId: apptest.ChainID, AccountNumber: onChain.GetAccountNumber()})
	require.NoError(t, err)
	sig, err := acc.Priv.Sign(doc)
	require.NoError(t, err)
	raw, err := proto.Marshal(&txtypes.TxRaw{BodyBytes: bodyBytes, AuthInfoBytes: authInfo, Signatures: [][]byte{sig}})
	require.NoError(t, err)
	return raw
}

type storeKey struct{ store, key string }

// snapshotStores copies every KV store as ctx sees it.
func snapshotStores(ctx sdk.Context, names []string, key func(string) *storetypes.KVStoreKey) map[storeKey]string {
	out := map[storeKey]string{}
	for _, name := range names {
		it := ctx.KVStore(key(name)).Iterator(nil, nil)
		for ; it.Valid(); it.Next() {
			out[storeKey{name, string(it.Key())}] = string(it.Value())
		}
		_ = it.Close()
	}
	return out
}

// changedKeys lists the keys written or deleted between two snapshots, sorted.
func changedKeys(before, after map[storeKey]string) []storeKey {
	var out []storeKey
	for k, v := range after {
		if old, ok := before[k]; !ok || old != v {
			out = append(out, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].store != out[j].store {
			return out[i].store < out[j].store
		}
		return out[i].key < out[j].key
	})
	return out
}
