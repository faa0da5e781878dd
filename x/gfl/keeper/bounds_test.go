package keeper_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/internal/validate"
	"github.com/flopsnet/flops/x/gfl/pocp"
	"github.com/flopsnet/flops/x/gfl/types"
)

// Every list and free-form field of every x/gfl Msg has a bound, and a Msg past it is
// rejected with the bound's own registered error (validate.ErrTooMany for a count,
// validate.ErrTooLarge for a size; a params update's ErrInvalidParams) naming the field
// and the bound, and changes nothing.
func TestEveryOversizeFieldIsRejected(t *testing.T) {
	f := newFixture(t, nil)
	op := f.operator("alice", 10_000)
	id := f.register(op, spec("a", 1))
	p := f.params()
	long := func(n int) string { return strings.Repeat("x", n) }
	register := func(edit func(s *types.NodeSpec)) func() error {
		return func() error {
			s := spec("b", 1)
			edit(&s)
			_, err := f.ms.RegisterNode(f.ctx, &types.MsgRegisterNode{Operator: op, Spec: s})
			return err
		}
	}
	update := func(edit func(s *types.NodeSpec)) func() error {
		return func() error {
			s := spec("a", 1)
			edit(&s)
			_, err := f.ms.UpdateNode(f.ctx, &types.MsgUpdateNode{Operator: op, NodeId: id, Spec: s})
			return err
		}
	}
	reveal := func(edit func(ps []types.ChunkProof) []types.ChunkProof) func() error {
		return func() error {
			ps := []types.ChunkProof{{Chunk: make([]byte, pocp.ChunkBytes), Path: make([][]byte, 3)}}
			for i := range ps[0].Path {
				ps[0].Path[i] = make([]byte, 32)
			}
			_, err := f.ms.RevealChallenge(f.ctx, &types.MsgRevealChallenge{Operator: op, ChallengeId: 1, Proofs: edit(ps)})
			return err
		}
	}
	params := func(edit func(p *types.Params)) func() error {
		return func() error {
			np := p
			np.GpuClasses = append([]types.GpuClass(nil), p.GpuClasses...)
			edit(&np)
			_, err := f.ms.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.env.Authority, Params: np})
			return err
		}
	}
	manyGPUs := func(s *types.NodeSpec) {
		g := s.Gpus[0]
		s.Gpus = nil
		for i := range int(p.MaxGpusPerNode) + 1 {
			g.Uuid = fmt.Sprintf("GPU-many-%d", i)
			s.Gpus = append(s.Gpus, g)
		}
	}
	cases := []struct {
		msg, field string
		want       error
		send       func() error
	}{
		{"MsgRegisterNode", "gpus", validate.ErrTooMany, register(manyGPUs)},
		{"MsgRegisterNode", "gpus[0].model", validate.ErrTooLarge, register(func(s *types.NodeSpec) { s.Gpus[0].Model = long(129) })},
		{"MsgRegisterNode", "gpus[0].uuid", validate.ErrTooLarge, register(func(s *types.NodeSpec) { s.Gpus[0].Uuid = long(129) })},
		{"MsgRegisterNode", "gpus[0].compute_capability", validate.ErrTooLarge, register(func(s *types.NodeSpec) { s.Gpus[0].ComputeCapability = long(6) })},
		{"MsgRegisterNode", "region", validate.ErrTooLarge, register(func(s *types.NodeSpec) { s.Region = long(65) })},
		{"MsgRegisterNode", "endpoint", validate.ErrTooLarge, register(func(s *types.NodeSpec) { s.Endpoint = "https://" + long(256) })},
		{"MsgRegisterNode", "workloads", validate.ErrTooMany, register(func(s *types.NodeSpec) {
			s.Workloads = make([]types.WorkloadClass, len(types.WorkloadClasses)+1)
		})},
		{"MsgUpdateNode", "gpus", validate.ErrTooMany, update(manyGPUs)},
		{"MsgUpdateNode", "region", validate.ErrTooLarge, update(func(s *types.NodeSpec) { s.Region = long(65) })},
		{"MsgRevealChallenge", "proofs", validate.ErrTooMany, reveal(func([]types.ChunkProof) []types.ChunkProof {
			return make([]types.ChunkProof, types.MaxSamples+1)
		})},
		{"MsgRevealChallenge", "proofs[0].chunk", validate.ErrTooLarge, reveal(func(ps []types.ChunkProof) []types.ChunkProof {
			ps[0].Chunk = make([]byte, pocp.ChunkBytes+1)
			return ps
		})},
		{"MsgRevealChallenge", "proofs[0].path", validate.ErrTooMany, reveal(func(ps []types.ChunkProof) []types.ChunkProof {
			ps[0].Path = make([][]byte, validate.MaxMerklePath+1)
			return ps
		})},
		{"MsgRevealChallenge", "proofs[0].path[1]", validate.ErrTooLarge, reveal(func(ps []types.ChunkProof) []types.ChunkProof {
			ps[0].Path[1] = make([]byte, 33)
			return ps
		})},
		{"MsgUpdateParams", "gpu_classes", types.ErrInvalidParams, params(func(np *types.Params) {
			for i := range types.MaxGpuClasses {
				c := np.GpuClasses[0]
				c.Name = fmt.Sprintf("extra-%d", i)
				np.GpuClasses = append(np.GpuClasses, c)
			}
		})},
		{"MsgUpdateParams", "gpu_classes[0].model_substrings", types.ErrInvalidParams, params(func(np *types.Params) {
			np.GpuClasses[0].ModelSubstrings = make([]string, types.MaxModelSubstrings+1)
		})},
	}
	for _, c := range cases {
		t.Run(c.msg+" "+c.field, func(t *testing.T) {
			before := f.snapshot()
			err := c.send()
			require.ErrorIs(t, err, c.want)
			require.Contains(t, err.Error(), c.field+": ")
			require.Contains(t, err.Error(), "at most")
			f.requireUnchanged(before)
		})
	}
}
