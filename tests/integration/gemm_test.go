package integration

import (
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/internal/beacon"
	"github.com/flopsnet/flops/x/gfl/pocp"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// A BUILTIN gemm job verified with BUILTIN_GEMM: each task's product is fixed by the job's
// seed and its index; a reveal opens the entries sampled from the block after its
// commitment and the chain recomputes them. A provider that committed to the wrong
// product cannot reveal it (ErrWrongResult, nothing changes), lapses at its reveal
// deadline, is slashed for the missed reveal, and the task is reassigned to another node
// that computes it; both tasks settle and the owner pays exactly two tasks.
func TestGemmJobReveal(t *testing.T) {
	a, nodes := marketApp(t, nil)
	mp, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	gp, err := a.GFLKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	spec := gemmJob(a, 2, markettypes.ALLOCATION_MODE_ASSIGN)
	spec.Verification = markettypes.VERIFICATION_CLASS_BUILTIN_GEMM
	clientStart := a.Balance(a.Account("client").Address, udps)
	job := submit(t, a, spec)
	j := getJob(t, a, job)
	require.Len(t, j.GemmSeed, 32)
	// the gas a reveal costs is fixed at submission and priced into every quote
	require.Equal(t, markettypes.GemmRevealGas(spec.Builtin, gp), j.RevealGas)
	require.Equal(t, markettypes.RevealCost(j.RevealGas, mp.RevealGasPrice), j.RevealCost)
	require.Positive(t, j.RevealCost)

	tasks := jobTasks(t, a, job)
	require.Len(t, tasks, 2)
	honest, cheat := tasks[0], tasks[1]
	node, err := a.GFLKeeper.GetNode(a.Ctx(), honest.NodeId)
	require.NoError(t, err)
	require.Equal(t, markettypes.Quote(node.AskPerGpuHour.Amount, 1, spec.MaxDuration).AddRaw(int64(j.RevealCost)), honest.Price)
	hName, cName := providerOf(nodes, honest.NodeId), providerOf(nodes, cheat.NodeId)
	cheatBond := bonded(t, a, cName)
	salt := []byte("gemm-job-salt-0123456")
	products := map[uint32]solved{}
	for _, tk := range tasks {
		products[tk.Index] = solveGemm(t, j.GemmChallenge(tk.Index))
	}
	require.NotEqual(t, products[0].root(), products[1].root(), "every shard is distinct work")
	wrong := solveGemm(t, pocp.Challenge{Seed: sha256.Sum256([]byte("not the job's matrix")), N: 256, R: 1})

	ack := func(name string, id uint64) {
		a.MustDeliver(name, &markettypes.MsgAckTask{Provider: a.Account(name).String(), TaskId: id})
	}
	commit := func(name string, id uint64, root []byte) {
		a.MustDeliver(name, &markettypes.MsgCommitResult{Provider: a.Account(name).String(), TaskId: id,
			Commitment: markettypes.Commitment(root, salt, a.Account(name).Address)})
	}
	reveal := func(name string, id uint64, g solved) *markettypes.MsgRevealResult {
		tk := task(t, a, id)
		seed := beacon.Derive(a.BeaconValue(tk.CommitHeight+1), markettypes.DomainGemmSample, id)
		return &markettypes.MsgRevealResult{Provider: a.Account(name).String(), TaskId: id, ResultRoot: g.root(), Salt: salt,
			OutputUri: fmt.Sprintf("https://%s.example.com/out/%d", name, id), GemmProofs: g.proofs(seed, gp.ChallengeSamples)}
	}

	ack(hName, honest.Id)
	ack(cName, cheat.Id)
	commit(hName, honest.Id, products[honest.Index].root())
	commit(cName, cheat.Id, wrong.root())
	a.NextBlock()

	// the wrong product fails its samples: nothing changes
	r := a.Deliver(cName, reveal(cName, cheat.Id, wrong))
	require.Equal(t, markettypes.ErrWrongResult.ABCICode(), r.Code, r.Log)
	require.Equal(t, markettypes.TASK_STATUS_COMMITTED, task(t, a, cheat.Id).Status)
	// proofs of the right product for the wrong root fail too (the paths do not reach it)
	forged := reveal(cName, cheat.Id, wrong)
	forged.GemmProofs = reveal(cName, cheat.Id, products[cheat.Index]).GemmProofs
	r = a.Deliver(cName, forged)
	require.Equal(t, markettypes.ErrInvalidReveal.ABCICode(), r.Code, r.Log)
	// the honest reveal is verified at once
	res := a.MustDeliver(hName, reveal(hName, honest.Id, products[honest.Index]))
	require.Equal(t, markettypes.TASK_STATUS_VERIFIED, task(t, a, honest.Id).Status)
	t.Logf("GEMM reveal: gas used %d, priced at submission %d (+ a reveal's fixed cost)", res.GasUsed, j.RevealGas)
	require.Less(t, uint64(res.GasUsed), j.RevealGas+300_000, "the priced gas covers the reveal's proofs and verification")
	a.AssertInvariants()

	// the cheater's reveal deadline passes: slashed, and the task goes to another node
	for task(t, a, cheat.Id).NodeId == nodes[cName] {
		a.NextBlock()
	}
	slash := cheatBond.MulRaw(int64(mp.MissedRevealSlashPpm)).QuoRaw(1e6)
	require.Equal(t, cheatBond.Sub(slash), bonded(t, a, cName))
	moved := task(t, a, cheat.Id)
	third := providerOf(nodes, moved.NodeId)
	require.NotEqual(t, cName, third, "the lapsed node is excluded (the honest one, now idle, may take it)")
	ack(third, moved.Id)
	commit(third, moved.Id, products[moved.Index].root())
	a.NextBlock()
	a.MustDeliver(third, reveal(third, moved.Id, products[moved.Index]))
	a.NextBlocks(int(mp.ChallengeWindowBlocks))

	require.Equal(t, markettypes.JOB_STATUS_COMPLETED, getJob(t, a, job).Status)
	gross := honest.Price.Add(spec.PriorityTip.Amount).Add(moved.Price).Add(spec.PriorityTip.Amount)
	require.Equal(t, clientStart.Sub(gross), a.Balance(a.Account("client").Address, udps),
		"the owner pays two verified tasks; the lapse's slash is burned, not paid to it")
	require.True(t, a.ModuleBalance(markettypes.ModuleName, udps).IsZero())
	a.AssertInvariants()

	// each task counts once as verified work of the provider that did it
	done := map[string]uint64{}
	done[hName]++
	done[third]++
	for _, name := range []string{"p1", "p2", "p3"} {
		var n uint64
		for _, w := range workOf(t, a, name) {
			n += w.Tasks
		}
		require.Equal(t, done[name], n, name)
	}
}
