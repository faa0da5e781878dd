package keeper_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/validate"
	"github.com/flopsnet/flops/testutil/keepertest"
	"github.com/flopsnet/flops/x/gfl/types"
)

// Registering under OPEN admission: the node is ACTIVE in its GPU class, its collateral is
// locked per GPU, its GPUs are owned, and its first challenge is queued for the next block.
func TestRegisterNodeHappyPath(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("alice", 8)
	res, err := f.ms.RegisterNode(f.ctx, &types.MsgRegisterNode{Operator: op, Spec: spec("a", 2)})
	require.NoError(t, err)
	require.Equal(t, uint64(1), res.NodeId)
	require.Equal(t, "A100-40GB", res.GpuClass)
	require.Equal(t, types.NODE_STATUS_ACTIVE, res.Status)

	n := f.node(1)
	require.True(t, n.Approved)
	require.Equal(t, int64(1), n.NextChallengeHeight)
	require.Equal(t, uint64(2), f.coll.locked[op])
	owner, err := f.k.GpuOwners.Get(f.ctx, "GPU-a-1")
	require.NoError(t, err)
	require.Equal(t, uint64(1), owner)
	has, err := f.k.ChallengeQueue.Has(f.ctx, collections.Join(int64(1), uint64(1)))
	require.NoError(t, err)
	require.True(t, has)
	require.True(t, f.hasEvent("flops.gfl.v1.EventNodeRegistered"))
	require.Equal(t, []uint64{1}, f.hooks.changed)
	require.Equal(t, []types.Runtime{types.RUNTIME_BUILTIN, types.RUNTIME_CONTAINER}, n.Runtimes, "no runtimes listed: the default, never PROCESS")

	// a node that opts in to PROCESS says so; the list is stored sorted
	s := spec("b", 1)
	s.Runtimes = []types.Runtime{types.RUNTIME_PROCESS, types.RUNTIME_BUILTIN}
	res, err = f.ms.RegisterNode(f.ctx, &types.MsgRegisterNode{Operator: op, Spec: s})
	require.NoError(t, err)
	require.Equal(t, []types.Runtime{types.RUNTIME_BUILTIN, types.RUNTIME_PROCESS}, f.node(res.NodeId).Runtimes)
	require.NotContains(t, f.node(1).Runtimes, types.RUNTIME_PROCESS)
}

