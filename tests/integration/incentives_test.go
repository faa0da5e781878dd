package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	"github.com/flopsnet/flops/testutil/apptest"
	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gflkeeper "github.com/flopsnet/flops/x/gfl/keeper"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	marketkeeper "github.com/flopsnet/flops/x/market/keeper"
	markettypes "github.com/flopsnet/flops/x/market/types"
	reputationtypes "github.com/flopsnet/flops/x/reputation/types"
	sstypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// Incentives on the wired app: x/reputation's scores and x/dps's rewards over several
// x/epochs epochs, driven by scripted providers (driver_test.go) that also answer their
// PoCP challenges (prover_test.go).

// incentivesEpoch is the reward epoch of these tests: 60 blocks of 1 s.
const incentivesEpoch = 60 * time.Second

// genesisPool is the reward pool's genesis funding: 10,000 DPS.
const genesisPool = 10_000_000_000

// incentiveApp starts an app whose "flops" epoch lasts incentivesEpoch, with small PoCP
// challenges every challengeInterval blocks (0: none), a funded reward pool, R0 =
// dpsPerGFL udps per ugfl (the test networks hold tens of GFLOP/s, not thousands of GFL),
// short market windows, and a lapsed task failing at once (max_reassignments 0).
func incentiveApp(t *testing.T, challengeInterval uint64, dpsPerGFL int64, accounts ...string) *apptest.App {
	t.Helper()
	return apptest.New(t, apptest.WithAccounts(accounts...), apptest.WithGenesis(apptest.SmallPoCP(incentivesEpoch)),
		apptest.WithGenesis(func(e apptest.GenesisEditor) {
			var g gfltypes.GenesisState
			e.Edit(gfltypes.ModuleName, &g, func() {
				g.Params.ChallengeIntervalBlocks = 1_000_000
				if challengeInterval > 0 {
					g.Params.ChallengeIntervalBlocks = challengeInterval
				}
			})
			var m markettypes.GenesisState
			e.Edit(markettypes.ModuleName, &m, func() {
				m.Params.ChallengeWindowBlocks = 5
				m.Params.AckTimeoutBlocks = 5
				m.Params.MaxReassignments = 0
				m.Params.BillingGranularity = 10 * time.Minute // a task is paid its price + tip (market_test.go)
			})
			var d dpstypes.GenesisState
			e.Edit(dpstypes.ModuleName, &d, func() { d.Params.DpsPerGfl = sdkmath.LegacyNewDec(dpsPerGFL) })
			var b banktypes.GenesisState
			e.Edit(banktypes.ModuleName, &b, func() {
				pool := sdk.NewCoins(sdk.NewInt64Coin(udps, genesisPool))
				b.Balances = append(b.Balances, banktypes.Balance{Address: authtypes.NewModuleAddress(dpstypes.ModuleName).String(), Coins: pool})
				b.Supply = b.Supply.Add(pool...)
			})
		}))
}

// h200Spec is a node of gpus H200s (class factor 1 for every workload: its corrected power
// is its GFL index) in a region of its own, claiming claimed GFLOP/s: PoCP challenges are
// sized for claimed GFLOP in 1 s, so a node answering in one block measures just under it.
func h200Spec(tag, region string, gpus int, claimed uint64) gfltypes.NodeSpec {
	s := gfltypes.NodeSpec{
		Region: region, Endpoint: "https://" + tag + ".example.com",
		Workloads:     []gfltypes.WorkloadClass{gfltypes.WORKLOAD_CLASS_TRAINING, gfltypes.WORKLOAD_CLASS_INFERENCE, gfltypes.WORKLOAD_CLASS_BATCH},
		Runtimes:      []gfltypes.Runtime{gfltypes.RUNTIME_BUILTIN, gfltypes.RUNTIME_PROCESS, gfltypes.RUNTIME_CONTAINER},
		AskPerGpuHour: sdk.NewInt64Coin(udps, 1_000_000), ClaimedGflops: claimed,
	}
	for i := range gpus {
		s.Gpus = append(s.Gpus, gfltypes.GpuInfo{
			Model: "NVIDIA H200", Uuid: "GPU-" + tag + "-" + string(rune('0'+i)), MemoryMib: 143_771, ComputeCapability: "9.0", TensorCores: true,
		})
	}
	return s
}

// registerNode bonds collateral for the node's GPUs (100 DPS each, plus extra) and
// registers it; it returns the new node's id.
func registerNode(t *testing.T, a *apptest.App, account string, spec gfltypes.NodeSpec, extra int64) uint64 {
	t.Helper()
	op := a.Account(account)
	before := nodesOf(t, a, account)
	a.MustDeliver(account,
		&sstypes.MsgBond{Provider: op.String(), Amount: sdk.NewInt64Coin(udps, int64(len(spec.Gpus))*100_000_000+extra)},
		&gfltypes.MsgRegisterNode{Operator: op.String(), Spec: spec},
	)
	after := nodesOf(t, a, account)
	require.Len(t, after, len(before)+1)
	return after[len(after)-1]
}

// nodesOf lists an operator's node ids, ascending.
func nodesOf(t *testing.T, a *apptest.App, account string) []uint64 {
	t.Helper()
	it, err := a.GFLKeeper.Nodes.Indexes.ByOperator.MatchExact(a.Ctx(), a.Account(account).Address)
	require.NoError(t, err)
	defer func() { _ = it.Close() }()
	var out []uint64
	for ; it.Valid(); it.Next() {
		id, err := it.PrimaryKey()
		require.NoError(t, err)
		out = append(out, id)
	}
	return out
}

