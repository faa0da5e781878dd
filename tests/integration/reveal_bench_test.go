package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/testutil/apptest"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// BenchmarkRevealResult measures MsgRevealResult end to end: the block that carries the
// reveals of one shard's replicas (one tx per replica) is finalised and committed, and
// the time and gas are reported per reveal. bank-send is the baseline, run in the same
// app: blocks of 1, 2 or 3 bank sends (compare replicas=N with txs=N: the same number of
// txs per block). Compare ns/reveal with ns/send, not absolute figures.
//
//	go test ./tests/integration -run '^$' -bench RevealResult -benchtime 200x
func BenchmarkRevealResult(b *testing.B) {
	noAudit := func(p *markettypes.Params) { p.AuditFloorPpm, p.AuditWarmupTasks = 0, 0 }
	for _, replicas := range []uint32{1, 2, 3} {
		b.Run(fmt.Sprintf("exact/replicas=%d", replicas), func(b *testing.B) {
			a, _ := marketAppN(b, 3, noAudit)
			budget := int64(0)
			if replicas == 1 { // its audits' budget: max price x (1 + committee)
				budget = 4 * 5_000_000
			}
			benchReveals(b, a, func() markettypes.JobSpec { return exactJob(a, replicas, budget) })
		})
	}
	for _, n := range []uint32{256, 2048} {
		b.Run(fmt.Sprintf("gemm/n=%d", n), func(b *testing.B) {
			a, _ := marketAppN(b, 3, noAudit)
			benchReveals(b, a, func() markettypes.JobSpec {
				s := gemmJob(a, 1, markettypes.ALLOCATION_MODE_ASSIGN)
				s.Verification, s.Builtin = markettypes.VERIFICATION_CLASS_BUILTIN_GEMM, markettypes.BuiltinArgs{GemmN: n, GemmR: 1}
				return s
			})
		})
	}
	for _, per := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("bank-send/txs=%d", per), func(b *testing.B) {
			a, _ := marketAppN(b, 3, noAudit)
			client := a.Account("client").Address
			var gas int64
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				var txs [][]byte
				for _, name := range []string{"p1", "p2", "p3"}[:per] {
					txs = append(txs, a.SignTx(name, 200_000, banktypes.NewMsgSend(a.Account(name).Address, client, sdk.NewCoins(sdk.NewInt64Coin(udps, 1)))))
				}
				b.StartTimer()
				res := a.NextBlock(txs...)
				b.StopTimer()
				for _, r := range res.TxResults {
					require.Zero(b, r.Code, r.Log)
					gas += r.GasUsed
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(per*b.N), "ns/send")
			b.ReportMetric(float64(gas)/float64(per*b.N), "gas/send")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// benchReveals runs b.N jobs of one shard through ack and commit with the timer stopped,
// times the block of their reveals, and lets them settle untimed.
func benchReveals(b *testing.B, a *apptest.App, spec func() markettypes.JobSpec) {
	gp, err := a.GFLKeeper.GetParams(a.Ctx())
	require.NoError(b, err)
	mp, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(b, err)
	salt := []byte("bench-salt-0123456789")
	var gas, reveals int64
	var revealTime time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s := spec()
		job := submit(b, a, s)
		j := getJob(b, a, job)
		tasks := jobTasks(b, a, job)
		roots := map[uint64]solved{}
		block := func(msg func(tk markettypes.Task, name string) sdk.Msg) {
			var txs [][]byte
			for _, tk := range tasks {
				name := providerName(a, tk.Provider)
				txs = append(txs, a.SignTx(name, apptest.DefaultGas, msg(tk, name)))
			}
			res := a.NextBlock(txs...)
			for _, r := range res.TxResults {
				require.Zero(b, r.Code, r.Log)
			}
		}
		block(func(tk markettypes.Task, name string) sdk.Msg {
			return &markettypes.MsgAckTask{Provider: tk.Provider, TaskId: tk.Id}
		})
		block(func(tk markettypes.Task, name string) sdk.Msg {
			root := trueRoot(job, tk.Index)
			if s.Verification == markettypes.VERIFICATION_CLASS_BUILTIN_GEMM {
				g := solveGemm(b, j.GemmChallenge(tk.Index))
				roots[tk.Id] = g
				root = g.root()
			}
			return &markettypes.MsgCommitResult{Provider: tk.Provider, TaskId: tk.Id, Commitment: markettypes.Commitment(root, salt, sdk.MustAccAddressFromBech32(tk.Provider))}
		})
		for {
			a.NextBlock()
			open := true
			for _, tk := range jobTasks(b, a, job) {
				open = open && tk.RevealDeadlineHeight != 0
			}
			if open {
				break
			}
		}
		var txs [][]byte
		for _, tk := range jobTasks(b, a, job) {
			msg := &markettypes.MsgRevealResult{Provider: tk.Provider, TaskId: tk.Id, ResultRoot: trueRoot(job, tk.Index), Salt: salt,
				OutputUri: fmt.Sprintf("https://x.example.com/out/%d", tk.Id)}
			if g, ok := roots[tk.Id]; ok {
				seed := beacon.Derive(a.BeaconValue(tk.CommitHeight+1), markettypes.DomainGemmSample, tk.Id)
				msg.ResultRoot, msg.GemmProofs = g.root(), g.proofs(seed, gp.ChallengeSamples)
			}
			txs = append(txs, a.SignTx(providerName(a, tk.Provider), apptest.DefaultGas, msg))
		}
		start := time.Now()
		b.StartTimer()
		res := a.NextBlock(txs...)
		b.StopTimer()
		revealTime += time.Since(start)
		for _, r := range res.TxResults {
			require.Zero(b, r.Code, r.Log)
			gas += r.GasUsed
			reveals++
		}
		a.NextBlocks(int(mp.ChallengeWindowBlocks) + 1)
		require.NotZero(b, getJob(b, a, job).FinishedHeight)
	}
	b.ReportMetric(float64(revealTime.Nanoseconds())/float64(reveals), "ns/reveal")
	b.ReportMetric(float64(gas)/float64(reveals), "gas/reveal")
	b.ReportMetric(0, "ns/op")
}

// providerName finds the test account of an address.
func providerName(a *apptest.App, addr string) string {
	for _, n := range []string{"p1", "p2", "p3"} {
		if a.Account(n).String() == addr {
			return n
		}
	}
	panic("unknown provider " + addr)
}