// Every bad registration is refused with its registered error and changes nothing.
func TestRegisterNodeRejections(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("alice", 100)
	poor := f.operator("poor", 1)
	taken := spec("taken", 1)
	taken.Gpus[0].MigSlices, taken.Gpus[0].MigInstances = 7, []types.MigInstance{{Uuid: "MIG-taken", Profile: "7g.40gb", MemoryMib: 40192, Slices: 7}}
	f.register(op, taken)

	mod := func(m func(s *types.NodeSpec)) types.NodeSpec { s := spec("x", 2); m(&s); return s }
	cases := []struct {
		name string
		op   string
		spec types.NodeSpec
		err  error
	}{
		// the signer must be a valid address
		{"bad operator", "cosmos1bad", spec("x", 1), types.ErrInvalidAddress},
		// collateral covers 1 GPU, the node has 2
		{"too little collateral", poor, spec("x", 2), types.ErrInsufficientCollateral},
		{"no gpus", op, mod(func(s *types.NodeSpec) { s.Gpus = nil }), types.ErrInvalidNodeSpec},
		{"too many gpus", op, spec("x", 17), validate.ErrTooMany},
		{"empty uuid", op, mod(func(s *types.NodeSpec) { s.Gpus[0].Uuid = "" }), types.ErrInvalidNodeSpec},
		{"empty model", op, mod(func(s *types.NodeSpec) { s.Gpus[0].Model = "" }), types.ErrInvalidNodeSpec},
		{"zero memory", op, mod(func(s *types.NodeSpec) { s.Gpus[1].MemoryMib = 0 }), types.ErrInvalidNodeSpec},
		{"bad compute capability", op, mod(func(s *types.NodeSpec) { s.Gpus[0].ComputeCapability = "eight" }), types.ErrInvalidNodeSpec},
		{"unknown runtime", op, mod(func(s *types.NodeSpec) { s.Runtimes = []types.Runtime{9} }), types.ErrInvalidNodeSpec},
		{"unspecified runtime", op, mod(func(s *types.NodeSpec) { s.Runtimes = []types.Runtime{types.RUNTIME_UNSPECIFIED} }), types.ErrInvalidNodeSpec},
		{"duplicate runtime", op, mod(func(s *types.NodeSpec) {
			s.Runtimes = []types.Runtime{types.RUNTIME_PROCESS, types.RUNTIME_PROCESS}
		}), types.ErrInvalidNodeSpec},
		{"too many runtimes", op, mod(func(s *types.NodeSpec) { s.Runtimes = make([]types.Runtime, 4) }), validate.ErrTooMany},
		// a GPU no class of the table describes
		{"unknown class", op, mod(func(s *types.NodeSpec) { s.Gpus[0].Model, s.Gpus[1].Model = "GeForce GTX 1080", "GeForce GTX 1080" }), types.ErrUnknownGpuClass},
		// an 80 GB A100 next to a 40 GB one
		{"mixed classes", op, mod(func(s *types.NodeSpec) { s.Gpus[1].MemoryMib = 81920 }), types.ErrMixedGpuClasses},
		{"uuid twice in the node", op, mod(func(s *types.NodeSpec) { s.Gpus[1].Uuid = s.Gpus[0].Uuid }), types.ErrDuplicateGpu},
		{"uuid of another node", op, mod(func(s *types.NodeSpec) { s.Gpus[1].Uuid = "GPU-taken-0" }), types.ErrDuplicateGpu},
		// MIG instances
		{"mig on a card that is not mig_capable", op, mod(func(s *types.NodeSpec) { mig(s, 7, 1); s.Gpus[0].MigCapable = false }), types.ErrInvalidNodeSpec},
		{"mig without mig_slices", op, mod(func(s *types.NodeSpec) { mig(s, 0, 1) }), types.ErrInvalidNodeSpec},
		{"mig_slices above 8", op, mod(func(s *types.NodeSpec) { mig(s, 9, 1) }), types.ErrInvalidNodeSpec},
		{"mig_slices without instances", op, mod(func(s *types.NodeSpec) { s.Gpus[0].MigSlices = 7 }), types.ErrInvalidNodeSpec},
		{"mig slices above the card's", op, mod(func(s *types.NodeSpec) { mig(s, 7, 4, 4) }), types.ErrInvalidNodeSpec},
		{"mig memory above the card's", op, mod(func(s *types.NodeSpec) { mig(s, 7, 1, 1); s.Gpus[0].MigInstances[1].MemoryMib = 40960 }), types.ErrInvalidNodeSpec},
		{"mig memory overflowing", op, mod(func(s *types.NodeSpec) {
			mig(s, 7, 1, 1)
			s.Gpus[0].MigInstances[1].MemoryMib = 1<<64 - 1
		}), types.ErrInvalidNodeSpec},
		{"mig instance of no slice", op, mod(func(s *types.NodeSpec) { mig(s, 7, 0) }), types.ErrInvalidNodeSpec},
		{"mig instance of no memory", op, mod(func(s *types.NodeSpec) { mig(s, 7, 1); s.Gpus[0].MigInstances[0].MemoryMib = 0 }), types.ErrInvalidNodeSpec},
		{"mig profile not NVIDIA's", op, mod(func(s *types.NodeSpec) { mig(s, 7, 1); s.Gpus[0].MigInstances[0].Profile = "one slice" }), types.ErrInvalidNodeSpec},
		{"mig uuid empty", op, mod(func(s *types.NodeSpec) { mig(s, 7, 1); s.Gpus[0].MigInstances[0].Uuid = "" }), types.ErrInvalidNodeSpec},
		{"mig uuid twice", op, mod(func(s *types.NodeSpec) { mig(s, 7, 1, 1); s.Gpus[0].MigInstances[1].Uuid = "MIG-0" }), types.ErrDuplicateGpu},
		{"mig uuid of a gpu", op, mod(func(s *types.NodeSpec) { mig(s, 7, 1); s.Gpus[0].MigInstances[0].Uuid = s.Gpus[1].Uuid }), types.ErrDuplicateGpu},
		{"mig uuid of another node", op, mod(func(s *types.NodeSpec) { mig(s, 7, 1); s.Gpus[0].MigInstances[0].Uuid = "MIG-taken" }), types.ErrDuplicateGpu},
		{"too many mig instances", op, mod(func(s *types.NodeSpec) { mig(s, 8, 1, 1, 1, 1, 1, 1, 1, 1, 1) }), validate.ErrTooMany},
		{"bad region", op, mod(func(s *types.NodeSpec) { s.Region = "eu west" }), types.ErrInvalidNodeSpec},
		{"endpoint not a url", op, mod(func(s *types.NodeSpec) { s.Endpoint = "gpu-01:8443" }), types.ErrInvalidNodeSpec},
		{"endpoint ftp", op, mod(func(s *types.NodeSpec) { s.Endpoint = "ftp://gpu-01" }), types.ErrInvalidNodeSpec},
		{"no workloads", op, mod(func(s *types.NodeSpec) { s.Workloads = nil }), types.ErrInvalidNodeSpec},
		{"duplicate workload", op, mod(func(s *types.NodeSpec) { s.Workloads = []types.WorkloadClass{1, 1} }), types.ErrInvalidNodeSpec},
		{"unknown workload", op, mod(func(s *types.NodeSpec) { s.Workloads = []types.WorkloadClass{7} }), types.ErrInvalidNodeSpec},
		{"ask in another denom", op, mod(func(s *types.NodeSpec) { s.AskPerGpuHour = sdk.NewInt64Coin("uatom", 5) }), types.ErrInvalidNodeSpec},
		{"zero ask", op, mod(func(s *types.NodeSpec) { s.AskPerGpuHour = sdk.NewInt64Coin("udps", 0) }), types.ErrInvalidNodeSpec},
		{"zero claimed power", op, mod(func(s *types.NodeSpec) { s.ClaimedGflops = 0 }), types.ErrInvalidNodeSpec},
		{"claimed power above max", op, mod(func(s *types.NodeSpec) { s.ClaimedGflops = 1 << 41 }), types.ErrInvalidNodeSpec},
		{"disk below 1 GiB a GPU", op, mod(func(s *types.NodeSpec) { s.DiskMibPerGpu = types.MinDiskMiBPerGPU - 1 }), types.ErrInvalidNodeSpec},
		{"disk above 16 TiB a GPU", op, mod(func(s *types.NodeSpec) { s.DiskMibPerGpu = types.MaxDiskMiBPerGPU + 1 }), types.ErrInvalidNodeSpec},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := f.snapshot()
			err := f.tx(func(ctx sdk.Context) error {
				_, err := f.ms.RegisterNode(ctx, &types.MsgRegisterNode{Operator: tc.op, Spec: tc.spec})
				return err
			})
			require.ErrorIs(t, err, tc.err)
			f.requireUnchanged(before)
		})
	}
}