// market plays providers' tasks (the driver) and their PoCP answers (provers) together:
// one tx per account per block.
type market struct {
	t       *testing.T
	a       *apptest.App
	d       *driver
	provers map[string]*prover
	// skip says which of an account's challenges it leaves unanswered (missed).
	skip map[string]func(challengeID uint64) bool
	// extra are msgs an account sends in the next block besides its tasks and challenges.
	extra map[string][]sdk.Msg
}

func newMarket(t *testing.T, a *apptest.App, d *driver, provers ...*prover) *market {
	m := &market{t: t, a: a, d: d, provers: map[string]*prover{}, skip: map[string]func(uint64) bool{}, extra: map[string][]sdk.Msg{}}
	for _, p := range provers {
		m.provers[p.account] = p
	}
	return m
}

func (m *market) step() {
	m.t.Helper()
	names := map[string]behaviour{}
	for n, b := range m.d.behaviours {
		names[n] = b
	}
	for n := range m.provers {
		names[n] = behaviour{}
	}
	for n := range m.extra {
		names[n] = behaviour{}
	}
	var txs [][]byte
	for _, n := range sortedNames(names) {
		msgs := m.extra[n]
		delete(m.extra, n)
		if _, ok := m.d.behaviours[n]; ok {
			msgs = append(msgs, m.d.msgs(n)...)
		}
		if p, ok := m.provers[n]; ok && !m.skipping(n) {
			msgs = append(msgs, p.msgs(m.a)...)
		}
		if len(msgs) > 0 {
			txs = append(txs, m.a.SignTx(n, apptest.DefaultGas, msgs...))
		}
	}
	res := m.a.NextBlock(txs...)
	for i, r := range res.TxResults {
		require.Zerof(m.t, r.Code, "tx %d at height %d: %s", i, m.a.Height(), r.Log)
	}
}

// skipping: the account leaves an open challenge unanswered, so its prover sits this
// block out (and does not solve it). Meant for single-node operators.
func (m *market) skipping(name string) bool {
	skip := m.skip[name]
	if skip == nil {
		return false
	}
	res, err := gflkeeper.NewQueryServerImpl(m.a.GFLKeeper).OpenChallenges(m.a.Ctx(), &gfltypes.QueryOpenChallengesRequest{Operator: m.a.Account(name).String()})
	require.NoError(m.t, err)
	for _, c := range res.Challenges {
		if c.Status == gfltypes.CHALLENGE_STATUS_ISSUED && skip(c.Id) {
			return true
		}
	}
	return false
}

// deliver sends msgs from the named account in the next block, in the same tx as its
// tasks' and challenges' msgs (a block without them would let a challenge's reveal lapse).
func (m *market) deliver(name string, msgs ...sdk.Msg) {
	m.t.Helper()
	m.extra[name] = append(m.extra[name], msgs...)
	m.step()
}

// submit submits a job owned by the named account and returns its id.
func (m *market) submit(owner string, spec markettypes.JobSpec) uint64 {
	m.t.Helper()
	m.deliver(owner, &markettypes.MsgSubmitJob{Owner: m.a.Account(owner).String(), Spec: spec})
	jobs, err := marketkeeper.NewQueryServerImpl(m.a.MarketKeeper).JobsByOwner(m.a.Ctx(), &markettypes.QueryJobsByOwnerRequest{Owner: m.a.Account(owner).String()})
	require.NoError(m.t, err)
	return jobs.Jobs[len(jobs.Jobs)-1].Id
}

// until steps until done() or the limit, and fails the test at the limit.
func (m *market) until(limit int, what string, done func() bool) {
	m.t.Helper()
	for range limit {
		if done() {
			return
		}
		m.step()
	}
	require.Truef(m.t, done(), "%s: not after %d blocks", what, limit)
}

// distributed: the distribution of x/epochs epoch n has finished.
func distributed(a *apptest.App, n uint64) func() bool {
	return func() bool {
		ok, err := a.DPSKeeper.Distributions.Has(a.Ctx(), n)
		return err == nil && ok
	}
}

// scored: reputation epoch n has been scored for every node.
func scored(t *testing.T, a *apptest.App, n uint64) func() bool {
	return func() bool {
		st, err := a.ReputationKeeper.Scoring.Get(a.Ctx())
		require.NoError(t, err)
		return st.CurrentEpoch > n && (len(st.Pending) == 0 || st.Pending[0] > n)
	}
}

// workEpoch is x/epochs' current "flops" epoch, under which x/market records work.
func workEpoch(t *testing.T, a *apptest.App) uint64 {
	t.Helper()
	n, err := a.DPSKeeper.CurrentWorkEpoch(a.Ctx())
	require.NoError(t, err)
	return n
}

func emission(t *testing.T, a *apptest.App, n uint64) dpstypes.Distribution {
	t.Helper()
	res, err := dpstypes.NewQueryClient(a.QueryConn()).Emission(t.Context(), &dpstypes.QueryEmissionRequest{Epoch: n})
	require.NoError(t, err)
	return res.Distribution
}

