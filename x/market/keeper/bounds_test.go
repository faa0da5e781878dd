package keeper_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/internal/validate"
	"github.com/flopsnet/flops/x/gfl/pocp"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/types"
)

func repeatN(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", s, i)
	}
	return out
}

func hash32(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = make([]byte, 32)
	}
	return out
}

// Every list and free-form field of every x/market Msg has a bound, and a Msg past it is
// rejected with the bound's own registered error (validate.ErrTooMany for a count,
// validate.ErrTooLarge for a size) naming the field, before anything else is read, and
// changes nothing (the escrow is untouched).
func TestEveryOversizeFieldIsRejected(t *testing.T) {
	f := newFixture(t, nil)
	p := f.params()
	op := f.operator("bounds")
	job := func(edit func(s *types.JobSpec)) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			s := f.gemmSpec(2)
			s.Runtime, s.Image, s.Builtin, s.Command = types.RUNTIME_PROCESS, "", types.BuiltinArgs{}, []string{"run"}
			edit(&s)
			_, err := f.ms.SubmitJob(ctx, &types.MsgSubmitJob{Owner: f.client, Spec: s})
			return err
		}
	}
	pool := func(edit func(s *types.PoolSpec)) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			s := types.PoolSpec{
				Workload: gfltypes.WORKLOAD_CLASS_INFERENCE, Runtime: types.RUNTIME_PROCESS, Command: []string{"serve"},
				Verification: types.VERIFICATION_CLASS_NONE, UnitPrice: sdk.NewInt64Coin(udps, 1_000),
				Budget: sdk.NewInt64Coin(udps, 10_000), MaxProviders: 2, UnitMaxDuration: time.Minute,
			}
			edit(&s)
			_, err := f.ms.CreatePool(ctx, &types.MsgCreatePool{Owner: f.client, Spec: s})
			return err
		}
	}
	res, err := f.ms.CreatePool(f.ctx, &types.MsgCreatePool{Owner: f.client, Spec: types.PoolSpec{
		Workload: gfltypes.WORKLOAD_CLASS_INFERENCE, Runtime: types.RUNTIME_PROCESS, Command: []string{"serve"},
		Verification: types.VERIFICATION_CLASS_NONE, UnitPrice: sdk.NewInt64Coin(udps, 1_000),
		Budget: sdk.NewInt64Coin(udps, 10_000_000), MaxProviders: 2, UnitMaxDuration: time.Minute,
	}})
	require.NoError(t, err)
	poolID := res.PoolId
	input := func(i int) types.Input {
		return types.Input{Uri: fmt.Sprintf("https://in.example.com/%d", i), Sha256: strings.Repeat("a", 64), Path: fmt.Sprintf("in/%d", i)}
	}
	units := func(n int, edit func(in *types.Input)) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			in := make([]types.Input, n)
			for i := range in {
				in[i] = input(i)
			}
			edit(&in[0])
			_, err := f.ms.SubmitUnits(ctx, &types.MsgSubmitUnits{Owner: f.client, PoolId: poolID, Units: in})
			return err
		}
	}
	reveal := func(edit func(m *types.MsgRevealResult)) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			m := &types.MsgRevealResult{Provider: op, TaskId: 1, ResultRoot: testRoot[:], Salt: testSalt,
				OutputUri: "https://out.example.com/1", GemmProofs: []gfltypes.ChunkProof{{Chunk: make([]byte, pocp.ChunkBytes), Path: hash32(3)}}}
			edit(m)
			_, err := f.ms.RevealResult(ctx, m)
			return err
		}
	}
	revealUnit := func(edit func(m *types.MsgRevealUnit)) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			m := &types.MsgRevealUnit{Provider: op, PoolId: poolID, UnitId: 1, ResultRoot: testRoot[:], Salt: testSalt,
				OutputUri: "https://out.example.com/1"}
			edit(m)
			_, err := f.ms.RevealUnit(ctx, m)
			return err
		}
	}
	checkpoint := func(sum, uri string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			_, err := f.ms.Checkpoint(ctx, &types.MsgCheckpoint{Provider: op, TaskId: 1, Sha256: sum, Uri: uri})
			return err
		}
	}
	long := func(n int) string { return strings.Repeat("x", n) }
	manyInputs := make([]types.Input, p.MaxInputsPerJob+1)
	for i := range manyInputs {
		manyInputs[i] = input(i)
	}

	cases := []struct {
		msg, field string
		want       error
		send       func(ctx context.Context) error
	}{
		// MsgSubmitJob: every list of the spec
		{"MsgSubmitJob", "command", validate.ErrTooMany, job(func(s *types.JobSpec) { s.Command = repeatN("a", types.MaxArgs+1) })},
		{"MsgSubmitJob", "command[0]", validate.ErrTooLarge, job(func(s *types.JobSpec) { s.Command = []string{long(types.MaxArgLen + 1)} })},
		{"MsgSubmitJob", "env", validate.ErrTooMany, job(func(s *types.JobSpec) {
			for i := range types.MaxEnv + 1 {
				s.Env = append(s.Env, types.EnvVar{Name: fmt.Sprintf("V%d", i), Value: "1"})
			}
		})},
		{"MsgSubmitJob", "env[0].name", validate.ErrTooLarge, job(func(s *types.JobSpec) { s.Env = []types.EnvVar{{Name: long(129)}} })},
		{"MsgSubmitJob", "env[0].value", validate.ErrTooLarge, job(func(s *types.JobSpec) {
			s.Env = []types.EnvVar{{Name: "V", Value: long(types.MaxEnvValueLen + 1)}}
		})},
		{"MsgSubmitJob", "inputs", validate.ErrTooMany, job(func(s *types.JobSpec) { s.Inputs = manyInputs })},
		{"MsgSubmitJob", "inputs[0].uri", validate.ErrTooLarge, job(func(s *types.JobSpec) {
			s.Inputs = []types.Input{input(0)}
			s.Inputs[0].Uri = "https://in.example.com/" + long(types.MaxURILen)
		})},
		{"MsgSubmitJob", "inputs[0].sha256", validate.ErrTooLarge, job(func(s *types.JobSpec) {
			s.Inputs = []types.Input{input(0)}
			s.Inputs[0].Sha256 = long(65)
		})},
		{"MsgSubmitJob", "inputs[0].path", validate.ErrTooLarge, job(func(s *types.JobSpec) {
			s.Inputs = []types.Input{input(0)}
			s.Inputs[0].Path = long(types.MaxPathLen + 1)
		})},
		{"MsgSubmitJob", "requirements.allowed_classes", validate.ErrTooMany, job(func(s *types.JobSpec) {
			s.Requirements.AllowedClasses = repeatN("C", types.MaxAllowedClasses+1)
		})},
		{"MsgSubmitJob", "task_args", validate.ErrTooMany, job(func(s *types.JobSpec) {
			s.TaskArgs = make([]types.TaskArgs, s.TaskCount+1)
		})},
		{"MsgSubmitJob", "task_args[1].args", validate.ErrTooMany, job(func(s *types.JobSpec) {
			s.TaskArgs = []types.TaskArgs{{}, {Args: repeatN("a", types.MaxArgs+1)}}
		})},
		{"MsgSubmitJob", "task_args[0].args[0]", validate.ErrTooLarge, job(func(s *types.JobSpec) {
			s.TaskArgs = []types.TaskArgs{{Args: []string{long(types.MaxArgLen + 1)}}, {}}
		})},
		{"MsgSubmitJob", "task_args", validate.ErrTooLarge, job(func(s *types.JobSpec) {
			// every argument within its bound, the whole past MaxTaskArgsBytes
			s.TaskCount = uint32(types.MaxTaskArgsBytes/(types.MaxArgs*types.MaxArgLen) + 1)
			s.TaskArgs = make([]types.TaskArgs, s.TaskCount)
			for i := range s.TaskArgs {
				s.TaskArgs[i].Args = strings.Split(strings.TrimSuffix(strings.Repeat(long(types.MaxArgLen)+" ", types.MaxArgs), " "), " ")
			}
		})},
		{"MsgSubmitJob", "image", validate.ErrTooLarge, job(func(s *types.JobSpec) {
			s.Runtime, s.Image = types.RUNTIME_CONTAINER, long(types.MaxImageLen+1)
		})},
		// MsgCreatePool: the spec's lists (the job rules)
		{"MsgCreatePool", "command", validate.ErrTooMany, pool(func(s *types.PoolSpec) { s.Command = repeatN("a", types.MaxArgs+1) })},
		{"MsgCreatePool", "env", validate.ErrTooMany, pool(func(s *types.PoolSpec) {
			for i := range types.MaxEnv + 1 {
				s.Env = append(s.Env, types.EnvVar{Name: fmt.Sprintf("V%d", i), Value: "1"})
			}
		})},
		{"MsgCreatePool", "requirements.allowed_classes", validate.ErrTooMany, pool(func(s *types.PoolSpec) {
			s.Requirements.AllowedClasses = repeatN("C", types.MaxAllowedClasses+1)
		})},
		// MsgSubmitUnits
		{"MsgSubmitUnits", "units", validate.ErrTooMany, units(int(p.MaxUnitsPerMsg)+1, func(*types.Input) {})},
		{"MsgSubmitUnits", "units[0].uri", validate.ErrTooLarge, units(1, func(in *types.Input) { in.Uri = long(types.MaxURILen + 1) })},
		{"MsgSubmitUnits", "units[0].sha256", validate.ErrTooLarge, units(1, func(in *types.Input) { in.Sha256 = long(65) })},
		// MsgCheckpoint
		{"MsgCheckpoint", "sha256", validate.ErrTooLarge, checkpoint(long(65), "https://c.example.com/1")},
		{"MsgCheckpoint", "uri", validate.ErrTooLarge, checkpoint(strings.Repeat("a", 64), long(types.MaxURILen+1))},
		// MsgRevealResult
		{"MsgRevealResult", "result_root", validate.ErrTooLarge, reveal(func(m *types.MsgRevealResult) { m.ResultRoot = make([]byte, 33) })},
		{"MsgRevealResult", "salt", validate.ErrTooLarge, reveal(func(m *types.MsgRevealResult) { m.Salt = make([]byte, types.MaxSaltLen+1) })},
		{"MsgRevealResult", "output_uri", validate.ErrTooLarge, reveal(func(m *types.MsgRevealResult) { m.OutputUri = long(types.MaxURILen + 1) })},
		{"MsgRevealResult", "usage.gpu_uuids", validate.ErrTooMany, reveal(func(m *types.MsgRevealResult) {
			m.Usage.GpuUuids = repeatN("GPU-", types.MaxUsageGPUs+1)
		})},
		{"MsgRevealResult", "usage.gpu_uuids[0]", validate.ErrTooLarge, reveal(func(m *types.MsgRevealResult) {
			m.Usage.GpuUuids = []string{long(types.MaxGPUUUIDLen + 1)}
		})},
		{"MsgRevealResult", "gemm_proofs", validate.ErrTooMany, reveal(func(m *types.MsgRevealResult) {
			m.GemmProofs = make([]gfltypes.ChunkProof, gfltypes.MaxSamples+1)
		})},
		{"MsgRevealResult", "gemm_proofs[0].chunk", validate.ErrTooLarge, reveal(func(m *types.MsgRevealResult) {
			m.GemmProofs[0].Chunk = make([]byte, pocp.ChunkBytes+1)
		})},
		{"MsgRevealResult", "gemm_proofs[0].path", validate.ErrTooMany, reveal(func(m *types.MsgRevealResult) {
			m.GemmProofs[0].Path = hash32(validate.MaxMerklePath + 1)
		})},
		{"MsgRevealResult", "gemm_proofs[0].path[2]", validate.ErrTooLarge, reveal(func(m *types.MsgRevealResult) {
			m.GemmProofs[0].Path[2] = make([]byte, 33)
		})},
		// MsgRevealUnit
		{"MsgRevealUnit", "salt", validate.ErrTooLarge, revealUnit(func(m *types.MsgRevealUnit) { m.Salt = make([]byte, types.MaxSaltLen+1) })},
		{"MsgRevealUnit", "output_uri", validate.ErrTooLarge, revealUnit(func(m *types.MsgRevealUnit) { m.OutputUri = long(types.MaxURILen + 1) })},
		{"MsgRevealUnit", "gemm_proofs", validate.ErrTooMany, revealUnit(func(m *types.MsgRevealUnit) {
			m.GemmProofs = make([]gfltypes.ChunkProof, gfltypes.MaxSamples+1)
		})},
	}
	for _, c := range cases {
		t.Run(c.msg+" "+c.field, func(t *testing.T) {
			escrow, balance := f.escrow(), f.balance(f.client)
			// on the fixture's own context, not a cache: nothing may be written before the
			// bound is checked
			err := c.send(f.ctx)
			require.ErrorIs(t, err, c.want)
			require.Contains(t, err.Error(), c.field+": ", "the error names the field")
			require.Contains(t, err.Error(), "at most", "the error names the bound")
			require.Equal(t, escrow, f.escrow())
			require.Equal(t, balance, f.balance(f.client))
		})
	}
}

// The attack of issue 13: a MsgSubmitJob listing 20,000 GPU classes in
// requirements.allowed_classes (about 440 KB, and a class-counter read per class for
// every task the scheduler examined) is refused before anything is read or written.
func TestJobWithTwentyThousandAllowedClassesIsRefused(t *testing.T) {
	f := newFixture(t, nil)
	s := f.gemmSpec(1)
	s.Requirements.AllowedClasses = repeatN("class-", 20_000)
	escrow, balance := f.escrow(), f.balance(f.client)
	_, err := f.ms.SubmitJob(f.ctx, &types.MsgSubmitJob{Owner: f.client, Spec: s})
	require.ErrorIs(t, err, validate.ErrTooMany)
	require.Contains(t, err.Error(), "requirements.allowed_classes: 20000 entries, at most 32")
	require.Equal(t, escrow, f.escrow())
	require.Equal(t, balance, f.balance(f.client))
}
