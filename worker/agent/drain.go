package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/worker/chain"
	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// DrainOptions is what `flops-worker drain` asks for.
type DrainOptions struct {
	// NodeID is the node to drain; 0: the operator's one node on the market (an error
	// when it has several).
	NodeID uint64
	// Cancel puts a draining (or drained) node back on the market instead.
	Cancel bool
	// Wait, after the drain is sent, follows the node until it is deactivated, reading it
	// every drainPoll, and says how many tasks it still waits for.
	Wait bool
	// StateDir, when set, is the worker's state directory: the drain is handed to the
	// worker running there (RequestDrain), which sends it through its own signer, and is
	// signed here only when no worker takes it within Handoff (15 s when 0). A second
	// process signing with the worker's key races it for the account's sequence, and the
	// transaction that loses waits seconds to be signed anew: a heartbeat held up so long
	// can let a task lapse.
	StateDir string
	Handoff  time.Duration
}

// drainPoll: how often Drain with Wait reads the draining node.
const drainPoll = 5 * time.Second

// ErrNoNodeToDrain: the operator has no node the drain could be about, or several.
var ErrNoNodeToDrain = errors.New("no node to drain")

// Drain takes the operator's node off the market without abandoning its work
// (MsgDeactivateNode with drain): deactivated at once when it has no task in flight, else
// DRAINING, taking no new work, until the last task in flight ends (its worker must go on
// running until then), when the chain deactivates it and unlocks its collateral. With
// Cancel it puts the node back (MsgReactivateNode). What happened is written to out.
func Drain(ctx context.Context, ch Chain, o DrainOptions, out io.Writer) error {
	gfl, market := gfltypes.NewQueryClient(ch.Conn()), markettypes.NewQueryClient(ch.Conn())
	op := ch.Address().String()
	node, err := nodeToDrain(ctx, gfl, op, o)
	if err != nil {
		return err
	}
	handed, err := handOff(ctx, o, node.Id, out)
	if err != nil {
		return err
	}
	if !handed {
		if _, err := ch.Submit(ctx, drainMsg(op, node.Id, o.Cancel)); err != nil {
			return fmt.Errorf("%s node %d: %w", drainWhat(o.Cancel), node.Id, err)
		}
	}
	got, err := gfl.Node(ctx, &gfltypes.QueryNodeRequest{NodeId: node.Id})
	if err != nil {
		return err
	}
	status := got.Node.Status
	if o.Cancel {
		_, _ = fmt.Fprintf(out, "node %d is %s again: it takes work once its PoCP challenge passes\n", node.Id, status)
		return nil
	}
	if status == gfltypes.NODE_STATUS_INACTIVE {
		_, _ = fmt.Fprintf(out, "node %d deactivated (no task in flight): its collateral is unlocked; the worker can be stopped\n", node.Id)
		return nil
	}
	left, err := tasksInFlight(ctx, market, node.Id)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(out, "node %d is draining: no new work; it is deactivated when its %d tasks in flight end (keep the worker running until then)\n", node.Id, left)
	if !o.Wait {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(drainPoll):
		}
		got, err := gfl.Node(ctx, &gfltypes.QueryNodeRequest{NodeId: node.Id})
		if err != nil {
			return err
		}
		switch got.Node.Status {
		case gfltypes.NODE_STATUS_INACTIVE:
			_, _ = fmt.Fprintf(out, "node %d drained: deactivated, its collateral unlocked; the worker can be stopped\n", node.Id)
			return nil
		case gfltypes.NODE_STATUS_DRAINING:
		default:
			return fmt.Errorf("node %d is %s: its drain was cancelled", node.Id, got.Node.Status)
		}
		n, err := tasksInFlight(ctx, market, node.Id)
		if err != nil {
			return err
		}
		if n != left {
			left = n
			_, _ = fmt.Fprintf(out, "node %d: %d tasks in flight\n", node.Id, left)
		}
	}
}

// nodeToDrain is the node o names (the operator's), or the operator's one node that a
// drain (or its cancel) applies to.
func nodeToDrain(ctx context.Context, gfl gfltypes.QueryClient, op string, o DrainOptions) (gfltypes.Node, error) {
	nodes, err := chain.NodesOf(ctx, gfl, op)
	if err != nil {
		return gfltypes.Node{}, err
	}
	want := func(n gfltypes.Node) bool {
		if o.Cancel {
			return offMarket(n)
		}
		return n.Status == gfltypes.NODE_STATUS_ACTIVE || n.Status == gfltypes.NODE_STATUS_PENDING
	}
	var found []gfltypes.Node
	for _, n := range nodes {
		if o.NodeID != 0 && n.Id == o.NodeID {
			return n, nil
		}
		if want(n) {
			found = append(found, n)
		}
	}
	switch {
	case o.NodeID != 0:
		return gfltypes.Node{}, fmt.Errorf("%w: node %d is not operated by %s", ErrNoNodeToDrain, o.NodeID, op)
	case len(found) == 0 && o.Cancel:
		return gfltypes.Node{}, fmt.Errorf("%w: %s has no draining or inactive node", ErrNoNodeToDrain, op)
	case len(found) == 0:
		return gfltypes.Node{}, fmt.Errorf("%w: %s has no node on the market", ErrNoNodeToDrain, op)
	case len(found) > 1:
		ids := make([]uint64, len(found))
		for i, n := range found {
			ids[i] = n.Id
		}
		return gfltypes.Node{}, fmt.Errorf("%w: %s has nodes %v: name one with --node", ErrNoNodeToDrain, op, ids)
	}
	return found[0], nil
}