// Under GOVERNED admission a node waits, unchallenged, until the authority approves it.
func TestGovernedAdmission(t *testing.T) {
	f := newFixture(t, func(p *types.Params) { p.Admission = types.ADMISSION_GOVERNED })
	op := f.operator("alice", 8)
	res, err := f.ms.RegisterNode(f.ctx, &types.MsgRegisterNode{Operator: op, Spec: spec("a", 2)})
	require.NoError(t, err)
	require.Equal(t, types.NODE_STATUS_PENDING, res.Status)
	require.Equal(t, uint64(2), f.coll.locked[op], "pending nodes hold their collateral")
	f.blocks(3)
	require.Zero(t, f.node(1).OpenChallenge, "pending nodes are not challenged")

	// only the authority approves
	_, err = f.ms.ApproveNode(f.ctx, &types.MsgApproveNode{Authority: op, NodeId: 1})
	require.ErrorIs(t, err, types.ErrInvalidAuthority)
	_, err = f.ms.ApproveNode(f.ctx, &types.MsgApproveNode{Authority: f.env.Authority, NodeId: 9})
	require.ErrorIs(t, err, types.ErrNodeNotFound)
	_, err = f.ms.ApproveNode(f.ctx, &types.MsgApproveNode{Authority: f.env.Authority, NodeId: 1})
	require.NoError(t, err)
	n := f.node(1)
	require.Equal(t, types.NODE_STATUS_ACTIVE, n.Status)
	require.True(t, n.Approved)
	// approving twice is refused
	_, err = f.ms.ApproveNode(f.ctx, &types.MsgApproveNode{Authority: f.env.Authority, NodeId: 1})
	require.ErrorIs(t, err, types.ErrInvalidNodeStatus)
	f.blocks(1)
	require.NotZero(t, f.node(1).OpenChallenge, "approved nodes are challenged at once")
}

