package types

import (
	"fmt"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// DefaultGenesisState returns the genesis state with default params and nothing else.
func DefaultGenesisState() *GenesisState {
	return &GenesisState{Params: DefaultParams(), NextNodeId: 1, NextChallengeId: 1, NextRoundId: 1}
}

// Validate checks the params and every record of the genesis state: valid addresses and
// statuses, unique ids and GPU UUIDs, references to existing nodes, sequences ahead of
// every id.
func (gs GenesisState) Validate() error {
	if err := gs.Params.Validate(); err != nil {
		return errorsmod.Wrap(err, "genesis params")
	}
	if err := gs.validate(); err != nil {
		return errorsmod.Wrap(ErrInvalidGenesis, err.Error())
	}
	if err := gs.Retries.Validate(ItemKinds...); err != nil {
		return errorsmod.Wrap(ErrInvalidGenesis, err.Error())
	}
	return nil
}

func (gs GenesisState) validate() error {
	// A zero sequence starts at 1 (ids are never 0).
	gs.NextNodeId, gs.NextChallengeId, gs.NextRoundId = max(gs.NextNodeId, 1), max(gs.NextChallengeId, 1), max(gs.NextRoundId, 1)
	nodes := make(map[uint64]Node, len(gs.Nodes))
	uuids := make(map[string]uint64)
	for i, n := range gs.Nodes {
		if n.Id == 0 || n.Id >= gs.NextNodeId {
			return fmt.Errorf("nodes[%d].id %d: must be in [1, next_node_id %d)", i, n.Id, gs.NextNodeId)
		}
		if _, dup := nodes[n.Id]; dup {
			return fmt.Errorf("nodes[%d].id %d: duplicate", i, n.Id)
		}
		if _, err := sdk.AccAddressFromBech32(n.Operator); err != nil {
			return fmt.Errorf("nodes[%d].operator %q: %w", i, n.Operator, err)
		}
		if NodeStatus_name[int32(n.Status)] == "" || n.Status == NODE_STATUS_UNSPECIFIED {
			return fmt.Errorf("nodes[%d].status %d: unknown", i, n.Status)
		}
		if len(n.Gpus) == 0 || n.Claimed() == "" {
			return fmt.Errorf("nodes[%d]: no GPUs or no class", i)
		}
		if n.ClaimedClass != "" && n.ClaimedClass == n.GpuClass {
			return fmt.Errorf("nodes[%d]: claimed_class %q is its gpu_class (it is set only for a node re-classed)", i, n.ClaimedClass)
		}
		for _, u := range DeviceUUIDs(n.Gpus) {
			if other, dup := uuids[u]; dup {
				return fmt.Errorf("nodes[%d]: GPU or MIG uuid %s also in node %d", i, u, other)
			}
			uuids[u] = n.Id
		}
		if n.Status != NODE_STATUS_ACTIVE && n.PowerGflops != 0 {
			return fmt.Errorf("nodes[%d]: %s node with power %d", i, n.Status, n.PowerGflops)
		}
		if n.DiskMibPerGpu != 0 && (n.DiskMibPerGpu < MinDiskMiBPerGPU || n.DiskMibPerGpu > MaxDiskMiBPerGPU) {
			return fmt.Errorf("nodes[%d].disk_mib_per_gpu %d: 0 or %d to %d", i, n.DiskMibPerGpu, MinDiskMiBPerGPU, MaxDiskMiBPerGPU)
		}
		nodes[n.Id] = n
	}
	type roundCount struct{ issued, members uint32 }
	rounds := make(map[uint64]ChallengeRound, len(gs.Rounds))
	for i, r := range gs.Rounds {
		if r.Id == 0 || r.Id >= gs.NextRoundId {
			return fmt.Errorf("rounds[%d].id %d: must be in [1, next_round_id %d)", i, r.Id, gs.NextRoundId)
		}
		if _, dup := rounds[r.Id]; dup {
			return fmt.Errorf("rounds[%d].id %d: duplicate", i, r.Id)
		}
		if _, err := sdk.AccAddressFromBech32(r.Operator); err != nil {
			return fmt.Errorf("rounds[%d].operator %q: %w", i, r.Operator, err)
		}
		if r.Members == 0 && r.Issued == 0 && !r.Pulling {
			return fmt.Errorf("rounds[%d]: nothing refers to round %d (it is removed)", i, r.Id)
		}
		rounds[r.Id] = r
	}
	counts := make(map[uint64]roundCount, len(gs.Rounds))
	challenges := make(map[uint64]struct{}, len(gs.Challenges))
	for i, c := range gs.Challenges {
		if c.RoundId != 0 {
			r, ok := rounds[c.RoundId]
			if !ok || r.Operator != c.Operator {
				return fmt.Errorf("challenges[%d].round_id %d: no such round of %s", i, c.RoundId, c.Operator)
			}
			n := counts[c.RoundId]
			n.members++
			if c.Status == CHALLENGE_STATUS_ISSUED {
				n.issued++
			}
			counts[c.RoundId] = n
		}
		if c.Id == 0 || c.Id >= gs.NextChallengeId {
			return fmt.Errorf("challenges[%d].id %d: must be in [1, next_challenge_id %d)", i, c.Id, gs.NextChallengeId)
		}
		if _, dup := challenges[c.Id]; dup {
			return fmt.Errorf("challenges[%d].id %d: duplicate", i, c.Id)
		}
		challenges[c.Id] = struct{}{}
		n, ok := nodes[c.NodeId]
		if !ok {
			return fmt.Errorf("challenges[%d].node_id %d: no such node", i, c.NodeId)
		}
		if n.OpenChallenge != c.Id || c.Operator != n.Operator {
			return fmt.Errorf("challenges[%d]: not the open challenge of node %d", i, c.NodeId)
		}
		if c.Status != CHALLENGE_STATUS_ISSUED && c.Status != CHALLENGE_STATUS_COMMITTED {
			return fmt.Errorf("challenges[%d].status %s: only open challenges are kept", i, c.Status)
		}
	}
	for i, r := range gs.Rounds {
		if n := counts[r.Id]; n.members != r.Members || n.issued != r.Issued {
			return fmt.Errorf("rounds[%d]: %d members, %d issued; its challenges say %d and %d", i, r.Members, r.Issued, n.members, n.issued)
		}
	}
	for i, n := range gs.Nodes {
		if n.OpenChallenge != 0 {
			if _, ok := challenges[n.OpenChallenge]; !ok {
				return fmt.Errorf("nodes[%d].open_challenge %d: no such challenge", i, n.OpenChallenge)
			}
		}
	}
	type statKey struct{ node, epoch uint64 }
	stats := make(map[statKey]struct{}, len(gs.Stats))
	for i, s := range gs.Stats {
		if _, ok := nodes[s.NodeId]; !ok {
			return fmt.Errorf("stats[%d].node_id %d: no such node", i, s.NodeId)
		}
		k := statKey{s.NodeId, s.Epoch}
		if _, dup := stats[k]; dup {
			return fmt.Errorf("stats[%d]: duplicate node %d epoch %d", i, s.NodeId, s.Epoch)
		}
		stats[k] = struct{}{}
		if s.Passed+s.Failed+s.Missed != s.Issued || uint32(len(s.Samples)) > s.Passed {
			return fmt.Errorf("stats[%d]: inconsistent counts", i)
		}
	}
	blocks := make(map[int64]bool, len(gs.BlockRounds))
	for i, b := range gs.BlockRounds {
		if b.Height <= 0 || blocks[b.Height] || b.FallbackHeight <= b.Height || b.Round == 0 {
			return fmt.Errorf("block_rounds[%d]: height %d, round %d, fallback %d: need a positive unique height, a round and a later fallback", i, b.Height, b.Round, b.FallbackHeight)
		}
		blocks[b.Height] = true
	}
	drands := make(map[uint64]bool, len(gs.DrandRounds))
	for i, r := range gs.DrandRounds {
		if r.Round == 0 || drands[r.Round] || len(r.Randomness) != 32 {
			return fmt.Errorf("drand_rounds[%d]: round %d: need a unique round and 32 bytes of randomness", i, r.Round)
		}
		drands[r.Round] = true
	}
	for i, e := range gs.Rebalance.Pending {
		if e >= gs.Rebalance.StatsEpoch || (i > 0 && e <= gs.Rebalance.Pending[i-1]) {
			return fmt.Errorf("rebalance.pending[%d] %d: must be increasing and below stats_epoch %d", i, e, gs.Rebalance.StatsEpoch)
		}
	}
	return nil
}
