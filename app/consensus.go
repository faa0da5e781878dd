package app

import (
	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	cmttypes "github.com/cometbft/cometbft/types"
)

// DefaultBlockMaxGas is the block gas limit of a new flops chain (consensus
// block.max_gas; CometBFT's default, -1, is unlimited). It is sized so that the largest
// legal transaction fits in half a block: the maximal MsgSubmitJob (5,000 task replicas,
// every list at its bound) uses about 130M gas and the largest BUILTIN_GEMM or PoCP
// reveal (n x r at its cap, 32 samples) about 21M; tests/integration's
// TestGasMaximalLegalSubmitJob and TestGasLargestGemmReveal measure them.
const DefaultBlockMaxGas = 300_000_000

// DefaultConsensusParams are CometBFT's defaults with a finite block gas limit.
func DefaultConsensusParams() *cmtproto.ConsensusParams {
	p := cmttypes.DefaultConsensusParams()
	p.Block.MaxGas = DefaultBlockMaxGas
	cp := p.ToProto()
	return &cp
}
