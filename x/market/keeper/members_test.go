package keeper_test

import (
	"fmt"
	"testing"

	"cosmossdk.io/collections"

	"github.com/stretchr/testify/require"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	"github.com/flopsnet/flops/x/market/keeper"
)

// classMembers reads a class's members position by position, as the draw does, and checks
// each one's reverse position.
func (f *fixture) classMembers(class string) []uint64 {
	f.t.Helper()
	size, err := f.k.ClassSize.Get(f.ctx, class)
	if err != nil {
		return nil
	}
	out := make([]uint64, size)
	for pos := range size {
		node, err := f.k.MemberAtForTest(f.ctx, class, pos)
		require.NoError(f.t, err, "position %d of %q", pos, class)
		at, err := f.k.MemberPos.Get(f.ctx, node)
		require.NoError(f.t, err)
		require.Equal(f.t, pos, at, "node %d", node)
		out[pos] = node
	}
	return out
}

// The packed class members follow nodes that join and leave, across chunk boundaries: a
// node that leaves gives its position to the class's last node (from the same chunk or
// another one), an emptied last chunk goes, and a class that loses every node leaves no
// key behind. The slots invariant (which walks the chunks) holds throughout.
func TestMemberChunksFollowJoinsAndLeaves(t *testing.T) {
	const a100 = "A100-40GB"
	f := newFixture(t, nil)
	n := 2*keeper.MemberChunk + 3 // three chunks, the last of 3
	var ids []uint64
	for i := range n {
		ids = append(ids, f.addNode(f.operator(string(rune('a'+i%26))), 8, nil))
	}
	h100 := func(g *gfltypes.Node) { g.GpuClass = "H100-80GB" }
	other := []uint64{f.addNode(f.operator("h"), 8, h100), f.addNode(f.operator("i"), 8, h100)}
	require.Equal(t, ids, f.classMembers(a100))
	require.Equal(t, other, f.classMembers("H100-80GB"))
	f.assertInvariants()

	leave := func(id uint64) {
		f.updateNode(id, func(g *gfltypes.Node) { g.Status = gfltypes.NODE_STATUS_INACTIVE })
		f.assertInvariants()
	}
	want := append([]uint64(nil), ids...)
	drop := func(pos int) { // what the class does: its last node takes pos
		want[pos] = want[len(want)-1]
		want = want[:len(want)-1]
	}
	// from the first chunk: the last node (third chunk) moves into it
	leave(ids[3])
	drop(3)
	require.Equal(t, want, f.classMembers(a100))
	// the last node itself: its chunk shrinks
	leave(want[len(want)-1])
	drop(len(want) - 1)
	require.Equal(t, want, f.classMembers(a100))
	// from the last chunk, not its last node: a move inside the chunk
	leave(want[2*keeper.MemberChunk])
	drop(2 * keeper.MemberChunk)
	require.Equal(t, want, f.classMembers(a100))
	require.Len(t, want, 2*keeper.MemberChunk, "the third chunk emptied")
	has, err := f.k.MemberChunks.Has(f.ctx, collections.Join(a100, uint64(2)))
	require.NoError(t, err)
	require.False(t, has, "an empty chunk is removed")

	// a node that comes back joins at the end, opening a chunk
	back := ids[3]
	f.updateNode(back, func(g *gfltypes.Node) { g.Status = gfltypes.NODE_STATUS_ACTIVE })
	want = append(want, back)
	require.Equal(t, want, f.classMembers(a100))
	f.assertInvariants()

	// a node that changes class leaves one and joins the other
	f.updateNode(want[0], h100)
	other = append(other, want[0])
	drop(0)
	require.Equal(t, want, f.classMembers(a100))
	require.Equal(t, other, f.classMembers("H100-80GB"))
	f.assertInvariants()

	// a class that loses every node leaves no size and no chunk
	for _, id := range other {
		leave(id)
	}
	_, err = f.k.ClassSize.Get(f.ctx, "H100-80GB")
	require.Error(t, err)
	has, err = f.k.MemberChunks.Has(f.ctx, collections.Join("H100-80GB", uint64(0)))
	require.NoError(t, err)
	require.False(t, has)

	// and the draw still finds the class's nodes
	id := f.submit(f.gemmSpec(1))
	f.next(0)
	f.requireAssigned(f.ctx, []uint64{id})
}

// The slots invariant catches a class whose size counts a position no chunk holds: a draw
// of that position would fail.
func TestSlotsInvariantCatchesAMemberHole(t *testing.T) {
	f := newFixture(t, nil)
	for i := range 3 {
		f.addNode(f.operator(string(rune('a'+i))), 8, nil)
	}
	_, broken := f.k.SlotsInvariant(f.ctx)
	require.False(t, broken)
	require.NoError(t, f.k.ClassSize.Set(f.ctx, "A100-40GB", 4))
	msg, broken := f.k.SlotsInvariant(f.ctx)
	require.True(t, broken)
	require.Contains(t, msg, `class "A100-40GB" of size 4 holds 3 members`)
}

// A node whose reverse position names another node's position is not removed over it: the
// removal fails with both nodes named, instead of dropping the other node from the draw.
func TestRemoveMemberRefusesAPositionHeldByAnother(t *testing.T) {
	f := newFixture(t, nil)
	a := f.addNode(f.operator("a"), 8, nil)
	b := f.addNode(f.operator("b"), 8, nil)
	f.addNode(f.operator("c"), 8, nil)
	require.NoError(t, f.k.MemberPos.Set(f.ctx, a, 1)) // b's position
	n := f.gfl.nodes[a]
	n.Status = gfltypes.NODE_STATUS_INACTIVE
	err := f.k.GFLHooks().AfterNodeChanged(f.ctx, n)
	require.ErrorContains(t, err, fmt.Sprintf("node %d at position 1 of class \"A100-40GB\": the position holds node %d", a, b))
}