// rewardsOf returns an account's rewards of epoch n (zero when none).
func rewardsOf(t *testing.T, a *apptest.App, name string, n uint64) dpstypes.ProviderReward {
	t.Helper()
	res, err := dpstypes.NewQueryClient(a.QueryConn()).ProviderRewards(t.Context(), &dpstypes.QueryProviderRewardsRequest{Provider: a.Account(name).String()})
	require.NoError(t, err)
	for _, r := range res.Rewards {
		if r.Epoch == n {
			return r
		}
	}
	return dpstypes.ProviderReward{Provider: a.Account(name).String(), Epoch: n, Availability: sdkmath.ZeroInt(), Work: sdkmath.ZeroInt()}
}

func nodeScore(t *testing.T, a *apptest.App, node uint64) reputationtypes.QueryScoreResponse {
	t.Helper()
	res, err := reputationtypes.NewQueryClient(a.QueryConn()).Score(t.Context(), &reputationtypes.QueryScoreRequest{NodeId: node})
	require.NoError(t, err)
	return *res
}

// ranked returns the node ids best first.
func ranked(t *testing.T, a *apptest.App) []uint64 {
	t.Helper()
	res, err := reputationtypes.NewQueryClient(a.QueryConn()).Ranked(t.Context(), &reputationtypes.QueryRankedRequest{})
	require.NoError(t, err)
	var out []uint64
	for _, s := range res.Scores {
		out = append(out, s.NodeId)
	}
	return out
}

// workRecords returns epoch n's verified work per provider account (before x/dps prunes it).
func workRecords(t *testing.T, a *apptest.App, n uint64) map[string]dpstypes.WorkRecord {
	t.Helper()
	out := map[string]dpstypes.WorkRecord{}
	rng := collections.NewPrefixedTripleRange[uint64, sdk.AccAddress, int32](n)
	require.NoError(t, a.DPSKeeper.Work.Walk(a.Ctx(), rng, func(k collections.Triple[uint64, sdk.AccAddress, int32], w dpstypes.WorkRecord) (bool, error) {
		out[k.K2().String()] = w
		return false, nil
	}))
	return out
}

func dec(s string) sdkmath.LegacyDec { return sdkmath.LegacyMustNewDecFromStr(s) }

// regionJob is a 1-GPU BUILTIN job of n tasks that only nodes of region may run.
func regionJob(a *apptest.App, tasks uint32, region string) markettypes.JobSpec {
	s := gemmJob(a, tasks, markettypes.ALLOCATION_MODE_ASSIGN)
	s.Requirements.Region = region
	return s
}

// history returns a node's score record of reputation epoch n.
func history(t *testing.T, a *apptest.App, node, n uint64) reputationtypes.ScoreRecord {
	t.Helper()
	res, err := reputationtypes.NewQueryClient(a.QueryConn()).History(t.Context(), &reputationtypes.QueryHistoryRequest{NodeId: node})
	require.NoError(t, err)
	for _, r := range res.History {
		if r.Epoch == n {
			return r
		}
	}
	t.Fatalf("node %d: no score record of epoch %d", node, n)
	return reputationtypes.ScoreRecord{}
}

// expectedScore is S = alpha*A + beta*R + gamma*S_prev with the default weights (0.6, 0.2,
// 0.2), written out from x/reputation/README.md: A = good/all accuracy events and R =
// good/all responsiveness events, S_prev standing in for a term without events.
func expectedScore(prev sdkmath.LegacyDec, c reputationtypes.EpochCounters) sdkmath.LegacyDec {
	aAll := c.TasksVerifiedOk + c.TasksVerifiedFailed + c.ChallengesPassed + c.ChallengesFailed + c.ChallengesMissed
	rAll := c.AcksOnTime + c.AcksLate + c.Lapses + c.SettledOnTime + c.SettledLate
	if aAll == 0 && rAll == 0 {
		return prev.Add(dec("0.1").MulTruncate(dec("0.5").Sub(prev)))
	}
	acc, resp := prev, prev
	if aAll > 0 {
		acc = sdkmath.LegacyNewDec(int64(c.TasksVerifiedOk + c.ChallengesPassed)).QuoInt64(int64(aAll))
	}
	if rAll > 0 {
		resp = sdkmath.LegacyNewDec(int64(c.AcksOnTime + c.SettledOnTime)).QuoInt64(int64(rAll))
	}
	return dec("0.6").MulTruncate(acc).Add(dec("0.2").MulTruncate(resp)).Add(dec("0.2").MulTruncate(prev))
}

// factor is x/dps's reputation factor: the score, or 0 below min_score (0.4).
func factor(score sdkmath.LegacyDec) sdkmath.LegacyDec {
	if score.LT(dec("0.4")) {
		return sdkmath.LegacyZeroDec()
	}
	return score
}

