package keeper_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/market/types"
)

// BenchmarkEndBlockAssign measures one EndBlock that assigns 1,000 single-task jobs
// (max_assign_per_block = 1000) against N nodes of 8 GPUs, all eligible. DESIGN.md
// section 8: an assignment costs O(log N), and 1,000 of them against 100,000 nodes take
// well under 100 ms. The nodes and 1,000 pending jobs are set up once per N, outside the
// timer, and committed (as the chain's store is at the start of a block); each iteration
// runs the EndBlock on a fresh cache branch of that state (as the chain does) and drops it.
// Besides assign=1000 (the target), assign=1 and assign=100 (the default param) run on the
// same state with a lower max_assign_per_block, which separates the cost that grows with N
// from the cost that grows with the assignments already made in the block.
func BenchmarkEndBlockAssign(b *testing.B) {
	const jobs = 1000
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			f := newFixture(b, func(p *types.Params) { p.MaxAssignPerBlock = jobs })
			for i := range n {
				f.addNode(f.operator(fmt.Sprint("p", i)), 8, nil)
			}
			f.commitStore()
			var ids []uint64
			for range jobs {
				ids = append(ids, f.submit(f.gemmSpec(1)))
			}
			f.commitStore()

			// once, untimed: one EndBlock assigns every job
			ctx, _ := f.ctx.CacheContext()
			require.NoError(b, f.k.EndBlocker(ctx))
			for _, id := range ids {
				tasks, err := f.k.JobTasksForTest(ctx, id)
				require.NoError(b, err)
				require.Equal(b, types.TASK_STATUS_ASSIGNED, tasks[0].Status)
			}

			for _, assign := range []uint32{1, 100, jobs} {
				b.Run(fmt.Sprintf("assign=%d", assign), func(b *testing.B) {
					p := f.params()
					p.MaxAssignPerBlock = assign
					for b.Loop() {
						b.StopTimer()
						ctx, _ := f.ctx.CacheContext()
						ctx = ctx.WithEventManager(sdk.NewEventManager())
						if err := f.k.Params.Set(ctx, p); err != nil {
							b.Fatal(err)
						}
						// the garbage of the setup (100k nodes: gigabytes) is collected
						// here, not by GC workers stealing the timed EndBlock's CPU; the
						// EndBlock's own garbage is still collected inside the timer
						runtime.GC()
						b.StartTimer()
						if err := f.k.EndBlocker(ctx); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(assign), "ns/assignment")
					// the work budget an assignment spends (assign_gas_per_block / this =
					// the assignments a block can make)
					b.ReportMetric(float64(f.k.LastBlockWork().AssignGas)/float64(assign), "gas/assignment")
				})
			}
		})
	}
}
