package keeper

import (
	"context"
	"fmt"

	"cosmossdk.io/collections"

	sdkmath "cosmossdk.io/math"

	"github.com/flopsnet/flops/x/gfl/types"
)

// InitGenesis stores a validated genesis state and rebuilds the derived state (GPU
// owners, class and network totals, the challenge queue and deadlines). It refuses a
// genesis whose ugfl supply differs from the nodes' total power.
func (k Keeper) InitGenesis(ctx context.Context, gs *types.GenesisState) error {
	if err := gs.Validate(); err != nil {
		return err
	}
	k.accountKeeper.GetModuleAccount(ctx, types.ModuleName)
	if err := k.Params.Set(ctx, gs.Params); err != nil {
		return err
	}
	if err := k.NodeSeq.Set(ctx, max(gs.NextNodeId, 1)); err != nil {
		return err
	}
	if err := k.ChallengeSeq.Set(ctx, max(gs.NextChallengeId, 1)); err != nil {
		return err
	}
	if err := k.RoundSeq.Set(ctx, max(gs.NextRoundId, 1)); err != nil {
		return err
	}
	for _, r := range gs.Rounds {
		if err := k.Rounds.Set(ctx, r.Id, r); err != nil {
			return err
		}
		op, err := k.operatorAddr("operator", r.Operator)
		if err != nil {
			return err
		}
		// the operator's latest round (ids increase) is its current one
		if cur, err := k.OperatorRounds.Get(ctx, op); err != nil || cur < r.Id {
			if err := k.OperatorRounds.Set(ctx, op, r.Id); err != nil {
				return err
			}
		}
		if r.Pulling {
			if err := k.RoundPulls.Set(ctx, collections.Join(r.StartHeight, r.Id)); err != nil {
				return err
			}
		}
	}
	np := types.NetworkPower{}
	for _, n := range gs.Nodes {
		if err := k.Nodes.Set(ctx, n.Id, n); err != nil {
			return err
		}
		for _, u := range types.DeviceUUIDs(n.Gpus) {
			if err := k.GpuOwners.Set(ctx, u, n.Id); err != nil {
				return err
			}
		}
		if n.PowerGflops > 0 {
			np.TotalGflops += n.PowerGflops
			np.Nodes++
			if err := k.addClassPower(ctx, n.GpuClass, n.PowerGflops, true); err != nil {
				return err
			}
		}
		if n.Schedulable() && n.NextChallengeHeight != 0 {
			if err := k.ChallengeQueue.Set(ctx, collections.Join(n.NextChallengeHeight, n.Id)); err != nil {
				return err
			}
		}
		if n.Status == types.NODE_STATUS_INACTIVE && n.RetireHeight != 0 {
			if err := k.NodeRetireAt.Set(ctx, collections.Join(n.RetireHeight, n.Id)); err != nil {
				return err
			}
		}
	}
	if err := k.NetworkPower.Set(ctx, np); err != nil {
		return err
	}
	if supply := k.bankKeeper.GetSupply(ctx, types.Denom).Amount; !supply.Equal(supplyOf(np.TotalGflops)) {
		return fmt.Errorf("gfl genesis: %s supply is %s but the nodes' power totals %d", types.Denom, supply, np.TotalGflops)
	}
	for _, c := range gs.Challenges {
		if err := k.Challenges.Set(ctx, c.Id, c); err != nil {
			return err
		}
		var err error
		if c.Status == types.CHALLENGE_STATUS_ISSUED {
			err = k.CommitDeadlines.Set(ctx, collections.Join(c.CommitDeadline, c.Id))
		} else {
			err = k.RevealDeadlines.Set(ctx, collections.Join(c.RevealDeadlineHeight, c.Id))
		}
		if err != nil {
			return err
		}
	}
	for _, s := range gs.Stats {
		if err := k.Stats.Set(ctx, collections.Join(s.NodeId, s.Epoch), s); err != nil {
			return err
		}
	}
	for _, b := range gs.BlockHashes {
		if err := k.BlockHashes.Set(ctx, b.Height, b.Hash); err != nil {
			return err
		}
	}
	for _, b := range gs.BlockRounds {
		if err := k.bindRound(ctx, b); err != nil {
			return err
		}
	}
	for _, r := range gs.DrandRounds {
		if err := k.DrandRounds.Set(ctx, r.Round, r); err != nil {
			return err
		}
	}
	if err := k.Rebalance.Set(ctx, gs.Rebalance); err != nil {
		return err
	}
	return k.Retries.Import(ctx, gs.Retries)
}

// ExportGenesis returns the whole module state (derived state is rebuilt on import).
func (k Keeper) ExportGenesis(ctx context.Context) (*types.GenesisState, error) {
	gs := &types.GenesisState{}
	var err error
	if gs.Params, err = k.Params.Get(ctx); err != nil {
		return nil, err
	}
	if gs.NextNodeId, err = k.NodeSeq.Peek(ctx); err != nil {
		return nil, err
	}
	if gs.NextChallengeId, err = k.ChallengeSeq.Peek(ctx); err != nil {
		return nil, err
	}
	if gs.NextRoundId, err = k.RoundSeq.Peek(ctx); err != nil {
		return nil, err
	}
	if gs.Rebalance, err = k.Rebalance.Get(ctx); err != nil {
		return nil, err
	}
	if err := k.Rounds.Walk(ctx, nil, func(_ uint64, r types.ChallengeRound) (bool, error) {
		gs.Rounds = append(gs.Rounds, r)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.Nodes.Walk(ctx, nil, func(_ uint64, n types.Node) (bool, error) {
		gs.Nodes = append(gs.Nodes, n)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.Challenges.Walk(ctx, nil, func(_ uint64, c types.Challenge) (bool, error) {
		gs.Challenges = append(gs.Challenges, c)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.Stats.Walk(ctx, nil, func(_ collections.Pair[uint64, uint64], s types.NodeEpochStats) (bool, error) {
		gs.Stats = append(gs.Stats, s)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.BlockHashes.Walk(ctx, nil, func(h int64, hash []byte) (bool, error) {
		gs.BlockHashes = append(gs.BlockHashes, types.BlockHash{Height: h, Hash: hash})
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.BlockRounds.Walk(ctx, nil, func(_ int64, b types.BlockRound) (bool, error) {
		gs.BlockRounds = append(gs.BlockRounds, b)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if err := k.DrandRounds.Walk(ctx, nil, func(_ uint64, r types.DrandRound) (bool, error) {
		gs.DrandRounds = append(gs.DrandRounds, r)
		return false, nil
	}); err != nil {
		return nil, err
	}
	if gs.Retries, err = k.Retries.Export(ctx); err != nil {
		return nil, err
	}
	return gs, nil
}

func supplyOf(gflops uint64) sdkmath.Int { return sdkmath.NewIntFromUint64(gflops) }
