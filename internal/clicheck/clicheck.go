// Package clicheck helps the CLI check a Msg's content before it signs it, with the checks
// the chain runs: against the chain's params and the latest block's time when a node
// answers, against the default params and the local clock with --offline. A spec with a
// negative price, a past deadline or a missing field then fails before it is broadcast or
// printed by --generate-only, with the field named, instead of after it is in a block.
package clicheck

import (
	"fmt"
	"time"

	"github.com/cosmos/cosmos-sdk/client"
)

// Online says whether the checks read the chain (false with --offline).
func Online(clientCtx client.Context) bool { return !clientCtx.Offline }

// ChainTime is the time a spec is checked at: the latest block's, or offline the local
// clock.
func ChainTime(clientCtx client.Context) (time.Time, error) {
	if !Online(clientCtx) {
		return time.Now().UTC(), nil
	}
	node, err := clientCtx.GetNode()
	if err != nil {
		return time.Time{}, Unreachable(clientCtx, err)
	}
	st, err := node.Status(clientCtx.CmdContext)
	if err != nil {
		return time.Time{}, Unreachable(clientCtx, err)
	}
	return st.SyncInfo.LatestBlockTime, nil
}

// Unreachable is the error for a node that did not answer the checks' queries.
func Unreachable(clientCtx client.Context, err error) error {
	return fmt.Errorf("checking the spec against the chain at %s: %w (with --offline it is checked against the default params and the local clock)", clientCtx.NodeURI, err)
}

// Invalid names the spec file in a check's error.
func Invalid(file string, err error) error {
	return fmt.Errorf("%s: %w", file, err)
}
