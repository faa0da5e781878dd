package app_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"time"

	sdkmath "cosmossdk.io/math"
	"github.com/cosmos/gogoproto/proto"

	"github.com/cosmos/cosmos-sdk/codec"
	"github.com/cosmos/cosmos-sdk/testutil/simsx"
	sdk "github.com/cosmos/cosmos-sdk/types"
	simtypes "github.com/cosmos/cosmos-sdk/types/simulation"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"

	dpstypes "github.com/flopsnet/flops/x/dps/types"
	gflsim "github.com/flopsnet/flops/x/gfl/simulation"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
	reputationtypes "github.com/flopsnet/flops/x/reputation/types"
	stakingslashtypes "github.com/flopsnet/flops/x/staking-slash/types"
)

// withRunningNetwork makes a random genesis one of a network that already runs: x/dps's
// reward pool holds 1 to 10^6 DPS under a max_supply that lets it pay (a chain's genesis
// funds it; nothing in a simulation would, so no epoch would ever pay a reward), and 1 to
// 3 providers (simulation accounts) have 1 or 2 nodes each with verified power.
//
// Without them no simulated node ever holds ugfl: a PoCP sample is 2*n^3*r FLOPs over the
// time from the challenge's block to the commitment's, the simulated operators solve the
// smallest matrices (n = 256) on the simulation's CPU, and the simulator puts 5,000 to
// 10,000 s between blocks, so every sample rounds to 0 GFLOP/s (= 0 ugfl). The nodes
// here hold what x/gfl would have minted, consistently in every module:
//
//   - x/gfl: the node, ACTIVE, with a median sample per GPU in its class's range (so not
//     awaiting measurement), an availability of 50-100% and power = median x
//     availability (types.IndexPower), its first challenge 1 to 40 blocks in;
//   - x/bank: the operator's ugfl = its nodes' power (the supply follows), and the
//     collateral module account's udps = the bonded collateral;
//   - x/staking-slash: the operator's collateral, bonded above what its locked GPUs need;
//   - x/market: the node's slot (types.SlotFromNode, nothing in use);
//   - x/reputation: the node's record at the initial score.
//
// From there the simulation moves the ugfl: until a node's first challenge concludes, its
// operator holds it (tries to send or donate it: refused, x/gfl's simulation) and x/dps
// pays it for availability; then the rebalance takes the median of its samples
// (0 GFLOP/s), burns the power and, where the class has a floor, re-classes the node; a
// deactivation burns it at once. The ugfl-supply and ugfl-holders invariants are checked
// every block on holdings that are not all zero; every long seed must burn (mustReachLong:
// "ugfl:burned") and a long run must pay (mustReachLongRun: "dps:availability-paid").
// Nothing mints after genesis: no simulated sample is above 0.
//
// A genesis file given to the simulator (-Genesis) is left as it is.
func withRunningNetwork(cdc codec.JSONCodec, fn simtypes.AppStateFn) simtypes.AppStateFn {
	return func(r *rand.Rand, accs []simtypes.Account, cfg simtypes.Config) (json.RawMessage, []simtypes.Account, string, time.Time) {
		state, simAccs, chainID, genesisTime := fn(r, accs, cfg)
		if cfg.GenesisFile != "" || len(simAccs) == 0 {
			return state, simAccs, chainID, genesisTime
		}
		raw := map[string]json.RawMessage{}
		if err := json.Unmarshal(state, &raw); err != nil {
			panic(err)
		}
		// its own draws, seeded from the seed's first account, so that the simulator's
		// draws of operations stay as they were without it
		own := rand.New(rand.NewSource(int64(binary.BigEndian.Uint64(simAccs[0].Address)))) //nolint:gosec // the simulation's randomness
		poweredNodes(own, cdc, simAccs, raw)
		fundRewardPool(own, cdc, raw)
		state, err := json.Marshal(raw)
		if err != nil {
			panic(err)
		}
		return state, simAccs, chainID, genesisTime
	}
}

