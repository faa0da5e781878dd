package types

import (
	"fmt"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// DefaultGenesisState returns the genesis state with default params and nothing else.
func DefaultGenesisState() *GenesisState {
	return &GenesisState{Params: DefaultParams(), NextJobId: 1, NextTaskId: 1}
}

// Validate checks the params and the records: valid addresses and statuses, unique ids
// below the sequences, tasks, bids and history referring to existing jobs, funding links
// unique and between two different accounts.
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
	nextJob, nextTask := max(gs.NextJobId, 1), max(gs.NextTaskId, 1)
	jobs := map[uint64]Job{}
	for i, j := range gs.Jobs {
		if j.Id == 0 || j.Id >= nextJob {
			return fmt.Errorf("jobs[%d].id %d: must be in [1, next_job_id %d)", i, j.Id, nextJob)
		}
		if _, dup := jobs[j.Id]; dup {
			return fmt.Errorf("jobs[%d].id %d: duplicate", i, j.Id)
		}
		if _, err := sdk.AccAddressFromBech32(j.Owner); err != nil {
			return fmt.Errorf("jobs[%d].owner %q: %w", i, j.Owner, err)
		}
		if j.Status == JOB_STATUS_UNSPECIFIED || JobStatus_name[int32(j.Status)] == "" {
			return fmt.Errorf("jobs[%d].status %d: unknown", i, j.Status)
		}
		if j.Escrow.IsNil() || j.Escrow.IsNegative() {
			return fmt.Errorf("jobs[%d].escrow %s: must not be negative", i, j.Escrow)
		}
		jobs[j.Id] = j
	}
	tasks := map[uint64]struct{}{}
	open := map[uint64]uint32{}
	for i, t := range gs.Tasks {
		if t.Id == 0 || t.Id >= nextTask {
			return fmt.Errorf("tasks[%d].id %d: must be in [1, next_task_id %d)", i, t.Id, nextTask)
		}
		if _, dup := tasks[t.Id]; dup {
			return fmt.Errorf("tasks[%d].id %d: duplicate", i, t.Id)
		}
		tasks[t.Id] = struct{}{}
		if _, ok := jobs[t.JobId]; !ok {
			return fmt.Errorf("tasks[%d].job_id %d: no such job", i, t.JobId)
		}
		if t.Status == TASK_STATUS_UNSPECIFIED || TaskStatus_name[int32(t.Status)] == "" {
			return fmt.Errorf("tasks[%d].status %d: unknown", i, t.Status)
		}
		if t.Provider != "" {
			if _, err := sdk.AccAddressFromBech32(t.Provider); err != nil {
				return fmt.Errorf("tasks[%d].provider %q: %w", i, t.Provider, err)
			}
		}
		if !taskFinal(t.Status) {
			open[t.JobId]++
		}
	}
	// each job counts its open tasks (in the order of the jobs, not of the map)
	for i, j := range gs.Jobs {
		if j.OpenTasks != open[j.Id] {
			return fmt.Errorf("jobs[%d].open_tasks %d: the job has %d tasks not final", i, j.OpenTasks, open[j.Id])
		}
	}
	for i, b := range gs.Bids {
		if _, ok := jobs[b.JobId]; !ok {
			return fmt.Errorf("bids[%d].job_id %d: no such job", i, b.JobId)
		}
		if _, err := sdk.AccAddressFromBech32(b.Provider); err != nil {
			return fmt.Errorf("bids[%d].provider %q: %w", i, b.Provider, err)
		}
	}
	slots := map[uint64]struct{}{}
	for i, s := range gs.Slots {
		if _, dup := slots[s.NodeId]; dup {
			return fmt.Errorf("slots[%d].node_id %d: duplicate", i, s.NodeId)
		}
		slots[s.NodeId] = struct{}{}
	}
	for i, h := range gs.History {
		if _, ok := jobs[h.JobId]; !ok {
			return fmt.Errorf("history[%d].job_id %d: no such job", i, h.JobId)
		}
	}
	return nil
}

// taskFinal: nothing more happens to a task in this status.
func taskFinal(s TaskStatus) bool {
	switch s {
	case TASK_STATUS_SETTLED, TASK_STATUS_FAILED, TASK_STATUS_EXPIRED, TASK_STATUS_CANCELLED:
		return true
	}
	return false
}
