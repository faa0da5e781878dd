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
	if err := gs.validateSweeps(); err != nil {
		return errorsmod.Wrap(ErrInvalidGenesis, err.Error())
	}
	return nil
}

// The kinds of job sweeps (SweepCursor.kind).
const (
	// SweepExpire: a job whose deadline passed expires its tasks.
	SweepExpire uint32 = 1
	// SweepCancel: a big cancelled job cancels its tasks.
	SweepCancel uint32 = 2
)

// validateSweeps: each sweep names a job id the chain gave and appears once. (A sweep may
// name a job that finished or was pruned since it was queued: its next part ends it.)
func (gs GenesisState) validateSweeps() error {
	nextJob, nextTask := max(gs.NextJobId, 1), max(gs.NextTaskId, 1)
	cancels := map[uint64]bool{}
	for i, s := range gs.CancelSweeps {
		if s.JobId == 0 || s.JobId >= nextJob {
			return fmt.Errorf("cancel_sweeps[%d].job_id %d: must be in [1, next_job_id %d)", i, s.JobId, nextJob)
		}
		if s.Height < 0 {
			return fmt.Errorf("cancel_sweeps[%d].height %d: must not be negative", i, s.Height)
		}
		if cancels[s.JobId] {
			return fmt.Errorf("cancel_sweeps[%d].job_id %d: duplicate", i, s.JobId)
		}
		cancels[s.JobId] = true
	}
	cursors := map[[2]uint64]bool{}
	for i, c := range gs.SweepCursors {
		if c.Kind != SweepExpire && c.Kind != SweepCancel {
			return fmt.Errorf("sweep_cursors[%d].kind %d: unknown (1 expiry, 2 cancellation)", i, c.Kind)
		}
		if c.JobId == 0 || c.JobId >= nextJob {
			return fmt.Errorf("sweep_cursors[%d].job_id %d: must be in [1, next_job_id %d)", i, c.JobId, nextJob)
		}
		if c.AfterTaskId == 0 || c.AfterTaskId >= nextTask {
			return fmt.Errorf("sweep_cursors[%d].after_task_id %d: must be in [1, next_task_id %d)", i, c.AfterTaskId, nextTask)
		}
		key := [2]uint64{uint64(c.Kind), c.JobId}
		if cursors[key] {
			return fmt.Errorf("sweep_cursors[%d]: duplicate (kind %d, job %d)", i, c.Kind, c.JobId)
		}
		cursors[key] = true
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
		// the share is fixed at the assignment, the devices may be forgotten since (a node
		// that left MIG mode): a task's GPUs bound it
		if gpus := jobs[t.JobId].Spec.Requirements.GPUs(); uint64(t.DeviceShare) > DeviceShareDen*uint64(gpus) {
			return fmt.Errorf("tasks[%d].device_share %d: more than its job's %d GPUs (%d each)", i, t.DeviceShare, gpus, DeviceShareDen)
		}
		for j, f := range t.Failures {
			if !f.RerunSlashed.IsNil() && f.RerunSlashed.IsNegative() {
				return fmt.Errorf("tasks[%d].failures[%d].rerun_slashed %s: must not be negative", i, j, f.RerunSlashed)
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
	if err := gs.validatePrimaryIDs(jobs, nextTask); err != nil {
		return err
	}
	for i, b := range gs.Bids {
		if _, ok := jobs[b.JobId]; !ok {
			return fmt.Errorf("bids[%d].job_id %d: no such job", i, b.JobId)
		}
		if _, err := sdk.AccAddressFromBech32(b.Provider); err != nil {
			return fmt.Errorf("bids[%d].provider %q: %w", i, b.Provider, err)
		}
		if !b.Exposure.IsNil() && (b.Exposure.IsNegative() || b.Status != BID_STATUS_OPEN && !b.Exposure.IsZero()) {
			return fmt.Errorf("bids[%d].exposure %s: must be non-negative, and zero unless the bid is open", i, b.Exposure)
		}
	}
	slots := map[uint64]struct{}{}
	for i, s := range gs.Slots {
		if _, dup := slots[s.NodeId]; dup {
			return fmt.Errorf("slots[%d].node_id %d: duplicate", i, s.NodeId)
		}
		slots[s.NodeId] = struct{}{}
		if len(s.Devices) > 0 && s.Gpus != uint32(len(s.Devices)) {
			return fmt.Errorf("slots[%d]: gpus %d, but %d devices", i, s.Gpus, len(s.Devices))
		}
		if len(s.DevicesUsed) > (len(s.Devices)+7)/8 {
			return fmt.Errorf("slots[%d].devices_used: %d bytes for %d devices", i, len(s.DevicesUsed), len(s.Devices))
		}
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

// validatePrimaryIDs checks that a job's primaries are where its first task id says
// (first + index x replicas + replica, in [1, next_task_id)) and nothing else is in that
// range: the keeper finds them there. A job without a first task id (a genesis from before
// it) must have its primaries agree on one, which the import takes.
func (gs GenesisState) validatePrimaryIDs(jobs map[uint64]Job, nextTask uint64) error {
	first := map[uint64]uint64{}
	for i, j := range gs.Jobs {
		if j.FirstTaskId == 0 {
			continue
		}
		total := j.Spec.TotalTasks()
		if j.FirstTaskId+total < j.FirstTaskId || j.FirstTaskId+total > nextTask {
			return fmt.Errorf("jobs[%d].first_task_id %d: its %d primaries must be below next_task_id %d", i, j.FirstTaskId, total, nextTask)
		}
		first[j.Id] = j.FirstTaskId
	}
	byID := map[uint64]Task{}
	for _, t := range gs.Tasks {
		byID[t.Id] = t
	}
	for i, t := range gs.Tasks {
		j := jobs[t.JobId]
		if t.Role != TASK_ROLE_PRIMARY {
			if f := first[t.JobId]; f != 0 && t.Id < f+j.Spec.TotalTasks() {
				return fmt.Errorf("tasks[%d].id %d: a %s of job %d must come after the job's primaries [%d, %d)", i, t.Id, t.Role, t.JobId, f, f+j.Spec.TotalTasks())
			}
			continue
		}
		if t.Index >= j.Spec.TaskCount || t.Replica >= j.Spec.Replicas {
			return fmt.Errorf("tasks[%d]: shard %d replica %d is outside job %d's %d shards x %d replicas", i, t.Index, t.Replica, t.JobId, j.Spec.TaskCount, j.Spec.Replicas)
		}
		offset := j.Spec.PrimaryOffset(t.Index, t.Replica)
		if t.Id <= offset {
			return fmt.Errorf("tasks[%d].id %d: too low for job %d's shard %d replica %d", i, t.Id, t.JobId, t.Index, t.Replica)
		}
		f, ok := first[t.JobId]
		if !ok {
			first[t.JobId] = t.Id - offset
			f = t.Id - offset
		}
		if t.Id != f+offset {
			return fmt.Errorf("tasks[%d].id %d: job %d's shard %d replica %d is task %d (first task id %d)", i, t.Id, t.JobId, t.Index, t.Replica, f+offset, f)
		}
	}
	// nothing of another job in a job's primary range (in the order of the jobs)
	for i, j := range gs.Jobs {
		f := first[j.Id]
		if f == 0 {
			continue
		}
		for id := f; id < f+j.Spec.TotalTasks(); id++ {
			if t, ok := byID[id]; ok && t.JobId != j.Id {
				return fmt.Errorf("jobs[%d]: task %d, in its primary ids [%d, %d), belongs to job %d", i, id, f, f+j.Spec.TotalTasks(), t.JobId)
			}
		}
	}
	return nil
}