// Updating a node: the operator only; new GPUs re-lock collateral; GPUs of another node
// are refused; an inventory change is vetoed while the node has work in flight.
func TestUpdateNode(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("alice", 4)
	bob := f.operator("bob", 8)
	id := f.register(op, spec("a", 2))
	f.register(bob, spec("b", 1))

	s := spec("a", 2)
	s.AskPerGpuHour = sdk.NewInt64Coin("udps", 3_000_000)
	s.Region = "us-east"
	_, err := f.ms.UpdateNode(f.ctx, &types.MsgUpdateNode{Operator: op, NodeId: id, Spec: s})
	require.NoError(t, err)
	require.Equal(t, "us-east", f.node(id).Region)
	require.Equal(t, int64(3_000_000), f.node(id).AskPerGpuHour.Amount.Int64())
	require.Zero(t, f.node(id).DiskMibPerGpu, "no disk offered")

	// the disk the node offers a task per GPU is the spec's, and the market hears of it
	s.DiskMibPerGpu = 2 << 20
	_, err = f.ms.UpdateNode(f.ctx, &types.MsgUpdateNode{Operator: op, NodeId: id, Spec: s})
	require.NoError(t, err)
	require.Equal(t, uint64(2<<20), f.node(id).DiskMibPerGpu)
	require.Equal(t, id, f.hooks.changed[len(f.hooks.changed)-1])

	// growing to 4 GPUs re-locks 4
	_, err = f.ms.UpdateNode(f.ctx, &types.MsgUpdateNode{Operator: op, NodeId: id, Spec: spec("a", 4)})
	require.NoError(t, err)
	require.Equal(t, uint64(4), f.coll.locked[op])
	_, err = f.k.GpuOwners.Get(f.ctx, "GPU-a-3")
	require.NoError(t, err)

	cases := []struct {
		name string
		op   string
		id   uint64
		spec types.NodeSpec
		veto error
		err  error
	}{
		{"not the operator", bob, id, spec("a", 4), nil, types.ErrNotOperator},
		{"unknown node", op, 99, spec("a", 4), nil, types.ErrNodeNotFound},
		{"another node's gpu", op, id, func() types.NodeSpec { s := spec("a", 4); s.Gpus[3].Uuid = "GPU-b-0"; return s }(), nil, types.ErrDuplicateGpu},
		{"more gpus than collateral", op, id, spec("a", 5), nil, types.ErrInsufficientCollateral},
		{"inventory change vetoed", op, id, spec("c", 4), errors.New("2 tasks running"), types.ErrNodeBusy},
		{"bad spec", op, id, spec("a", 0), nil, types.ErrInvalidNodeSpec},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f.hooks.veto = tc.veto
			defer func() { f.hooks.veto = nil }()
			before := f.snapshot()
			err := f.tx(func(ctx sdk.Context) error {
				_, err := f.ms.UpdateNode(ctx, &types.MsgUpdateNode{Operator: tc.op, NodeId: tc.id, Spec: tc.spec})
				return err
			})
			require.ErrorIs(t, err, tc.err)
			f.requireUnchanged(before)
		})
	}
}

