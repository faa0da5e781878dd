package pocp

import (
	"errors"
	"slices"
	"testing"
)

// honestReveal is what an honest worker sends: one proof per needed chunk, in
// ChunksFor order.
func honestReveal(tree *Tree, s []int32, n uint32, positions []Position) []ChunkProof {
	var proofs []ChunkProof
	for _, chunk := range ChunksFor(n, positions) {
		proofs = append(proofs, tree.Prove(s, chunk))
	}
	return proofs
}

func TestChunksFor(t *testing.T) {
	// Distinct and sorted: (0,0) and (0,255) share chunk 0 at n = 512; (1,0) is chunk 2.
	got := ChunksFor(512, []Position{{1, 0}, {0, 255}, {0, 0}, {1, 0}, {0, 256}})
	if want := []uint64{0, 1, 2}; !slices.Equal(got, want) {
		t.Fatalf("ChunksFor = %v, want %v", got, want)
	}
}

func TestVerifyReveal(t *testing.T) {
	c := testChallenge(512, 2, 5)
	s := ReferenceSolve(c)
	tree := BuildTree(s, c.N, 2)
	root := tree.Root()
	positions := SamplePositions(SampleSeed([]byte("block after commit"), 1), c.N, 16)
	positions = append(positions, positions[0]) // a repeated draw is legal
	needed := ChunksFor(c.N, positions)
	honest := honestReveal(tree, s, c.N, positions)
	if len(needed) < 3 {
		t.Fatalf("want at least 3 distinct chunks, got %d", len(needed))
	}

	// A chunk holding no sampled entry.
	var spare uint64
	for slices.Contains(needed, spare) {
		spare++
	}
	// The sampled entry of positions[0] changed by one, and the root over that S.
	p0 := positions[0]
	x0 := int(p0.I)*int(c.N) + int(p0.J)
	tampered := slices.Clone(s)
	tampered[x0]++
	tamperedTree := BuildTree(tampered, c.N, 2)
	// 5% of S changed, including a sampled entry, committed honestly.
	cheat := slices.Clone(s)
	for x := 0; x < len(cheat); x += 20 {
		cheat[x] -= 3
	}
	cheatPos := []Position{{0, 0}, {7, 100}} // (0,0) is changed, (7,100) is not
	cheatTree := BuildTree(cheat, c.N, 2)

	cases := []struct {
		name      string
		c         Challenge
		root      [32]byte
		positions []Position
		proofs    []ChunkProof
		want      error
	}{
		// The honest reveal passes.
		{"honest", c, root, positions, honest, nil},
		// The order of the proofs is free.
		{"honest reversed", c, root, positions, reversed(honest), nil},
		// A change to an unsampled entry of a revealed chunk is not detected: only
		// sampled entries are checked.
		{"unsampled entry in revealed chunk", c, tamperedTree.Root(), []Position{{p0.I, p0.J ^ 1}}, honestReveal(tamperedTree, tampered, c.N, []Position{{p0.I, p0.J ^ 1}}), nil},
		// An invalid size is refused before anything else.
		{"bad size", Challenge{Seed: c.Seed, N: 300, R: 1}, root, positions, honest, ErrBadSize},
		// No sampled position proves nothing.
		{"no positions", c, root, nil, nil, ErrMalformed},
		// A position outside the matrix.
		{"position outside", c, root, []Position{{0, c.N}}, honest[:1], ErrMalformed},
		// A needed chunk left out.
		{"missing chunk", c, root, positions, honest[1:], ErrMissingChunk},
		{"no chunks", c, root, positions, nil, ErrMissingChunk},
		// A chunk holding no sampled entry, in addition to the needed ones.
		{"extra chunk", c, root, positions, append(slices.Clone(honest), tree.Prove(s, spare)), ErrMalformed},
		// A chunk holding no sampled entry instead of a needed one.
		{"swapped chunk", c, root, positions, append(slices.Clone(honest[1:]), tree.Prove(s, spare)), ErrMalformed},
		// A needed chunk twice, in addition to all of them.
		{"duplicated chunk", c, root, positions, append(slices.Clone(honest), honest[0]), ErrMalformed},
		// A needed chunk twice, instead of another needed one.
		{"duplicate instead of another", c, root, positions, append(slices.Clone(honest[1:]), honest[1]), ErrMalformed},
		// A chunk of the wrong length.
		{"short chunk", c, root, positions, replace(honest, 1, withChunk(honest[1], honest[1].Chunk[:ChunkBytes-4])), ErrMalformed},
		{"long chunk", c, root, positions, replace(honest, 1, withChunk(honest[1], append(slices.Clone(honest[1].Chunk), 0))), ErrMalformed},
		// A wrong sibling on one path.
		{"bad path", c, root, positions, replace(honest, 2, withPath(honest[2], flipFirst(honest[2].Path))), ErrBadProof},
		// A changed sampled entry against the honest root: the path no longer fits.
		{"changed entry, honest root", c, root, []Position{p0}, []ChunkProof{tamperedTree.Prove(tampered, ChunkIndex(c.N, p0))}, ErrBadProof},
		// A changed sampled entry, committed: the path fits, the entry is wrong.
		{"changed entry, committed", c, tamperedTree.Root(), positions, honestReveal(tamperedTree, tampered, c.N, positions), ErrWrongEntry},
		// A tree over an S with 5% wrong entries, one of them sampled.
		{"tampered S, sampled", c, cheatTree.Root(), cheatPos, honestReveal(cheatTree, cheat, c.N, cheatPos), ErrWrongEntry},
		// The same tree, with only correct entries sampled, passes.
		{"tampered S, unsampled", c, cheatTree.Root(), cheatPos[1:], honestReveal(cheatTree, cheat, c.N, cheatPos[1:]), nil},
		// The right answer for a different seed.
		{"other challenge", testChallenge(512, 2, 6), root, positions, honest, ErrWrongEntry},
	}
	for _, tc := range cases {
		err := VerifyReveal(tc.c, tc.root, tc.positions, tc.proofs)
		if tc.want == nil && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
}

func reversed(p []ChunkProof) []ChunkProof {
	out := slices.Clone(p)
	slices.Reverse(out)
	return out
}

func replace(p []ChunkProof, at int, with ChunkProof) []ChunkProof {
	out := slices.Clone(p)
	out[at] = with
	return out
}

func flipFirst(path [][32]byte) [][32]byte {
	out := slices.Clone(path)
	out[0][0] ^= 1
	return out
}
