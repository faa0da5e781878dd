package types_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/types"
)

// The golden digests below were computed independently (Python's hashlib over the byte
// layouts the doc comments give), so a change to a rule that the chain and every worker
// must compute alike fails here before it splits them.

func TestCommitmentBindsRootSaltAndProvider(t *testing.T) {
	root, salt := bytes.Repeat([]byte("r"), 32), bytes.Repeat([]byte("s"), 16)
	provider := make(sdk.AccAddress, 20)
	for i := range provider {
		provider[i] = byte(i)
	}
	got := hex.EncodeToString(types.Commitment(root, salt, provider))
	if got != "8ef92db352cabfb10c37efae67aed392f22f4ae3f30a415ef5bb83399c74cb7d" {
		t.Fatalf("commitment %s", got)
	}
	// a copied commitment cannot be opened by another provider
	other := append(sdk.AccAddress{}, provider...)
	other[0] ^= 1
	if bytes.Equal(types.Commitment(root, salt, other), types.Commitment(root, salt, provider)) {
		t.Fatal("commitment does not depend on the provider")
	}
}

// The failed-run root is what the proto's comment on MsgRevealResult.result_root says,
// for every client that compares roots; a caller cannot change it for the next.
func TestFailedRoot(t *testing.T) {
	if got := hex.EncodeToString(types.FailedRoot()); got != "06361b09cbfb999fee83e49e817d28ed53829a5d69c178a8eb25e60573522e18" {
		t.Fatalf("failed-run root %s", got)
	}
	r := types.FailedRoot()
	r[0] ^= 1
	if !types.IsFailedRoot(types.FailedRoot()) || types.IsFailedRoot(r) || types.IsFailedRoot(nil) {
		t.Fatal("IsFailedRoot: the root, and only the root")
	}
}

func TestGemmChallengePerShard(t *testing.T) {
	job := types.Job{GemmSeed: []byte{1, 2, 3}, Spec: types.JobSpec{Builtin: types.BuiltinArgs{GemmN: 256, GemmR: 2}}}
	c := job.GemmChallenge(7)
	if got := hex.EncodeToString(c.Seed[:]); got != "c73d9b5bef2b74bf1361c45aff7665748bd6a2b0cc92da5155440bad8a239a27" {
		t.Fatalf("seed %s", got)
	}
	if c.N != 256 || c.R != 2 {
		t.Fatalf("n, r = %d, %d; want the spec's 256, 2", c.N, c.R)
	}
	if job.GemmChallenge(8).Seed == c.Seed {
		t.Fatal("two shards of one job share a GEMM: one result would answer both")
	}
}

func TestUnitGemmPerUnit(t *testing.T) {
	pool := types.Pool{Id: 5, Spec: types.PoolSpec{Builtin: types.BuiltinArgs{GemmN: 128, GemmR: 1}}}
	u := types.Unit{PoolId: 5, Id: 9, Input: types.Input{Sha256: strings.Repeat("ab", 32)}}
	c := pool.UnitGemm(u)
	if got := hex.EncodeToString(c.Seed[:]); got != "171ecfab33b94b8288dfa3de8c5c0b6e99934794d01c0480f46b815c6bfd2905" {
		t.Fatalf("seed %s", got)
	}
	if c.N != 128 || c.R != 1 {
		t.Fatalf("n, r = %d, %d", c.N, c.R)
	}
	u2 := u
	u2.Id = 10
	if pool.UnitGemm(u2).Seed == c.Seed {
		t.Fatal("two units of one pool share a GEMM")
	}
}

func TestGemmSamplePositionsInRange(t *testing.T) {
	c := types.Job{Spec: types.JobSpec{Builtin: types.BuiltinArgs{GemmN: 64, GemmR: 1}}}.GemmChallenge(0)
	pos := types.GemmSamplePositions([32]byte{9}, c, 16)
	if len(pos) != 16 {
		t.Fatalf("%d positions, want 16", len(pos))
	}
	for _, p := range pos {
		if p.I >= 64 || p.J >= 64 {
			t.Fatalf("position %+v outside the 64 x 64 product", p)
		}
	}
}

