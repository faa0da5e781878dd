package types

import (
	"fmt"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/validate"
)

// FirstEpoch is the first reputation epoch; epoch 0 means "never" in NodeScore.last_epoch.
const FirstEpoch = 1

// DefaultGenesisState returns the genesis state with default params, epoch 1 counting and
// no node.
func DefaultGenesisState() *GenesisState {
	return &GenesisState{Params: DefaultParams(), Scoring: ScoringState{CurrentEpoch: FirstEpoch}}
}

// Validate checks the params and every record of the genesis state: the scoring state is
// consistent, scores are in [0, 1] with valid operators and unique node ids, and counters
// and history refer to known nodes and to epochs that can still hold them.
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
	st := gs.Scoring
	if st.CurrentEpoch < FirstEpoch {
		return fmt.Errorf("scoring.current_epoch %d: must be at least %d", st.CurrentEpoch, FirstEpoch)
	}
	pending := make(map[uint64]struct{}, len(st.Pending))
	for i, e := range st.Pending {
		if e < FirstEpoch || e >= st.CurrentEpoch || (i > 0 && e <= st.Pending[i-1]) {
			return fmt.Errorf("scoring.pending[%d] %d: must be increasing, in [%d, current_epoch %d)", i, e, FirstEpoch, st.CurrentEpoch)
		}
		pending[e] = struct{}{}
	}
	if len(st.Pending) == 0 && st.Cursor != 0 {
		return fmt.Errorf("scoring.cursor %d: must be 0 with no pending epoch", st.Cursor)
	}

	nodes := make(map[uint64]NodeScore, len(gs.Scores))
	for i, s := range gs.Scores {
		if err := s.validate(st.CurrentEpoch); err != nil {
			return fmt.Errorf("scores[%d]: %w", i, err)
		}
		if _, dup := nodes[s.NodeId]; dup {
			return fmt.Errorf("scores[%d].node_id %d: duplicate", i, s.NodeId)
		}
		nodes[s.NodeId] = s
	}

	type key struct{ node, epoch uint64 }
	counters := make(map[key]struct{}, len(gs.Counters))
	for i, c := range gs.Counters {
		n, ok := nodes[c.NodeId]
		if !ok {
			return fmt.Errorf("counters[%d].node_id %d: no score record", i, c.NodeId)
		}
		_, isPending := pending[c.Epoch]
		if c.Epoch != st.CurrentEpoch && !isPending {
			return fmt.Errorf("counters[%d].epoch %d: neither the current epoch %d nor a pending one", i, c.Epoch, st.CurrentEpoch)
		}
		if c.Epoch < n.FirstEpoch || c.Epoch <= n.LastEpoch {
			return fmt.Errorf("counters[%d].epoch %d: node %d is known from epoch %d and scored up to %d", i, c.Epoch, c.NodeId, n.FirstEpoch, n.LastEpoch)
		}
		k := key{c.NodeId, c.Epoch}
		if _, dup := counters[k]; dup {
			return fmt.Errorf("counters[%d]: duplicate node %d epoch %d", i, c.NodeId, c.Epoch)
		}
		counters[k] = struct{}{}
	}

	history := make(map[key]struct{}, len(gs.History))
	for i, h := range gs.History {
		n, ok := nodes[h.NodeId]
		if !ok {
			return fmt.Errorf("history[%d].node_id %d: no score record", i, h.NodeId)
		}
		if h.Epoch < FirstEpoch || h.Epoch > n.LastEpoch {
			return fmt.Errorf("history[%d].epoch %d: must be in [%d, last_epoch %d] of node %d", i, h.Epoch, FirstEpoch, n.LastEpoch, h.NodeId)
		}
		if h.Counters.NodeId != h.NodeId || h.Counters.Epoch != h.Epoch {
			return fmt.Errorf("history[%d].counters: node %d epoch %d, want node %d epoch %d", i, h.Counters.NodeId, h.Counters.Epoch, h.NodeId, h.Epoch)
		}
		for _, err := range []error{
			validate.UnitDec("score", h.Score),
			validate.UnitDec("accuracy", h.Accuracy),
			validate.UnitDec("responsiveness", h.Responsiveness),
			validate.UnitDec("prev_score", h.PrevScore),
		} {
			if err != nil {
				return fmt.Errorf("history[%d].%w", i, err)
			}
		}
		if _, ok := ScoreOutcome_name[int32(h.Outcome)]; !ok || h.Outcome == SCORE_OUTCOME_UNSPECIFIED {
			return fmt.Errorf("history[%d].outcome %d: unknown", i, h.Outcome)
		}
		k := key{h.NodeId, h.Epoch}
		if _, dup := history[k]; dup {
			return fmt.Errorf("history[%d]: duplicate node %d epoch %d", i, h.NodeId, h.Epoch)
		}
		history[k] = struct{}{}
	}
	return nil
}

// validate checks one score record against the current epoch.
func (s NodeScore) validate(currentEpoch uint64) error {
	if s.NodeId == 0 {
		return fmt.Errorf("node_id: must not be 0")
	}
	if _, err := sdk.AccAddressFromBech32(s.Operator); err != nil {
		return fmt.Errorf("operator %q: %w", s.Operator, err)
	}
	for _, err := range []error{
		validate.UnitDec("score", s.Score),
		validate.UnitDec("accuracy", s.Accuracy),
		validate.UnitDec("responsiveness", s.Responsiveness),
		validate.UnitDec("prev_score", s.PrevScore),
	} {
		if err != nil {
			return err
		}
	}
	if s.FirstEpoch < FirstEpoch || s.FirstEpoch > currentEpoch {
		return fmt.Errorf("first_epoch %d: must be in [%d, current_epoch %d]", s.FirstEpoch, FirstEpoch, currentEpoch)
	}
	if s.LastEpoch >= currentEpoch || (s.LastEpoch != 0 && s.LastEpoch < s.FirstEpoch) {
		return fmt.Errorf("last_epoch %d: must be 0 or in [first_epoch %d, current_epoch %d)", s.LastEpoch, s.FirstEpoch, currentEpoch)
	}
	if _, ok := ScoreOutcome_name[int32(s.Outcome)]; !ok || (s.Outcome == SCORE_OUTCOME_UNSPECIFIED) != (s.LastEpoch == 0) {
		return fmt.Errorf("outcome %s: must be unspecified exactly when last_epoch is 0", s.Outcome)
	}
	return nil
}
