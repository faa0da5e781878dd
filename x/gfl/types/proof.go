package types

import "github.com/flopsnet/flops/x/gfl/pocp"

// ChunkProofs is the reveal of the sampled positions of answer s (n x n, row-major,
// committed as tree) in the chain's format: one ChunkProof per distinct chunk holding a
// position (pocp.ChunksFor, in increasing chunk order), each with its 1024 bytes and its
// audit path of 32-byte hashes, as MsgRevealChallenge, MsgRevealResult and MsgRevealUnit
// carry them. Positions outside the matrix cannot be proven and are skipped (the chain
// never samples one); no position gives no proof.
func ChunkProofs(tree *pocp.Tree, s []int32, n uint32, positions []pocp.Position) []ChunkProof {
	inside := make([]pocp.Position, 0, len(positions))
	for _, p := range positions {
		if p.I < n && p.J < n {
			inside = append(inside, p)
		}
	}
	chunks := pocp.ChunksFor(n, inside)
	out := make([]ChunkProof, len(chunks))
	for x, chunk := range chunks {
		p := tree.Prove(s, chunk)
		path := make([][]byte, len(p.Path))
		for h := range p.Path {
			path[h] = append([]byte(nil), p.Path[h][:]...)
		}
		out[x] = ChunkProof{Index: p.Index, Chunk: p.Chunk, Path: path}
	}
	return out
}