// Deactivating burns the node's power at once and unlocks its collateral; reactivating
// locks it again and reschedules challenges.
func TestDeactivateReactivate(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("alice", 4)
	bob := f.operator("bob", 4)
	id := f.register(op, spec("a", 2))
	f.blocks(1) // challenge issued
	require.NotZero(t, f.node(id).OpenChallenge)

	// give the node power as a rebalance would, to see it burned
	f.setPower(id, 500)
	require.Equal(t, int64(500), f.bank.Balance(sdkAddr(op), types.Denom).Int64())

	_, err := f.ms.DeactivateNode(f.ctx, &types.MsgDeactivateNode{Operator: bob, NodeId: id})
	require.ErrorIs(t, err, types.ErrNotOperator)
	f.hooks.veto = errors.New("task 7 running")
	_, err = f.ms.DeactivateNode(f.ctx, &types.MsgDeactivateNode{Operator: op, NodeId: id})
	require.ErrorIs(t, err, types.ErrNodeBusy)
	f.hooks.veto = nil

	_, err = f.ms.DeactivateNode(f.ctx, &types.MsgDeactivateNode{Operator: op, NodeId: id})
	require.NoError(t, err)
	n := f.node(id)
	require.Equal(t, types.NODE_STATUS_INACTIVE, n.Status)
	require.Zero(t, n.PowerGflops)
	require.Zero(t, n.OpenChallenge, "the uncommitted challenge was closed")
	require.True(t, f.bank.Balance(sdkAddr(op), types.Denom).IsZero(), "power burned")
	require.True(t, f.bank.GetSupply(f.ctx, types.Denom).Amount.IsZero())
	require.Zero(t, f.coll.locked[op])
	require.Equal(t, []types.ChallengeStatus{types.CHALLENGE_STATUS_MISSED}, f.hooks.finished)
	msg, broken := f.k.SupplyInvariant(f.ctx)
	require.False(t, broken, msg)

	_, err = f.ms.DeactivateNode(f.ctx, &types.MsgDeactivateNode{Operator: op, NodeId: id})
	require.ErrorIs(t, err, types.ErrInvalidNodeStatus)
	f.blocks(3)
	require.Zero(t, f.node(id).OpenChallenge, "inactive nodes are not challenged")

	f.coll.allowance[op] = 1
	_, err = f.ms.ReactivateNode(f.ctx, &types.MsgReactivateNode{Operator: op, NodeId: id})
	require.ErrorIs(t, err, types.ErrInsufficientCollateral)
	f.coll.allowance[op] = 4
	res, err := f.ms.ReactivateNode(f.ctx, &types.MsgReactivateNode{Operator: op, NodeId: id})
	require.NoError(t, err)
	require.Equal(t, types.NODE_STATUS_ACTIVE, res.Status)
	require.Equal(t, uint64(2), f.coll.locked[op])
	_, err = f.ms.ReactivateNode(f.ctx, &types.MsgReactivateNode{Operator: op, NodeId: id})
	require.ErrorIs(t, err, types.ErrInvalidNodeStatus)
	f.blocks(1)
	require.NotZero(t, f.node(id).OpenChallenge)
}

// A node cannot be deactivated while its committed answer awaits the reveal: that would
// dodge the wrong-answer slash.
func TestDeactivateRefusedWhileCommitted(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("alice", 4)
	id := f.register(op, spec("a", 1))
	f.blocks(1)
	cid := f.node(id).OpenChallenge
	f.next(3e9)
	_, err := f.ms.CommitChallenge(f.ctx, &types.MsgCommitChallenge{Operator: op, ChallengeId: cid, Root: make([]byte, 32)})
	require.NoError(t, err)
	before := f.snapshot()
	err = f.tx(func(ctx sdk.Context) error {
		_, err := f.ms.DeactivateNode(ctx, &types.MsgDeactivateNode{Operator: op, NodeId: id})
		return err
	})
	require.ErrorIs(t, err, types.ErrNodeBusy)
	f.requireUnchanged(before)
}

func sdkAddr(s string) sdk.AccAddress { return sdk.MustAccAddressFromBech32(s) }

// setPower gives a node power through the rebalance path: stats with one sample, then
// an epoch end and enough blocks to rebalance.
func (f *fixture) setPower(id uint64, power uint64) {
	f.t.Helper()
	st, err := f.k.Rebalance.Get(f.ctx)
	require.NoError(f.t, err)
	require.NoError(f.t, f.k.Stats.Set(f.ctx, collections.Join(id, st.StatsEpoch), types.NodeEpochStats{
		NodeId: id, Epoch: st.StatsEpoch, Issued: 1, Passed: 1, Samples: []uint64{power},
	}))
	require.NoError(f.t, f.k.EpochHooks().AfterEpochEnd(f.ctx, "flops", 1))
	for i := 0; i < 10; i++ {
		f.next(1e9)
		st, err = f.k.Rebalance.Get(f.ctx)
		require.NoError(f.t, err)
		if len(st.Pending) == 0 {
			break
		}
	}
	require.Equal(f.t, power, f.node(id).PowerGflops)
}