// Three providers over four epochs. "big" runs two H200 nodes claiming 8 GFLOP/s, "mid"
// one node claiming 8 that leaves one PoCP challenge in three unanswered, "flaky" one node
// claiming 4 that answers its challenges but never acks a task. From the second epoch on,
// each epoch the client pays two tasks on big's nodes, one on mid's and one on flaky's
// (each job pinned to its nodes by region). Every epoch: the emission is 20% of the
// network's GFL times R0, what is paid plus the remainder is the emission, each
// provider's availability and work rewards are the formula's (computed here from the
// node powers, the work records and the scores), the pool moves by exactly the take it
// received minus what was paid, and every score is the formula's of its epoch's events.
// Rewards and scores come out big > mid > flaky.
func TestIncentivesMultiEpoch(t *testing.T) {
	const r0 = 20_000 // udps per ugfl
	a := incentiveApp(t, 20, r0, "client", "big", "mid", "flaky")
	big1 := registerNode(t, a, "big", h200Spec("big1", "eu-west", 1, 8), 0)
	big2 := registerNode(t, a, "big", h200Spec("big2", "eu-west", 1, 8), 0)
	mid := registerNode(t, a, "mid", h200Spec("mid", "us-east", 1, 8), 0)
	flaky := registerNode(t, a, "flaky", h200Spec("flaky", "ap-south", 1, 4), 0)
	nodes := map[string][]uint64{"big": {big1, big2}, "mid": {mid}, "flaky": {flaky}}
	providers := []string{"big", "mid", "flaky"}
	d := newDriver(t, a, "big", "mid", "flaky")
	d.behaviours["flaky"] = behaviour{silent: true}
	m := newMarket(t, a, d, newProver(t, "big", 1), newProver(t, "mid", 1), newProver(t, "flaky", 1))
	missed, seen := map[uint64]bool{}, 0
	m.skip["mid"] = func(id uint64) bool {
		if _, ok := missed[id]; !ok {
			seen++
			missed[id] = seen%3 == 0
		}
		return missed[id]
	}
	power := func(id uint64) uint64 {
		n, err := a.GFLKeeper.GetNode(a.Ctx(), id)
		require.NoError(t, err)
		return n.PowerGflops
	}
	mp, err := a.MarketKeeper.GetParams(a.Ctx())
	require.NoError(t, err)
	gross := sdkmath.NewInt(price + 100_000) // price + tip of every task
	poolTake := gross.MulRaw(int64(mp.TakeRatePpm)).QuoRaw(1e6).MulRaw(int64(mp.TakePoolSharePpm)).QuoRaw(1e6)
	require.Equal(t, sdkmath.NewInt(6_666), poolTake, "the pool's half of the 5%% take of 266,667 udps")

	pool := a.ModuleBalance(dpstypes.ModuleName, udps)
	require.Equal(t, sdkmath.NewInt(genesisPool), pool)
	prevScore := map[uint64]sdkmath.LegacyDec{}
	for _, id := range []uint64{big1, big2, mid, flaky} {
		prevScore[id] = dec("0.5") // initial_score
	}
	total := map[string]sdkmath.Int{"big": sdkmath.ZeroInt(), "mid": sdkmath.ZeroInt(), "flaky": sdkmath.ZeroInt()}
	trajectory := map[uint64][]string{}
	first := workEpoch(t, a)
	const epochs = 4
	for n := first; n < first+epochs; n++ {
		// powers as x/market records the epoch's work with them: the previous rebalance's
		settledPower := map[uint64]uint64{big1: power(big1), big2: power(big2), mid: power(mid)}
		if n > first {
			m.submit("client", regionJob(a, 2, "eu-west"))
			m.submit("client", regionJob(a, 1, "us-east"))
			m.submit("client", regionJob(a, 1, "ap-south"))
		}
		var work map[string]dpstypes.WorkRecord
		m.until(100, "epoch end", func() bool {
			if workEpoch(t, a) != n {
				return true
			}
			work = workRecords(t, a, n)
			return false
		})
		for !distributed(a, n)() {
			m.step()
			require.Less(t, a.Height(), int64(1_000), "epoch %d not distributed", n)
		}
		e := emission(t, a, n)
		require.False(t, e.Aborted)
		require.Equal(t, n, history(t, a, big1, n).Epoch, "reputation epochs follow x/epochs' here")

		// the work of the epoch: big's two tasks and mid's one, 1 s each at the node's
		// power (H200: corrected power = GFL index); flaky's lapsed task is no work
		if n > first {
			require.Equal(t, dpstypes.WorkRecord{GflopSeconds: sdkmath.NewIntFromUint64(settledPower[big1] + settledPower[big2]),
				Fees: gross.MulRaw(2), Tasks: 2}, work[a.Account("big").Address.String()])
			require.Equal(t, dpstypes.WorkRecord{GflopSeconds: sdkmath.NewIntFromUint64(settledPower[mid]),
				Fees: gross, Tasks: 1}, work[a.Account("mid").Address.String()])
			require.Len(t, work, 2)
		} else {
			require.Empty(t, work, "no job in the first epoch")
		}

		// the scores: the formula on each node's counters of the epoch
		score := map[uint64]sdkmath.LegacyDec{}
		for _, id := range []uint64{big1, big2, mid, flaky} {
			rec := history(t, a, id, n)
			require.Equal(t, prevScore[id], rec.PrevScore)
			require.Equal(t, expectedScore(prevScore[id], rec.Counters), rec.Score, "node %d epoch %d: %+v", id, n, rec.Counters)
			score[id] = rec.Score
			prevScore[id] = rec.Score
			trajectory[id] = append(trajectory[id], rec.Score.String())
		}

		// the emission: E = floor(20% * G * R0), G = the sum of the powers just rebalanced
		g := power(big1) + power(big2) + power(mid) + power(flaky)
		require.Equal(t, g, e.TotalGfl)
		require.Equal(t, sdkmath.NewIntFromUint64(g*r0/5), e.Emission, "E = G * R0 / 5")
		require.Equal(t, e.Emission.QuoRaw(2), e.Availability)
		require.Equal(t, e.Emission.Sub(e.Availability), e.Work)

		// every provider's rewards, by the formula
		var totalWeight int64
		for _, w := range work {
			totalWeight += w.GflopSeconds.Int64()
		}
		paid := sdkmath.ZeroInt()
		got := map[string]dpstypes.ProviderReward{}
		for _, p := range providers {
			wantAvail := sdkmath.ZeroInt()
			mean := sdkmath.LegacyZeroDec()
			for _, id := range nodes[p] {
				base := e.Availability.MulRaw(int64(power(id))).QuoRaw(int64(g))
				wantAvail = wantAvail.Add(factor(score[id]).MulInt(base).TruncateInt())
				mean = mean.Add(score[id])
			}
			mean = mean.QuoInt64(int64(len(nodes[p])))
			wantWork := sdkmath.ZeroInt()
			if w, ok := work[a.Account(p).Address.String()]; ok && totalWeight > 0 {
				share := e.Work.Mul(w.GflopSeconds).QuoRaw(totalWeight)
				workCap := w.Fees.MulRaw(40_000).QuoRaw(1e6)
				wantWork = factor(mean).MulInt(sdkmath.MinInt(share, workCap)).TruncateInt()
			}
			got[p] = rewardsOf(t, a, p, n)
			require.Equal(t, wantAvail.String(), got[p].Availability.String(), "%s availability, epoch %d", p, n)
			require.Equal(t, wantWork.String(), got[p].Work.String(), "%s work, epoch %d", p, n)
			paid = paid.Add(got[p].Availability).Add(got[p].Work)
			total[p] = total[p].Add(got[p].Availability).Add(got[p].Work)
		}
		require.Equal(t, e.PaidAvailability.Add(e.PaidWork), paid, "the history adds up to what was paid")
		require.Equal(t, e.Emission, paid.Add(e.Remainder), "paid + remainder = E")

		// the pool: + the take of the tasks settled since the last distribution, - paid
		settled := int64(0)
		if n > first {
			settled = 3
		}
		require.Equal(t, poolTake.MulRaw(settled), e.Replenished)
		now := a.ModuleBalance(dpstypes.ModuleName, udps)
		require.Equal(t, pool.Add(poolTake.MulRaw(settled)).Sub(paid), now, "epoch %d: pool", n)
		pool = now

		if n > first {
			// more power, more work and a better record earn more, in every part
			sum := func(r dpstypes.ProviderReward) sdkmath.Int { return r.Availability.Add(r.Work) }
			require.True(t, sum(got["big"]).GT(sum(got["mid"])), "epoch %d: big %s, mid %s", n, sum(got["big"]), sum(got["mid"]))
			require.True(t, sum(got["mid"]).GT(sum(got["flaky"])), "epoch %d: mid %s, flaky %s", n, sum(got["mid"]), sum(got["flaky"]))
			require.True(t, got["big"].Work.GT(got["mid"].Work))
			require.True(t, got["mid"].Work.IsPositive())
			require.True(t, got["flaky"].Work.IsZero(), "a provider that does no work earns no work reward")
			require.True(t, score[big1].GT(score[mid]) && score[mid].GT(score[flaky]), "epoch %d scores %s %s %s", n, score[big1], score[mid], score[flaky])
			require.Equal(t, []uint64{big1, big2, mid, flaky}, ranked(t, a), "best first")
		}
		if n == first+2 {
			// The third epoch by hand. Powers just rebalanced: big 7 + 7, mid 3 (it missed a
			// challenge), flaky 3: G = 20 ugfl; E = 20% x 20 x 20,000 = 80,000 udps;
			// E_avail = E_work = 40,000. Scores: big's nodes 0.992, mid 0.761999999999999999,
			// flaky 0.752 (all above min_score 0.4: factor = score).
			require.Equal(t, []uint64{7, 7, 3, 3}, []uint64{power(big1), power(big2), power(mid), power(flaky)})
			require.Equal(t, []string{"0.992000000000000000", "0.761999999999999999", "0.752000000000000000"},
				[]string{score[big1].String(), score[mid].String(), score[flaky].String()})
			require.Equal(t, sdkmath.NewInt(80_000), e.Emission)
			// availability: big 2 x floor(floor(40,000 x 7/20) x 0.992) = 2 x 13,888;
			// mid floor(6,000 x 0.761999999999999999) = 4,571; flaky floor(6,000 x 0.752) = 4,512
			require.Equal(t, sdkmath.NewInt(27_776), got["big"].Availability)
			require.Equal(t, sdkmath.NewInt(4_571), got["mid"].Availability)
			require.Equal(t, sdkmath.NewInt(4_512), got["flaky"].Availability)
			// work, weighted by the powers the tasks settled at (big 7 + 7, mid 4; total 18):
			// big floor(40,000 x 14/18) = 31,111 is above its cap floor(4% x 533,334) = 21,333,
			// so floor(21,333 x 0.992) = 21,162; mid floor(40,000 x 4/18) = 8,888 is under its
			// cap 10,666: floor(8,888 x 0.761999999999999999) = 6,772
			require.Equal(t, sdkmath.NewInt(21_162), got["big"].Work)
			require.Equal(t, sdkmath.NewInt(6_772), got["mid"].Work)
			require.Equal(t, sdkmath.NewInt(36_859), e.PaidAvailability)
			require.Equal(t, sdkmath.NewInt(27_934), e.PaidWork)
			require.Equal(t, sdkmath.NewInt(15_207), e.Remainder, "80,000 - 64,793 stays in the pool")
		}
	}
	// honest and busy: 0.5 -> 0.8 (PoCP only: R stands in as 0.5) -> 0.96 -> 0.992 -> 0.9984;
	// never acking: A = 1 from PoCP, R = 0: 0.76, 0.752, 0.7504
	require.Equal(t, []string{"0.800000000000000000", "0.960000000000000000", "0.992000000000000000", "0.998400000000000000"}, trajectory[big1])
	require.Equal(t, trajectory[big1], trajectory[big2])
	require.Equal(t, []string{"0.800000000000000000", "0.760000000000000000", "0.752000000000000000", "0.750400000000000000"}, trajectory[flaky])
	require.True(t, total["big"].GT(total["mid"]) && total["mid"].GT(total["flaky"]), "totals %v", total)
	a.AssertInvariants()
}