// poweredNodes adds the providers with power to the modules' genesis in raw (see
// withRunningNetwork).
func poweredNodes(r *rand.Rand, cdc codec.JSONCodec, accs []simtypes.Account, raw map[string]json.RawMessage) {
	var (
		gfl  gfltypes.GenesisState
		mk   markettypes.GenesisState
		ss   stakingslashtypes.GenesisState
		rep  reputationtypes.GenesisState
		bank banktypes.GenesisState
	)
	states := []struct {
		name string
		gs   proto.Message
	}{
		{gfltypes.ModuleName, &gfl}, {markettypes.ModuleName, &mk}, {stakingslashtypes.ModuleName, &ss},
		{reputationtypes.ModuleName, &rep}, {banktypes.ModuleName, &bank},
	}
	for _, s := range states {
		cdc.MustUnmarshalJSON(raw[s.name], s.gs)
	}

	nextID := max(gfl.NextNodeId, 1)
	minted, bonded := sdkmath.ZeroInt(), sdkmath.ZeroInt()
	for _, i := range r.Perm(len(accs))[:min(1+r.Intn(3), len(accs))] {
		op := accs[i].Address
		var gpus uint64
		power := sdkmath.ZeroInt()
		for range 1 + r.Intn(2) {
			class := gfl.Params.GpuClasses[r.Intn(len(gfl.Params.GpuClasses))]
			spec := gflsim.RandomNodeSpec(r, class, 1+r.Intn(4))
			name, err := spec.Validate(gfl.Params)
			if err != nil {
				panic(fmt.Sprintf("powered genesis node of class %s: %v", class.Name, err))
			}
			// a median sample per GPU in the class's range
			perGPU := class.MinGflopsPerGpu + 1 + uint64(r.Intn(1000))
			if class.MaxGflopsPerGpu != 0 {
				perGPU = class.MinGflopsPerGpu + uint64(r.Int63n(int64(class.MaxGflopsPerGpu-class.MinGflopsPerGpu)+1))
				perGPU = max(perGPU, 1)
			}
			n := gfltypes.Node{
				Id: nextID, Operator: op.String(), Gpus: spec.Gpus, GpuClass: name, Region: spec.Region, Endpoint: spec.Endpoint,
				Workloads: spec.Workloads, Runtimes: gfltypes.NodeRuntimes(spec), AskPerGpuHour: spec.AskPerGpuHour, ClaimedGflops: spec.ClaimedGflops,
				Status: gfltypes.NODE_STATUS_ACTIVE, Approved: true,
				MedianGflops: perGPU * uint64(len(spec.Gpus)), AvailabilityPpm: uint32(500_000 + r.Intn(500_001)),
				NextChallengeHeight: int64(1 + r.Intn(40)),
			}
			n.LastSampleGflops = n.MedianGflops
			n.PowerGflops = gfltypes.IndexPower(n.MedianGflops, n.AvailabilityPpm)
			if n.PowerGflops == 0 {
				n.PowerGflops, n.AvailabilityPpm = n.MedianGflops, 1_000_000
			}
			nextID++
			gfl.Nodes = append(gfl.Nodes, n)
			mk.Slots = append(mk.Slots, markettypes.SlotFromNode(n))
			rep.Scores = append(rep.Scores, reputationtypes.NodeScore{
				NodeId: n.Id, Operator: n.Operator, Score: rep.Params.InitialScore, Accuracy: sdkmath.LegacyZeroDec(),
				Responsiveness: sdkmath.LegacyZeroDec(), PrevScore: sdkmath.LegacyZeroDec(), FirstEpoch: rep.Scoring.CurrentEpoch,
			})
			gpus += n.GPUCount()
			power = power.Add(sdkmath.NewIntFromUint64(n.PowerGflops))
		}
		// bonded: twice what the locked GPUs need and up to 1 DPS more, for the exposure
		// of the tasks the nodes take
		need := ss.Params.MinCollateralPerGpu.MulRaw(int64(gpus))
		c := stakingslashtypes.Collateral{
			Provider: op.String(), Bonded: need.MulRaw(2).AddRaw(1 + r.Int63n(1_000_000)), LockedGpus: gpus,
			Exposure: sdkmath.ZeroInt(), SlashedTotal: sdkmath.ZeroInt(),
		}
		ss.Collaterals = append(ss.Collaterals, c)
		bonded = bonded.Add(c.Bonded)
		minted = minted.Add(power)
		bank.Balances = addBalance(bank.Balances, op.String(), sdk.NewCoin(gfltypes.Denom, power))
	}
	gfl.NextNodeId = nextID
	collateral := sdk.NewCoin(ss.Params.CollateralDenom, bonded)
	bank.Balances = addBalance(bank.Balances, authtypes.NewModuleAddress(stakingslashtypes.ModuleName).String(), collateral)
	if !bank.Supply.IsZero() {
		bank.Supply = bank.Supply.Add(sdk.NewCoins(sdk.NewCoin(gfltypes.Denom, minted), collateral)...)
	}
	for _, s := range states {
		raw[s.name] = cdc.MustMarshalJSON(s.gs)
	}
}