// tasksInFlight is the count of the node's tasks its drain waits for (assigned, running,
// committed), as the market's slot keeps it.
func tasksInFlight(ctx context.Context, market markettypes.QueryClient, nodeID uint64) (int, error) {
	res, err := market.NodeSlot(ctx, &markettypes.QueryNodeSlotRequest{NodeId: nodeID})
	if err != nil {
		return 0, fmt.Errorf("node %d's slot: %w", nodeID, err)
	}
	return int(res.Slot.Tasks), nil
}

func drainMsg(op string, node uint64, cancel bool) sdk.Msg {
	if cancel {
		return &gfltypes.MsgReactivateNode{Operator: op, NodeId: node}
	}
	return &gfltypes.MsgDeactivateNode{Operator: op, NodeId: node, Drain: true}
}

func drainWhat(cancel bool) string {
	if cancel {
		return "reactivate"
	}
	return "drain"
}

// The handoff's files in the worker's state directory: the request `flops-worker drain`
// leaves, the same file renamed by the worker that took it, and the worker's answer.
const (
	drainRequestFile = "drain-request.json"
	drainTakenFile   = "drain-request.taken"
	drainResultFile  = "drain-result.json"
)

type drainRequest struct {
	NodeID uint64 `json:"node_id"`
	Cancel bool   `json:"cancel"`
}

type drainResult struct {
	Error string `json:"error,omitempty"`
}

// RequestDrain leaves a drain (or its cancel) of node for the worker running on dir, its
// state directory, which sends it at its next block (drainAction) and answers in
// DrainResult.
func RequestDrain(dir string, node uint64, cancel bool) error {
	if err := os.Remove(filepath.Join(dir, drainResultFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	b, err := json.Marshal(drainRequest{NodeID: node, Cancel: cancel})
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, drainRequestFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, drainRequestFile))
}

// DrainResult is the running worker's answer to RequestDrain: done once its transaction
// is in a block, with the chain's refusal if any.
func DrainResult(dir string) (done bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, drainResultFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	var r drainResult
	if err := json.Unmarshal(b, &r); err != nil {
		return false, fmt.Errorf("%s: %w", drainResultFile, err)
	}
	if r.Error != "" {
		return true, errors.New(r.Error)
	}
	return true, nil
}

// handOff hands the drain to the worker running on o.StateDir and waits for its answer;
// handed is false when no worker took the request within o.Handoff (it is taken back,
// and the caller signs the drain itself). A worker takes a request by renaming it, so a
// request is either taken back or sent, never both.
func handOff(ctx context.Context, o DrainOptions, node uint64, out io.Writer) (handed bool, err error) {
	if o.StateDir == "" {
		return false, nil
	}
	if err := RequestDrain(o.StateDir, node, o.Cancel); err != nil {
		return false, err
	}
	wait := o.Handoff
	if wait <= 0 {
		wait = 15 * time.Second
	}
	deadline := time.Now().Add(wait)
	for said := false; ; {
		done, err := DrainResult(o.StateDir)
		if done {
			if err != nil {
				return true, fmt.Errorf("%s node %d: %w", drainWhat(o.Cancel), node, err)
			}
			return true, nil
		} else if err != nil {
			return false, err
		}
		if !said && time.Now().After(deadline) {
			err := os.Remove(filepath.Join(o.StateDir, drainRequestFile))
			switch {
			case err == nil:
				return false, nil // no worker runs there: signed here
			case !errors.Is(err, fs.ErrNotExist):
				return false, err
			}
			said = true // taken: its transaction waits for a block
			deadline = time.Now().Add(2 * time.Minute)
			_, _ = fmt.Fprintln(out, "the worker took the request; waiting for its transaction")
		} else if said && time.Now().After(deadline) {
			return true, fmt.Errorf("%s node %d: the worker took the request and has not answered in 2 minutes: see its log", drainWhat(o.Cancel), node)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// drainAction sends a drain (or its cancel) that `flops-worker drain` left in the state
// directory, through the worker's own signer, and answers it there once the transaction
// is in a block (RequestDrain, DrainResult).
func (a *Agent) drainAction() (action, bool) {
	dir := a.cfg.StateDir
	taken := filepath.Join(dir, drainTakenFile)
	if err := os.Rename(filepath.Join(dir, drainRequestFile), taken); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			a.log.Warn("drain request", "err", err)
		}
		return action{}, false
	}
	answer := func(err error) {
		r := drainResult{}
		if err != nil {
			r.Error = err.Error()
		}
		b, _ := json.Marshal(r)
		tmp := filepath.Join(dir, drainResultFile+".tmp")
		if werr := os.WriteFile(tmp, b, 0o600); werr == nil {
			werr = os.Rename(tmp, filepath.Join(dir, drainResultFile))
			if werr != nil {
				a.log.Warn("drain result", "err", werr)
			}
		}
		_ = os.Remove(taken)
	}
	b, err := os.ReadFile(taken)
	var req drainRequest
	if err == nil {
		err = json.Unmarshal(b, &req)
	}
	switch {
	case err != nil:
		answer(fmt.Errorf("the drain request: %w", err))
		return action{}, false
	case req.NodeID != a.node.Id:
		answer(fmt.Errorf("this worker runs node %d, not node %d", a.node.Id, req.NodeID))
		return action{}, false
	}
	what := drainWhat(req.Cancel)
	a.log.Info("sending its operator's "+what+" of the node", "node", a.node.Id)
	return action{what: what + " node", msgs: msgs(drainMsg(a.o.Chain.Address().String(), a.node.Id, req.Cancel)),
		after: answer}, true
}