func nodePower(t *testing.T, a *apptest.App, id uint64) uint64 {
	t.Helper()
	n, err := a.GFLKeeper.GetNode(a.Ctx(), id)
	require.NoError(t, err)
	return n.PowerGflops
}

// A provider ("dealer") tries to pay itself for work. From its own account it cannot: the
// scheduler never gives a job to a node of its owner, so its job waits until it cancels it
// (refunded in full), and nothing is recorded. Through a second account ("sock") that it
// funds by a bank send, it cannot either: the send links sock to dealer (x/market's funding
// link), so sock's two tasks run on dealer's node and are paid as usual, but x/market
// records no work for them and dealer's work reward is zero. The loop paid x/market's 5%
// take for nothing: the two accounts end the epoch with exactly the take less than they
// started with, their availability reward (earned by dealer's GFL whatever it does) aside.
// A real client's task on another provider's node still counts as that provider's work.
func TestSelfDealingLoopLosesMoney(t *testing.T) {
	const r0 = 100_000 // udps per ugfl: E_work is far above what the loop's fees cap
	a := incentiveApp(t, 20, r0, "client", "dealer", "other", "sock")
	dealerNode := registerNode(t, a, "dealer", h200Spec("dealer", "eu-west", 1, 8), 0)
	otherNode := registerNode(t, a, "other", h200Spec("other", "us-east", 1, 8), 0)
	d := newDriver(t, a, "dealer", "other")
	m := newMarket(t, a, d, newProver(t, "dealer", 1), newProver(t, "other", 1))

	// the first epoch measures the nodes' power (work settled before a node has power
	// weighs nothing, so the loop is played in the second)
	first := workEpoch(t, a)
	m.until(200, "first distribution", distributed(a, first))
	n := first + 1
	require.Equal(t, n, workEpoch(t, a))
	require.Equal(t, []uint64{7, 7}, []uint64{nodePower(t, a, dealerNode), nodePower(t, a, otherNode)})
	start := balances(a, "dealer", "sock")

	// 1. From its own account: no node of the owner is eligible; the job waits (only
	// dealer's node is in eu-west) and dealer cancels it, refunded in full.
	ownSpec := regionJob(a, 1, "eu-west")
	own := m.submit("dealer", ownSpec)
	require.Equal(t, start["dealer"].Sub(ownSpec.Budget()), a.Balance(a.Account("dealer").Address, udps), "escrowed")
	for range 16 { // the scheduler retries it after 1, 2, 4, 8 blocks
		m.step()
	}
	ownTask := jobTasks(t, a, own)[0]
	require.Equal(t, markettypes.TASK_STATUS_PENDING, ownTask.Status, "never assigned to its owner's node")
	require.Zero(t, ownTask.NodeId)
	m.deliver("dealer", &markettypes.MsgCancelJob{Owner: a.Account("dealer").String(), JobId: own})
	require.Equal(t, start["dealer"], a.Balance(a.Account("dealer").Address, udps), "refunded in full")

	// 2. Through sock: dealer funds it with the budget of two jobs, sock submits them,
	// both land on dealer's node, dealer runs them. A real client pays other for one task.
	sockSpec := regionJob(a, 1, "eu-west")
	funding := sockSpec.Budget().MulRaw(2)
	m.deliver("dealer", banktypes.NewMsgSend(a.Account("dealer").Address, a.Account("sock").Address, sdk.NewCoins(sdk.NewCoin(udps, funding))))
	var loop []uint64
	for range 2 {
		loop = append(loop, m.submit("sock", sockSpec))
	}
	clientJob := m.submit("client", regionJob(a, 1, "us-east"))
	for _, j := range append(loop, clientJob) {
		m.until(60, "job finished", jobDone(t, a, j))
		require.Equal(t, markettypes.JOB_STATUS_COMPLETED, getJob(t, a, j).Status)
	}
	for _, j := range loop {
		require.Equal(t, dealerNode, jobTasks(t, a, j)[0].NodeId, "sock's job runs on dealer's node")
	}
	// the send linked sock to dealer, not dealer to sock
	linked, err := a.DPSKeeper.IsFundedBy(a.Ctx(), a.Account("sock").Address, a.Account("dealer").Address)
	require.NoError(t, err)
	require.True(t, linked, "sock is funded by dealer")
	linked, err = a.DPSKeeper.IsFundedBy(a.Ctx(), a.Account("dealer").Address, a.Account("sock").Address)
	require.NoError(t, err)
	require.False(t, linked)
	var work map[string]dpstypes.WorkRecord
	m.until(100, "epoch end", func() bool {
		if workEpoch(t, a) != n {
			return true
		}
		work = workRecords(t, a, n)
		return false
	})
	m.until(20, "distributed", distributed(a, n))

	// x/market recorded no work for sock's two tasks (its payer was funded by dealer) and
	// other's task for the real client at other's 7 GFLOP/s for 1 s; the cancelled own job
	// left nothing
	gross := sdkmath.NewInt(price + 100_000)
	require.Len(t, work, 1)
	_, dealerWork := work[a.Account("dealer").Address.String()]
	require.False(t, dealerWork, "no work record for dealer")
	require.Equal(t, dpstypes.WorkRecord{GflopSeconds: sdkmath.NewInt(7), Fees: gross, Tasks: 1}, work[a.Account("other").Address.String()])

	e := emission(t, a, n)
	// G = 14: E = 14 x 100,000 / 5 = 280,000, E_work = 140,000, all of it other's weight;
	// other's share is capped at floor(4% x 266,667) = 10,666, times its 0.96: 10,239
	require.Equal(t, uint64(14), e.TotalGfl)
	require.Equal(t, sdkmath.NewInt(140_000), e.Work)
	// sock's tasks are wash work: they earn dealer no reputation (x/market reports them to
	// nobody), so dealer's score moves only with its node's challenges, while other's also
	// counts the real client's verified, on-time task
	require.Equal(t, "0.960000000000000000", nodeScore(t, a, otherNode).Score.Score.String(), "honest: 0.8 after the first epoch, then 0.96")
	require.Equal(t, "0.920000000000000000", nodeScore(t, a, dealerNode).Score.Score.String(), "the wash tasks raised dealer's score")
	require.Equal(t, sdkmath.NewInt(10_239), rewardsOf(t, a, "other", n).Work, "the real client's task still earns work")
	require.Equal(t, sdkmath.NewInt(10_239), e.PaidWork)
	rw := rewardsOf(t, a, "dealer", n)
	require.True(t, rw.Work.IsZero(), "dealer earns no work reward from sock's jobs: %s", rw.Work)
	// the availability reward pays dealer's GFL, loop or no loop: floor(140,000 x 7/14) x
	// its 0.92
	require.Equal(t, sdkmath.NewInt(64_400), rw.Availability)

	// The loop's cost: x/market's take of 5% on each of the two tasks (13,333 each: half
	// to the pool, half to the fee collector); the txs pay no fee in this harness.
	take := gross.MulRaw(50_000).QuoRaw(1_000_000).MulRaw(2)
	require.Equal(t, sdkmath.NewInt(26_666), take)
	end := balances(a, "dealer", "sock")
	change := end["dealer"].Add(end["sock"]).Sub(start["dealer"]).Sub(start["sock"])
	loopProfit := change.Sub(rw.Availability)
	require.Equal(t, sdkmath.NewInt(-26_666), loopProfit, "0 - 26,666: the loop loses its whole take")
	a.AssertInvariants()
}