var _ = keepertest.Addr

// A hook that fails after a node changed (x/market could not index its slot, x/reputation
// could not record it) fails the registration: nothing is stored, nothing locked.
func TestFailingHookFailsRegistration(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("hooked", 8)
	f.hooks.fail = errors.New("market is broken")
	before := f.snapshot()
	err := f.tx(func(ctx sdk.Context) error {
		_, err := f.ms.RegisterNode(ctx, &types.MsgRegisterNode{Operator: op, Spec: spec("x", 1)})
		return err
	})
	require.ErrorIs(t, err, f.hooks.fail)
	// the fake collateral keeper's lock is not in the store (the real one's is, and the
	// failed tx drops it): compare the module's state and the ugfl supply
	before.locked = f.snapshot().locked
	f.requireUnchanged(before)
	f.hooks.fail = nil
	f.register(op, spec("x", 1))
}

// mig puts gpus[0] in MIG mode: cardSlices slices, one instance per entry of slices
// (named MIG-0, MIG-1, ...), each 5 GiB a slice.
func mig(s *types.NodeSpec, cardSlices uint32, slices ...uint32) {
	g := &s.Gpus[0]
	g.MigSlices = cardSlices
	for k, n := range slices {
		g.MigInstances = append(g.MigInstances, types.MigInstance{Uuid: fmt.Sprintf("MIG-%d", k), Profile: fmt.Sprintf("%dg.%dgb", n, 5*n), MemoryMib: 5120 * uint64(n), Slices: n})
	}
}

// A node registers its MIG instances: each UUID is the node's on the chain (another node
// cannot register it) until the node gives it up in an update.
func TestRegisterNodeWithMIG(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("alice", 8)
	s := spec("a", 2)
	mig(&s, 7, 3, 2, 1, 1)
	id := f.register(op, s)
	n := f.node(id)
	require.Len(t, n.Gpus[0].MigInstances, 4)
	require.Equal(t, uint64(2), f.coll.locked[op], "collateral per GPU, not per instance")

	other := spec("b", 1)
	mig(&other, 7, 1)
	_, err := f.ms.RegisterNode(f.ctx, &types.MsgRegisterNode{Operator: op, Spec: other})
	require.ErrorIs(t, err, types.ErrDuplicateGpu)
	require.ErrorContains(t, err, "MIG-0")

	// MIG turned off on the card: its instances are released
	_, err = f.ms.UpdateNode(f.ctx, &types.MsgUpdateNode{Operator: op, NodeId: id, Spec: spec("a", 2)})
	require.NoError(t, err)
	require.Empty(t, f.node(id).Gpus[0].MigInstances)
	f.register(op, other)
}

// The disk a node offers goes through a genesis: exported, validated, imported, the same;
// a value out of its bounds is refused.
func TestNodeDiskOfferInGenesis(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("alice", 4)
	s := spec("a", 2)
	s.DiskMibPerGpu = 2 << 20
	id := f.register(op, s)
	exported, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.NoError(t, exported.Validate())
	g := newFixture(t, nil)
	g.bank.Fund(sdkAddr(op), f.bank.GetAllBalances(f.ctx, sdkAddr(op)))
	require.NoError(t, g.k.InitGenesis(g.ctx, exported))
	require.Equal(t, uint64(2<<20), g.node(id).DiskMibPerGpu)

	for _, bad := range []uint64{types.MinDiskMiBPerGPU - 1, types.MaxDiskMiBPerGPU + 1} {
		gs := exported
		gs.Nodes = append([]types.Node(nil), exported.Nodes...)
		gs.Nodes[0].DiskMibPerGpu = bad
		require.ErrorContains(t, gs.Validate(), "nodes[0].disk_mib_per_gpu")
	}
}
