package integration

import (
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"

	sdk "github.com/cosmos/cosmos-sdk/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/testutil/apptest"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// benchTxKinds are the two txs the load tool floods and its ratios compare: a bank
// MsgSend of 1 udps from "client" to "bob", and a one-task MsgSubmitJob by "client".
var benchTxKinds = []struct {
	name string
	msg  func(a *apptest.App) sdk.Msg
}{
	{"bank-send", func(a *apptest.App) sdk.Msg {
		return &banktypes.MsgSend{FromAddress: a.Account("client").String(), ToAddress: a.Account("bob").String(), Amount: sdk.NewCoins(sdk.NewInt64Coin("udps", 1))}
	}},
	{"submit-job", func(a *apptest.App) sdk.Msg {
		return &markettypes.MsgSubmitJob{Owner: a.Account("client").String(), Spec: gasJobSpec(a, 1)}
	}},
}

// BenchmarkCheckTx: what the mempool spends to admit one tx (CheckTx: decode, then the
// ante handler: fees, signature, sequence), a bank MsgSend next to a one-task
// MsgSubmitJob, each signed ahead from one account with increasing sequences (the load
// tool's flood). decode is the tx decoder alone. A submission's CheckTx rate is what
// bounds the rate the mempool takes them (make load: CheckTx/s).
func BenchmarkCheckTx(b *testing.B) {
	for _, c := range benchTxKinds {
		a := apptest.New(b, apptest.WithAccounts("client", "bob"))
		a.NextBlock()
		b.Run(c.name+"/decode", func(b *testing.B) {
			tx := a.SignTxSeq("client", 0, 200_000, c.msg(a))
			dec := a.TxConfig().TxDecoder()
			b.SetBytes(int64(len(tx)))
			for b.Loop() {
				if _, err := dec(tx); err != nil {
					b.Fatal(err)
				}
			}
		})
		seq := uint64(0)
		b.Run(c.name+"/checktx", func(b *testing.B) {
			b.StopTimer()
			txs := make([][]byte, b.N)
			for i := range txs {
				txs[i] = a.SignTxSeq("client", seq, 200_000, c.msg(a))
				seq++
			}
			b.StartTimer()
			for i := range b.N {
				res, err := a.CheckTx(&abci.RequestCheckTx{Tx: txs[i], Type: abci.CheckTxType_New})
				if err != nil || res.Code != 0 {
					b.Fatalf("checktx %d: %v %s", i, err, res.GetLog())
				}
			}
		})
	}
}