// A cheater's score falls below min_score and the ASSIGN scheduler stops giving it work;
// honest nodes' scores rise. Four one-GPU nodes in one region; each answers the PoCP
// challenge it gets at registration (no more: the interval is out of reach), so after the
// first epoch every node scores 0.6*1 + 0.2*0.5 + 0.2*0.5 = 0.8 (R not measured: S_prev
// stands in) and from then on the scores come from tasks only.
//   - Epoch 2: two EXACT jobs replicated on all four nodes; the cheater computes the
//     first honestly and commits a wrong root for the second, which the three honest
//     replicas outvote (it is slashed): A = 1/2, R = 1, S = 0.3 + 0.2 + 0.2*0.8 = 0.66,
//     still eligible.
//   - Epoch 3: one more four-replica job, the cheater is scheduled and wrong again:
//     A = 0, S = 0.2 + 0.2*0.66 = 0.332 < min_score 0.4.
//   - Epoch 4: a three-replica EXACT job and a three-task job all go to the honest nodes,
//     although the cheater's node is idle, active, unjailed and covered by its
//     collateral; idle, its score drifts to 0.332 + 0.1*(0.5 - 0.332) = 0.3488.
//
// Honest nodes: 0.8, 0.96, 0.992, 0.9984.
func TestCheaterScoreFallsAndStopsBeingScheduled(t *testing.T) {
	a := incentiveApp(t, 0, 10_000, "client", "cheat", "h1", "h2", "h3")
	// the cheater bonds 1,000 DPS more than its node needs: its slashes never leave it
	// short of collateral, so only its score can keep it from work
	cheat := registerNode(t, a, "cheat", h200Spec("cheat", "eu-west", 1, 8), 1_000_000_000)
	honest := []uint64{
		registerNode(t, a, "h1", h200Spec("h1", "eu-west", 1, 8), 0),
		registerNode(t, a, "h2", h200Spec("h2", "eu-west", 1, 8), 0),
		registerNode(t, a, "h3", h200Spec("h3", "eu-west", 1, 8), 0),
	}
	d := newDriver(t, a, "cheat", "h1", "h2", "h3")
	m := newMarket(t, a, d, newProver(t, "cheat", 1), newProver(t, "h1", 1), newProver(t, "h2", 1), newProver(t, "h3", 1))
	exact := func(replicas uint32) markettypes.JobSpec {
		s := exactJob(a, replicas, 0)
		s.Requirements.Region = "eu-west"
		return s
	}
	run := func(spec markettypes.JobSpec) uint64 {
		job := m.submit("client", spec)
		m.until(60, "job finished", jobDone(t, a, job))
		return job
	}
	endEpoch := func(n uint64) {
		m.until(100, "epoch scored", scored(t, a, n))
	}
	type scores struct{ cheat, honest string }
	var trajectory []scores
	record := func(n uint64) {
		c := nodeScore(t, a, cheat)
		require.Equal(t, n, c.Score.LastEpoch)
		for _, h := range honest[1:] {
			require.Equal(t, nodeScore(t, a, honest[0]).Score.Score, nodeScore(t, a, h).Score.Score)
		}
		trajectory = append(trajectory, scores{c.Score.Score.String(), nodeScore(t, a, honest[0]).Score.Score.String()})
	}

	endEpoch(1)
	record(1)

	// epoch 2: one honest job, then one cheated
	first := run(exact(4))
	require.Equal(t, markettypes.JOB_STATUS_COMPLETED, getJob(t, a, first).Status)
	d.behaviours["cheat"] = behaviour{cheat: true}
	caught := run(exact(4))
	for _, tk := range jobTasks(t, a, caught) {
		want := markettypes.TASK_STATUS_SETTLED
		if tk.NodeId == cheat {
			want = markettypes.TASK_STATUS_FAILED
		}
		require.Equal(t, want, tk.Status, "node %d", tk.NodeId)
	}
	endEpoch(2)
	record(2)
	require.True(t, nodeScore(t, a, cheat).Eligible, "0.66 is above min_score 0.4")

	// epoch 3: still scheduled, caught again
	caught = run(exact(4))
	require.Contains(t, nodesOfJob(t, a, caught), cheat, "still eligible: it got a replica")
	endEpoch(3)
	record(3)
	c := nodeScore(t, a, cheat)
	require.False(t, c.Eligible, "0.332 is below min_score 0.4")
	require.Equal(t, reputationtypes.SCORE_OUTCOME_MEASURED, c.Score.Outcome)
	require.Equal(t, []uint64{honest[0], honest[1], honest[2], cheat}, ranked(t, a), "the cheater ranks last")

	// epoch 4: the cheater's node is free, active and unjailed, its collateral covers a
	// task, but no task goes to it
	var jobs []uint64
	jobs = append(jobs, m.submit("client", exact(3)))
	spread := regionJob(a, 3, "eu-west")
	jobs = append(jobs, m.submit("client", spread))
	for _, j := range jobs {
		m.until(80, "job finished", jobDone(t, a, j))
		require.Equal(t, markettypes.JOB_STATUS_COMPLETED, getJob(t, a, j).Status)
	}
	slot, err := a.MarketKeeper.Slots.Get(a.Ctx(), cheat)
	require.NoError(t, err)
	require.True(t, slot.Active)
	require.Zero(t, slot.GpusUsed)
	coll, err := a.StakingSlashKeeper.GetCollateral(a.Ctx(), a.Account("cheat").Address)
	require.NoError(t, err)
	require.False(t, coll.Jailed)
	ok, err := a.StakingSlashKeeper.CanAddExposure(a.Ctx(), a.Account("cheat").Address, sdkmath.NewInt(100_000_000))
	require.NoError(t, err)
	require.True(t, ok, "its collateral would cover a task")
	for _, j := range jobs {
		for _, n := range nodesOfJob(t, a, j) {
			require.NotEqual(t, cheat, n, "job %d", j)
		}
	}
	require.Len(t, nodesOfJob(t, a, jobs[0]), 3)
	require.Len(t, nodesOfJob(t, a, jobs[1]), 3)
	endEpoch(4)
	record(4)

	require.Equal(t, []scores{
		{"0.800000000000000000", "0.800000000000000000"},
		{"0.660000000000000000", "0.960000000000000000"},
		{"0.332000000000000000", "0.992000000000000000"},
		{"0.348800000000000000", "0.998400000000000000"},
	}, trajectory)
	require.Equal(t, reputationtypes.SCORE_OUTCOME_IDLE, nodeScore(t, a, cheat).Score.Outcome)
	require.False(t, nodeScore(t, a, cheat).Eligible, "still below the minimum")
	hist := history(t, a, cheat, 3)
	require.Equal(t, uint64(1), hist.Counters.TasksVerifiedFailed)
	require.Equal(t, uint64(1), hist.Counters.AcksOnTime)
	require.Equal(t, uint64(1), hist.Counters.Slashes, "slashed for the wrong result (counted, not scored twice)")
	a.AssertInvariants()
}

// nodesOfJob lists the nodes a job's tasks ran on, in task order.
func nodesOfJob(t *testing.T, a *apptest.App, job uint64) []uint64 {
	t.Helper()
	var out []uint64
	for _, tk := range jobTasks(t, a, job) {
		out = append(out, tk.NodeId)
	}
	return out
}
