package integration

import (
	"fmt"
	"testing"

	"github.com/flopsnet/flops/testutil/apptest"
)

// BenchmarkDeliverBlock: the time of one FinalizeBlock + Commit of a block of 100 txs
// signed ahead from one account, bank MsgSends next to one-task MsgSubmitJobs that the
// block's EndBlock assigns (16 providers with an 8-GPU node each: 128 free GPUs). This is
// the chain's side of make load's submit-job/bank-send ratio, without CometBFT, CheckTx,
// the mempool or the network: ns/tx of submit-job over ns/tx of bank-send is
// the CPU a submission costs the validator. Each iteration runs on a fresh app (the
// nodes would fill up otherwise); building it is outside the timer.
func BenchmarkDeliverBlock(b *testing.B) {
	const txs = 100
	for _, c := range benchTxKinds {
		b.Run(c.name, func(b *testing.B) {
			var assigned int
			for b.Loop() {
				b.StopTimer()
				names := []string{"client", "bob"}
				for i := 1; i <= 16; i++ {
					names = append(names, fmt.Sprintf("p%d", i))
				}
				a := apptest.New(b, apptest.WithAccounts(names...))
				for _, p := range names[2:] {
					bondAndRegister(b, a, p, 8)
				}
				a.NextBlock()
				block := make([][]byte, txs)
				seq := a.AccountKeeper.GetAccount(a.Ctx(), a.Account("client").Address).GetSequence()
				for i := range block {
					block[i] = a.SignTxSeq("client", seq+uint64(i), 400_000, c.msg(a))
				}
				b.StartTimer()
				res := a.NextBlock(block...)
				b.StopTimer()
				for i, r := range res.TxResults {
					if r.Code != 0 {
						b.Fatalf("tx %d: %s", i, r.Log)
					}
				}
				assigned = len(a.Events("flops.market.v1.EventTaskAssigned"))
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/txs, "ns/tx")
			if c.name == "submit-job" && assigned != txs {
				b.Fatalf("%d of %d tasks assigned in the block", assigned, txs)
			}
		})
	}
}
