package types_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/x/market/types"
)

// The job sweeps under way a genesis carries: job ids the chain gave, each once, a known
// kind, a cursor on a task id the chain gave.
func TestGenesisSweeps(t *testing.T) {
	ok := types.GenesisState{Params: types.DefaultParams(), NextJobId: 5, NextTaskId: 50}
	ok.CancelSweeps = []types.CancelSweep{{Height: 7, JobId: 4}}
	ok.SweepCursors = []types.SweepCursor{{Kind: types.SweepCancel, JobId: 4, AfterTaskId: 49}, {Kind: types.SweepExpire, JobId: 4, AfterTaskId: 1}}
	require.NoError(t, ok.Validate())
	for want, edit := range map[string]func(*types.GenesisState){
		"cancel_sweeps[0].job_id 5: must be in [1, next_job_id 5)": func(g *types.GenesisState) { g.CancelSweeps[0].JobId = 5 },
		"cancel_sweeps[1].job_id 4: duplicate":                     func(g *types.GenesisState) { g.CancelSweeps = append(g.CancelSweeps, g.CancelSweeps[0]) },
		"cancel_sweeps[0].height -1: must not be negative":         func(g *types.GenesisState) { g.CancelSweeps[0].Height = -1 },
		"sweep_cursors[0].kind 3: unknown":                         func(g *types.GenesisState) { g.SweepCursors[0].Kind = 3 },
		"sweep_cursors[1].job_id 0: must be in":                    func(g *types.GenesisState) { g.SweepCursors[1].JobId = 0 },
		"sweep_cursors[0].after_task_id 50: must be in":            func(g *types.GenesisState) { g.SweepCursors[0].AfterTaskId = 50 },
		"sweep_cursors[1]: duplicate (kind 2, job 4)":              func(g *types.GenesisState) { g.SweepCursors[1].Kind = types.SweepCancel },
	} {
		bad := ok
		bad.CancelSweeps = slices.Clone(ok.CancelSweeps)
		bad.SweepCursors = slices.Clone(ok.SweepCursors)
		edit(&bad)
		err := bad.Validate()
		require.ErrorIs(t, err, types.ErrInvalidGenesis, want)
		require.ErrorContains(t, err, want)
	}
}

// A bid's reserved collateral: never negative, and held only while the bid is open (the
// close releases it; x/staking-slash's exposure must match what open bids reserve).
func TestGenesisBidExposure(t *testing.T) {
	owner, provider := sdk.AccAddress("owner_______________").String(), sdk.AccAddress("provider____________").String()
	gs := func(status types.BidStatus, exposure int64) types.GenesisState {
		return types.GenesisState{
			Params: types.DefaultParams(), NextJobId: 2, NextTaskId: 1,
			Jobs: []types.Job{{Id: 1, Owner: owner, Status: types.JOB_STATUS_BIDDING, Escrow: sdkmath.ZeroInt()}},
			Bids: []types.Bid{{JobId: 1, NodeId: 3, Provider: provider, Status: status, Price: sdkmath.OneInt(), Deposit: sdkmath.OneInt(), Exposure: sdkmath.NewInt(exposure)}},
		}
	}
	require.NoError(t, gs(types.BID_STATUS_OPEN, 2_000_020).Validate())
	require.NoError(t, gs(types.BID_STATUS_LOST, 0).Validate())
	for _, bad := range []types.GenesisState{gs(types.BID_STATUS_OPEN, -1), gs(types.BID_STATUS_WON, 5)} {
		err := bad.Validate()
		require.ErrorIs(t, err, types.ErrInvalidGenesis)
		require.ErrorContains(t, err, "bids[0].exposure")
	}
}

// What a task's failure report says the reruns were slashed is never negative: an
// unconfirmed report is slashed at most that much.
func TestGenesisRerunSlashed(t *testing.T) {
	owner := sdk.AccAddress("owner_______________").String()
	gs := func(slashed sdkmath.Int) types.GenesisState {
		return types.GenesisState{
			Params: types.DefaultParams(), NextJobId: 2, NextTaskId: 2,
			Jobs: []types.Job{{Id: 1, Owner: owner, Status: types.JOB_STATUS_ACTIVE, Escrow: sdkmath.ZeroInt(), FirstTaskId: 1, OpenTasks: 1,
				Spec: types.JobSpec{TaskCount: 1, Replicas: 1}}},
			Tasks: []types.Task{{Id: 1, JobId: 1, Status: types.TASK_STATUS_PENDING, Role: types.TASK_ROLE_PRIMARY,
				Failures: []types.FailureReport{{Status: types.FAILURE_STATUS_PENDING, RerunSlashed: slashed}}}},
		}
	}
	require.NoError(t, gs(sdkmath.NewInt(7)).Validate())
	require.NoError(t, gs(sdkmath.Int{}).Validate(), "a report from before the field")
	err := gs(sdkmath.NewInt(-1)).Validate()
	require.ErrorIs(t, err, types.ErrInvalidGenesis)
	require.ErrorContains(t, err, "tasks[0].failures[0].rerun_slashed -1: must not be negative")
}

func TestGenesisDeviceShare(t *testing.T) {
	owner := sdk.AccAddress("owner_______________").String()
	gs := func(gpus uint32, devices []uint32, share uint32) types.GenesisState {
		return types.GenesisState{
			Params: types.DefaultParams(), NextJobId: 2, NextTaskId: 2,
			Jobs: []types.Job{{Id: 1, Owner: owner, Status: types.JOB_STATUS_ACTIVE, Escrow: sdkmath.ZeroInt(), FirstTaskId: 1, OpenTasks: 1,
				Spec: types.JobSpec{TaskCount: 1, Replicas: 1, Requirements: types.Requirements{GpuCount: gpus}}}},
			Tasks: []types.Task{{Id: 1, JobId: 1, Status: types.TASK_STATUS_PENDING, Role: types.TASK_ROLE_PRIMARY, Devices: devices, DeviceShare: share}},
		}
	}
	require.NoError(t, gs(2, []uint32{0, 3}, 2*types.DeviceShareDen).Validate(), "two whole GPUs")
	require.NoError(t, gs(1, []uint32{2}, 120).Validate(), "a one-slice instance of 7")
	require.NoError(t, gs(1, []uint32{2}, 0).Validate(), "a task from before the field")
	require.NoError(t, gs(1, nil, types.DeviceShareDen).Validate(), "its devices forgotten: its node left MIG mode")
	err := gs(2, []uint32{4, 5}, 2*types.DeviceShareDen+1).Validate()
	require.ErrorIs(t, err, types.ErrInvalidGenesis)
	require.ErrorContains(t, err, "tasks[0].device_share 1681: more than its job's 2 GPUs (840 each)")
}
