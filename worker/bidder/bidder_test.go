package bidder_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/worker/bidder"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

func offer(tasks uint32, gpus uint32, maxPrice int64, dur time.Duration) bidder.Offer {
	return bidder.Offer{
		Job: markettypes.Job{Spec: markettypes.JobSpec{
			TaskCount: tasks, Replicas: 1, MaxDuration: dur,
			Requirements:    markettypes.Requirements{GpuCount: gpus},
			MaxPricePerTask: sdk.NewInt64Coin("udps", maxPrice),
		}},
		GpuClass: "A100-40GB", GPUs: 8,
	}
}

// The ask policy: ask x GPUs x hours, marked up with load, capped by free GPUs, never
// above the job's max price.
func TestAskPolicy(t *testing.T) {
	p := bidder.Ask{PerGPUHour: map[string]sdkmath.Int{"A100-40GB": sdkmath.NewInt(2_000_000)}, Default: sdkmath.NewInt(1_000_000), LoadMarkupPPM: 50_000}
	ctx := context.Background()

	b, err := p.Price(ctx, offer(3, 2, 100_000_000, 30*time.Minute))
	require.NoError(t, err)
	require.Equal(t, sdkmath.NewInt(2_000_000), b.Price, "2 DPS/GPU-h x 2 GPUs x 0.5 h")
	require.Equal(t, uint32(3), b.Quantity)

	o := offer(10, 2, 100_000_000, 30*time.Minute)
	o.GPUsUsed = 4 // 50% in use: 5 tenths x 5% = +25%; 4 free GPUs: 2 tasks
	b, err = p.Price(ctx, o)
	require.NoError(t, err)
	require.Equal(t, sdkmath.NewInt(2_500_000), b.Price)
	require.Equal(t, uint32(2), b.Quantity)

	o = offer(1, 1, 100_000_000, time.Hour)
	o.GpuClass = "H100-80GB" // not listed: the default ask
	b, err = p.Price(ctx, o)
	require.NoError(t, err)
	require.Equal(t, sdkmath.NewInt(1_000_000), b.Price)

	b, err = p.Price(ctx, offer(1, 1, 999_999, time.Hour*1/2+time.Hour/2))
	require.NoError(t, err)
	require.Zero(t, b.Quantity, "above the job's max price: no bid")

	o = offer(1, 4, 100_000_000, time.Hour)
	o.GPUsUsed = 6
	b, err = p.Price(ctx, o)
	require.NoError(t, err)
	require.Zero(t, b.Quantity, "not enough free GPUs")
}

func script(t *testing.T, body string) string {
	path := filepath.Join(t.TempDir(), "bid.sh")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return path
}

// An external script gets the offer on stdin and answers a bid; failures, timeouts and
// garbage are errors (no bid), and a price above the max is refused.
func TestScriptPolicy(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	ok := bidder.Script{Path: script(t, `grep -q '"gpu_class":"A100-40GB"' && echo '{"price":"1234","quantity":2}'`), Log: log}
	b, err := ok.Price(ctx, offer(3, 1, 100_000, time.Hour))
	require.NoError(t, err)
	require.Equal(t, sdkmath.NewInt(1234), b.Price)
	require.Equal(t, uint32(2), b.Quantity)

	over := bidder.Script{Path: script(t, `echo '{"price":"200000","quantity":1}'`), Log: log}
	b, err = over.Price(ctx, offer(3, 1, 100_000, time.Hour))
	require.NoError(t, err)
	require.Zero(t, b.Quantity)

	for name, body := range map[string]string{"fails": "exit 3", "garbage": "echo nope", "no price": `echo '{"quantity":1}'`} {
		_, err := bidder.Script{Path: script(t, body), Log: log}.Price(ctx, offer(1, 1, 100_000, time.Hour))
		require.Error(t, err, name)
	}
	slow := bidder.Script{Path: script(t, "sleep 5"), Timeout: 200 * time.Millisecond, Log: log}
	start := time.Now()
	_, err = slow.Price(ctx, offer(1, 1, 100_000, time.Hour))
	require.ErrorContains(t, err, "timed out")
	require.Less(t, time.Since(start), 3*time.Second)
}