func TestSplitPayment(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		gross                  int64
		take, share            uint32
		provider, pool, collec int64
	}{
		{"5% take, half to the pool", 1_000_000, 50_000, 500_000, 950_000, 25_000, 25_000},
		{"truncation: the provider keeps what the take rounds away", 19, 50_000, 500_000, 19, 0, 0},
		{"odd take: the fee collector gets the pool's rounding", 21, 100_000, 500_000, 19, 1, 1},
		{"no take", 777, 0, 500_000, 777, 0, 0},
		{"all to the pool", 1000, 100_000, 1_000_000, 900, 100, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := types.SplitPayment(sdkmath.NewInt(tc.gross), tc.take, tc.share)
			if !p.Provider.Equal(sdkmath.NewInt(tc.provider)) || !p.Pool.Equal(sdkmath.NewInt(tc.pool)) || !p.FeeCollector.Equal(sdkmath.NewInt(tc.collec)) {
				t.Fatalf("split %d = %s / %s / %s", tc.gross, p.Provider, p.Pool, p.FeeCollector)
			}
			if !p.Provider.Add(p.Pool).Add(p.FeeCollector).Equal(sdkmath.NewInt(tc.gross)) {
				t.Fatal("the parts do not add up to the gross payment")
			}
		})
	}
}

// WashLoopLoses: the work reward cap must be below the take, or 0.
func TestWashLoopLoses(t *testing.T) {
	for _, tc := range []struct {
		take uint32
		cap  uint64
		ok   bool
	}{
		{50_000, 40_000, true}, // the defaults
		{50_000, 49_999, true},
		{50_000, 50_000, false},
		{50_000, 60_000, false},
		{0, 0, true},  // no take, no work reward
		{0, 1, false}, // no take, any work reward
		{1_000_000, 0, true},
		{1_000_000, 999_999, true},
		{1_000_000, 1_000_000, false},
	} {
		err := types.WashLoopLoses(tc.take, tc.cap)
		want := fmt.Sprintf("work_reward_cap_ppm %d is not below x/market's take_rate_ppm %d", tc.cap, tc.take)
		if tc.ok && err != nil || !tc.ok && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Fatalf("take %d, cap %d: %v", tc.take, tc.cap, err)
		}
	}
}

func TestSlotFromNodeTakesTheWeakestGPU(t *testing.T) {
	n := gfltypes.Node{Id: 3, Operator: "op", GpuClass: "A100-40GB", Region: "eu", Status: gfltypes.NODE_STATUS_ACTIVE, PowerGflops: 42,
		AskPerGpuHour: sdk.NewInt64Coin("udps", 10),
		Gpus: []gfltypes.GpuInfo{
			{MemoryMib: 40960, ComputeCapability: "8.0", TensorCores: true, MigCapable: true},
			{MemoryMib: 20480, ComputeCapability: "7.5", TensorCores: true, MigCapable: false},
		}}
	s := types.SlotFromNode(n)
	switch {
	case s.NodeId != 3 || s.Operator != "op" || s.GpuClass != "A100-40GB" || s.Region != "eu" || s.Gpus != 2 || s.PowerGflops != 42:
		t.Fatalf("identity fields: %+v", s)
	case !s.Active:
		t.Fatal("an active node's slot is not active")
	case s.MinMemoryMib != 20480 || s.ComputeCapability != "7.5":
		t.Fatalf("weakest GPU: %d MiB, cc %s", s.MinMemoryMib, s.ComputeCapability)
	case !s.TensorCores || s.MigCapable:
		t.Fatalf("tensor cores %v (all have them), MIG %v (one lacks it)", s.TensorCores, s.MigCapable)
	case !s.AskPerGpuHour.Equal(sdkmath.NewInt(10)):
		t.Fatalf("ask %s", s.AskPerGpuHour)
	}
	if types.SlotFromNode(gfltypes.Node{Status: gfltypes.NODE_STATUS_ACTIVE}).TensorCores {
		t.Fatal("a node without GPUs claims tensor cores")
	}
}
