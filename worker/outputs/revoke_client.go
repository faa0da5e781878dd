package outputs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/cosmos/cosmos-sdk/types/query"

	gfltypes "github.com/flopsnet/flops/x/gfl/types"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// Held is an output server (its base URL) and the owner's tasks it may hold something of.
type Held struct {
	Endpoint string
	Tasks    []uint64
}

// ownJobsRead bounds the owner's jobs OwnerProviders reads when it is named no task: the
// newest, since a session leaked today read those jobs' providers.
const ownJobsRead = 100

// OwnerProviders finds the output servers that may hold something of owner's tasks, each
// with those tasks: where the task's outputs were published (its output URI), the node it
// runs on and the nodes that reported it failed (their logs). It reads the tasks named, or
// with none, every task of the owner's newest jobs (ownJobsRead). A task of another owner
// is refused: its providers would not take the owner's revocation for it.
func OwnerProviders(ctx context.Context, market markettypes.QueryClient, gfl gfltypes.QueryClient, owner string, taskIDs []uint64) ([]Held, error) {
	var tasks []markettypes.Task
	if len(taskIDs) == 0 {
		jobs, err := market.JobsByOwner(ctx, &markettypes.QueryJobsByOwnerRequest{Owner: owner, OmitSpec: true,
			Pagination: &query.PageRequest{Limit: ownJobsRead, Reverse: true}})
		if err != nil {
			return nil, fmt.Errorf("jobs of %s: %w", owner, err)
		}
		for _, j := range jobs.Jobs {
			var key []byte
			for {
				res, err := market.TasksByJob(ctx, &markettypes.QueryTasksByJobRequest{JobId: j.Id, Pagination: &query.PageRequest{Key: key, Limit: 500}})
				if err != nil {
					return nil, fmt.Errorf("tasks of job %d: %w", j.Id, err)
				}
				tasks = append(tasks, res.Tasks...)
				if res.Pagination == nil || len(res.Pagination.NextKey) == 0 {
					break
				}
				key = res.Pagination.NextKey
			}
		}
	}
	for _, id := range taskIDs {
		res, err := market.Task(ctx, &markettypes.QueryTaskRequest{TaskId: id})
		if err != nil {
			return nil, fmt.Errorf("task %d: %w", id, err)
		}
		job, err := market.Job(ctx, &markettypes.QueryJobRequest{JobId: res.Task.JobId})
		if err != nil {
			return nil, fmt.Errorf("job %d of task %d: %w", res.Task.JobId, id, err)
		}
		if job.Job.Owner != owner {
			return nil, fmt.Errorf("task %d is a task of %s's job %d, not of %s", id, job.Job.Owner, job.Job.Id, owner)
		}
		tasks = append(tasks, res.Task)
	}

	var held []Held
	add := func(endpoint string, task uint64) {
		endpoint = strings.TrimRight(endpoint, "/")
		if endpoint == "" {
			return
		}
		i := slices.IndexFunc(held, func(h Held) bool { return h.Endpoint == endpoint })
		if i < 0 {
			held = append(held, Held{Endpoint: endpoint})
			i = len(held) - 1
		}
		if !slices.Contains(held[i].Tasks, task) {
			held[i].Tasks = append(held[i].Tasks, task)
		}
	}
	endpoints := map[uint64]string{}
	nodeEndpoint := func(node uint64) (string, error) {
		if e, ok := endpoints[node]; ok || node == 0 {
			return e, nil
		}
		n, err := gfl.Node(ctx, &gfltypes.QueryNodeRequest{NodeId: node})
		if err != nil {
			return "", fmt.Errorf("node %d: %w", node, err)
		}
		endpoints[node] = n.Node.Endpoint
		return n.Node.Endpoint, nil
	}
	for _, t := range tasks {
		if base, _, ok := strings.Cut(t.OutputUri, "/v1/tasks/"); ok {
			add(base, t.Id)
		}
		nodes := []uint64{t.NodeId}
		for _, f := range t.Failures {
			nodes = append(nodes, f.NodeId)
		}
		for _, n := range nodes {
			e, err := nodeEndpoint(n)
			if err != nil {
				return nil, fmt.Errorf("task %d: %w", t.Id, err)
			}
			add(e, t.Id)
		}
	}
	return held, nil
}

// RevokeResult is what one output server answered a revocation.
type RevokeResult struct {
	Endpoint string
	// Task is the task the server took the revocation for; 0 when it took it for none.
	Task uint64
	// Before is the time before which the server refuses the owner's delegations.
	Before int64
	Err    error
}

// RevokeEverywhere sends rv to each server of held, naming its tasks in turn until one is
// held there (a server that has pruned a task's outputs answers 404 for it); any other
// failure ends the tries at that server.
func RevokeEverywhere(ctx context.Context, client *http.Client, rv Revocation, held []Held) []RevokeResult {
	out := make([]RevokeResult, 0, len(held))
	for _, h := range held {
		r := RevokeResult{Endpoint: h.Endpoint}
		var errs []error
		for _, task := range h.Tasks {
			before, err := SendRevocation(ctx, client, h.Endpoint, task, rv)
			if err == nil {
				r.Task, r.Before, errs = task, before, nil
				break
			}
			errs = append(errs, err)
			var refused *statusError
			if !errors.As(err, &refused) || refused.code != http.StatusNotFound {
				break
			}
		}
		r.Err = errors.Join(errs...)
		out = append(out, r)
	}
	return out
}
