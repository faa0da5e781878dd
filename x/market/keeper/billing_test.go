package keeper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/x/market/types"
)

// A task that finishes in a fraction of its max_duration costs that fraction of its price,
// rounded up to billing_granularity (1 minute), exact to the udps; the tip is paid whole,
// the rest of the reservation returns to the owner, and the escrow invariant holds. A
// provider that stalls cannot charge more than its price.
func TestTaskPaidForTimeUsed(t *testing.T) {
	for _, c := range []struct {
		name string
		run  time.Duration
		want sdkmath.Int // of the 10-minute quote
	}{
		{"3 minutes of 10", 3 * time.Minute, sdkmath.NewInt(166_667 * 3 / 10)},                   // 50,000
		{"3m01s bills 4 minutes", 3*time.Minute + time.Second, sdkmath.NewInt(166_667 * 4 / 10)}, // 66,666
		{"a second bills a minute", time.Second, sdkmath.NewInt(166_667 / 10)},                   // 16,666
		{"the whole duration", 10 * time.Minute, quote10m},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.addNode(f.operator("p1"), 8, nil)
			job := f.submit(f.gemmSpec(1))
			clientBefore := f.balance(f.client) // after the escrow was taken
			f.blocks(1)
			task := f.tasks(job)[0]
			require.Equal(t, types.TASK_STATUS_ASSIGNED, task.Status)
			require.Equal(t, quote10m.String(), task.Price.String())
			f.ack(task)
			f.next(c.run)
			f.commit(task)
			f.blocks(1)
			f.reveal(task)
			for range f.params().ChallengeWindowBlocks + 2 {
				f.blocks(1)
			}
			got := f.task(task.Id)
			require.Equal(t, types.TASK_STATUS_SETTLED, got.Status)
			tip := f.job(job).Spec.PriorityTip.Amount
			require.Equal(t, c.want.Add(tip).String(), got.Paid.String(), "paid for %s of the task's time, and the tip", c.run)
			require.Equal(t, clientBefore.Add(task.Reserved).Sub(got.Paid).String(), f.balance(f.client).String(),
				"the rest of the reservation returned to the owner")
			require.True(t, f.escrow().IsZero())
			f.assertInvariants()
		})
	}
}

func TestTimePrice(t *testing.T) {
	price := sdkmath.NewInt(1_000_000)
	for _, c := range []struct {
		run, max, g time.Duration
		want        int64
	}{
		{0, time.Hour, time.Minute, 1_000_000 / 60},
		{30 * time.Minute, time.Hour, time.Minute, 500_000},
		{30*time.Minute + 1, time.Hour, time.Minute, 1_000_000 * 31 / 60},
		{59*time.Minute + 30*time.Second, time.Hour, time.Minute, 1_000_000},
		{2 * time.Hour, time.Hour, time.Minute, 1_000_000}, // never more than the price
		{-time.Minute, time.Hour, time.Minute, 1_000_000 / 60},
		{time.Second, 7 * time.Second, time.Second, 1_000_000 / 7},
	} {
		require.Equal(t, c.want, types.TimePrice(price, c.run, c.max, c.g).Int64(), "%s of %s by %s", c.run, c.max, c.g)
	}
}
