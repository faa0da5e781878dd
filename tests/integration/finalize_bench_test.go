package integration

import (
	"fmt"
	"testing"

	"github.com/flopsnet/flops/testutil/apptest"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// BenchmarkFinalizeBlock: the time of one FinalizeBlock + Commit of an otherwise empty
// block on the wired app with three providers, quiet and with a worst legal load present
// (ratios against "quiet" go in the closing note; DESIGN.md: within 2x):
//
//	quiet               nothing pending
//	maximal-job         the maximal legal job (5,000 task replicas, every list at its
//	                    bound) pending in the scheduler, unplaceable at its price
//	pending-1-class     1,000 pending tasks whose job allows 1 GPU class
//	pending-32-classes  the same with 32 allowed classes (the scheduler's cost per
//	                    examined task must not depend on the job's lists)
func BenchmarkFinalizeBlock(b *testing.B) {
	pending := func(classes int) func(b *testing.B, a *apptest.App) {
		return func(b *testing.B, a *apptest.App) {
			s := gemmJob(a, 1000, markettypes.ALLOCATION_MODE_ASSIGN)
			s.MaxPricePerTask.Amount = s.MaxPricePerTask.Amount.QuoRaw(1000) // below every quote
			s.Requirements.AllowedClasses = []string{"A100-40GB"}
			for i := 1; i < classes; i++ {
				s.Requirements.AllowedClasses = append(s.Requirements.AllowedClasses, fmt.Sprintf("class-%02d", i))
			}
			a.NextBlock(a.SignTx("client", uint64(a.ConsensusParamsMaxGas()), &markettypes.MsgSubmitJob{Owner: a.Account("client").String(), Spec: s}))
		}
	}
	for _, c := range []struct {
		name string
		load func(b *testing.B, a *apptest.App)
	}{
		{"quiet", nil},
		{"maximal-job", func(b *testing.B, a *apptest.App) {
			a.NextBlock(a.SignTx("client", uint64(a.ConsensusParamsMaxGas()), &markettypes.MsgSubmitJob{Owner: a.Account("client").String(), Spec: maximalJob(b, a)}))
		}},
		{"pending-1-class", pending(1)},
		{"pending-32-classes", pending(markettypes.MaxAllowedClasses)},
	} {
		b.Run(c.name, func(b *testing.B) {
			a, _ := marketApp(b, nil)
			if c.load != nil {
				c.load(b, a)
			}
			a.NextBlocks(10) // past the first scheduling passes
			b.ResetTimer()
			for range b.N {
				a.NextBlock()
			}
		})
	}
}