// fundRewardPool puts 1 to 10^6 DPS in x/dps's reward pool (its module account) and sets
// max_supply so that the pool may pay it all, and up to 3 times as much again (the
// simulation's accounts hold more udps than the default 21,000,000 DPS, which would cap
// every emission at 0; governance's random params put it back).
func fundRewardPool(r *rand.Rand, cdc codec.JSONCodec, raw map[string]json.RawMessage) {
	var (
		bank banktypes.GenesisState
		dps  dpstypes.GenesisState
	)
	cdc.MustUnmarshalJSON(raw[banktypes.ModuleName], &bank)
	cdc.MustUnmarshalJSON(raw[dpstypes.ModuleName], &dps)
	pool := sdk.NewCoin(dpstypes.Denom, sdkmath.NewInt(1+r.Int63n(1_000_000)).MulRaw(1_000_000))
	outside := sdkmath.ZeroInt()
	for _, b := range bank.Balances {
		outside = outside.Add(b.Coins.AmountOf(dpstypes.Denom))
	}
	bank.Balances = addBalance(bank.Balances, authtypes.NewModuleAddress(dpstypes.ModuleName).String(), pool)
	if !bank.Supply.IsZero() {
		bank.Supply = bank.Supply.Add(pool)
	}
	dps.Params.MaxSupply = outside.Add(pool.Amount.MulRaw(int64(1 + r.Intn(4))))
	raw[banktypes.ModuleName] = cdc.MustMarshalJSON(&bank)
	raw[dpstypes.ModuleName] = cdc.MustMarshalJSON(&dps)
}

// addBalance adds coin to addr's balance in a bank genesis.
func addBalance(balances []banktypes.Balance, addr string, coin sdk.Coin) []banktypes.Balance {
	for i := range balances {
		if balances[i].Address == addr {
			balances[i].Coins = balances[i].Coins.Add(coin)
			return balances
		}
	}
	return append(balances, banktypes.Balance{Address: addr, Coins: sdk.NewCoins(coin)})
}

// liquidBalances is the bank as the simulator sees an account's coins: without its ugfl,
// which no transaction may move (not even as a fee or a deposit), so that the simulated
// messages and fees draw only on what can move; the attempts to move ugfl are operations
// of their own (x/gfl's simulation).
type liquidBalances struct{ simsx.BalanceSource }

func (b liquidBalances) SpendableCoins(ctx context.Context, addr sdk.AccAddress) sdk.Coins {
	coins := b.BalanceSource.SpendableCoins(ctx, addr)
	if held := coins.AmountOf(gfltypes.Denom); held.IsPositive() {
		coins = coins.Sub(sdk.NewCoin(gfltypes.Denom, held))
	}
	return coins
}
