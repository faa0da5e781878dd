package market

import (
	autocliv1 "cosmossdk.io/api/cosmos/autocli/v1"

	"github.com/spf13/cobra"

	"github.com/flopsnet/flops/x/market/client/cli"
)

// GetTxCmd returns the hand-written tx commands; autocli adds the rest to them.
func (AppModule) GetTxCmd() *cobra.Command { return cli.TxCmd() }

// AutoCLIOptions describes the CLI of every Msg and Query.
func (AppModule) AutoCLIOptions() *autocliv1.ModuleOptions {
	args := func(fields ...string) []*autocliv1.PositionalArgDescriptor {
		out := make([]*autocliv1.PositionalArgDescriptor, len(fields))
		for i, f := range fields {
			out[i] = &autocliv1.PositionalArgDescriptor{ProtoField: f}
		}
		return out
	}
	// the job lists' --omit-spec
	omitSpec := map[string]*autocliv1.FlagOptions{"omit_spec": {Usage: "list the jobs without their specs (a page of large specs can pass the node's query gas limit; job <id> shows one)"}}
	poolOmitSpec := map[string]*autocliv1.FlagOptions{"omit_spec": {Usage: "list the pools without their specs (pool <id> shows one)"}}
	return &autocliv1.ModuleOptions{
		Query: &autocliv1.ServiceCommandDescriptor{
			Service: "flops.market.v1.Query",
			RpcCommandOptions: []*autocliv1.RpcCommandOptions{
				{RpcMethod: "Params", Use: "params", Short: "Show the x/market parameters"},
				{RpcMethod: "Job", Use: "job <job-id>", Short: "Show a job: spec, status, escrow", PositionalArgs: args("job_id")},
				{RpcMethod: "Jobs", Use: "jobs", Short: "List every job, or with --status those in a status", Example: "flopsd q market jobs --status JOB_STATUS_ACTIVE --omit-spec --page-limit 20", FlagOptions: omitSpec},
				{RpcMethod: "JobsByOwner", Use: "jobs-by-owner <owner>", Short: "List an owner's jobs", PositionalArgs: args("owner"), FlagOptions: omitSpec},
				{RpcMethod: "JobsByStatus", Use: "jobs-by-status <status>", Short: "List the jobs in a status", Example: "flopsd q market jobs-by-status JOB_STATUS_ACTIVE", PositionalArgs: args("status"), FlagOptions: omitSpec},
				{RpcMethod: "JobCounts", Use: "job-counts", Short: "Count the jobs held in each status"},
				{RpcMethod: "Queue", Use: "queue", Short: "Count the scheduler's queue: tasks waiting for a node, in their groups or parked"},
				{RpcMethod: "SchedulableByClass", Use: "schedulable-by-class", Short: "Count the schedulable nodes of each GPU class, idle and loaded"},
				{RpcMethod: "SchedulableByRegion", Use: "schedulable-by-region", Short: "Count the schedulable nodes of each region"},
				{RpcMethod: "Task", Use: "task <task-id>", Short: "Show a task", PositionalArgs: args("task_id")},
				{RpcMethod: "Tasks", Use: "all-tasks", Short: "List every task, or with --status those in a status", Example: "flopsd q market all-tasks --status TASK_STATUS_RUNNING"},
				{RpcMethod: "TasksByJob", Use: "tasks <job-id>", Short: "List a job's tasks", PositionalArgs: args("job_id")},
				{RpcMethod: "TasksByNode", Use: "tasks-by-node <node-id>", Short: "List a node's tasks", PositionalArgs: args("node_id")},
				{RpcMethod: "TasksByProvider", Use: "tasks-by-provider <provider>", Short: "List a provider's tasks", PositionalArgs: args("provider")},
				{RpcMethod: "BidsByJob", Use: "bids <job-id>", Short: "List an auction's bids", PositionalArgs: args("job_id")},
				{RpcMethod: "OpenAuctions", Use: "auctions", Short: "List the jobs taking bids"},
				{RpcMethod: "JobHistory", Use: "history <job-id>", Short: "Show a job's history, oldest first", PositionalArgs: args("job_id")},
				{RpcMethod: "NodeSlot", Use: "node <node-id>", Short: "Show the market's view of a node (load, ask, MIG devices)", PositionalArgs: args("node_id")},
				{RpcMethod: "Dispute", Use: "dispute <dispute-id>", Short: "Show a dispute and its committee", PositionalArgs: args("dispute_id")},
				{RpcMethod: "Pool", Use: "pool <pool-id>", Short: "Show a pool", PositionalArgs: args("pool_id")},
				{RpcMethod: "Pools", Use: "pools", Short: "List every pool", FlagOptions: poolOmitSpec},
				{RpcMethod: "PoolsByOwner", Use: "pools-by-owner <owner>", Short: "List the pools a client opened", PositionalArgs: args("owner"), FlagOptions: poolOmitSpec},
				{RpcMethod: "PoolMembers", Use: "pool-members <pool-id>", Short: "List a pool's member nodes", PositionalArgs: args("pool_id")},
				{RpcMethod: "OpenUnits", Use: "open-units <pool-id>", Short: "List a pool's units waiting for a claim", PositionalArgs: args("pool_id")},
				{RpcMethod: "Unit", Use: "unit <pool-id> <unit-id>", Short: "Show a pool unit", PositionalArgs: args("pool_id", "unit_id")},
				{RpcMethod: "PoolEarnings", Use: "pool-earnings <pool-id> <provider>", Short: "Show a provider's unpaid credits in a pool", PositionalArgs: args("pool_id", "provider")},
			},
		},
		Tx: &autocliv1.ServiceCommandDescriptor{
			Service:              "flops.market.v1.Msg",
			EnhanceCustomCommand: true,
			RpcCommandOptions: []*autocliv1.RpcCommandOptions{
				{RpcMethod: "UpdateParams", Skip: true}, // authority (gov) only
				{RpcMethod: "SubmitJob", Skip: true},    // client/cli: reads a spec file
				{RpcMethod: "CancelJob", Use: "cancel-job <job-id>", Short: "Cancel a job: unstarted tasks refunded at once, running ones paid pro rata", Example: "flopsd tx market cancel-job 7 --from client", PositionalArgs: args("job_id")},
				{RpcMethod: "PlaceBid", Use: "bid <job-id> <node-id> <price-udps> [quantity]", Short: "Bid a node for an auctioned job (locks the bid deposit)", Example: "flopsd tx market bid 7 1 900000 2 --from provider",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "job_id"}, {ProtoField: "node_id"}, {ProtoField: "price"}, {ProtoField: "quantity", Optional: true}}},
				{RpcMethod: "WithdrawBid", Use: "withdraw-bid <job-id> <node-id>", Short: "Withdraw a bid before the auction closes (refused once the auction is full: max_bids_per_job open bids are binding)", PositionalArgs: args("job_id", "node_id")},
				{RpcMethod: "AckTask", Use: "ack <task-id>", Short: "Start an assigned task (flops-worker does this)", PositionalArgs: args("task_id")},
				{RpcMethod: "Heartbeat", Use: "heartbeat <node-id>", Short: "Keep a node's running tasks alive (flops-worker does this)", PositionalArgs: args("node_id")},
				{RpcMethod: "Checkpoint", Use: "checkpoint <task-id> <sha256> <uri>", Short: "Record a task's checkpoint", PositionalArgs: args("task_id", "sha256", "uri")},
				{RpcMethod: "CommitResult", Use: "commit <task-id> <commitment-hex>", Short: "Commit sha256(result_root || salt || provider)", PositionalArgs: args("task_id", "commitment")},
				{RpcMethod: "RevealResult", Use: "reveal <task-id> <result-root-hex> <salt-hex> <output-uri>", Short: "Reveal a committed result", PositionalArgs: args("task_id", "result_root", "salt", "output_uri")},
				{RpcMethod: "ReportFailure", Use: "report-failure <task-id> <reason> <exit-code> <log-root-hex>", Short: "Report that a running task failed for the job's sake (flops-worker does this); it runs again elsewhere to confirm",
					Example: "flopsd tx market report-failure 12 exit 2 9f86d0...08 --detail 'exit status 2' --from provider", PositionalArgs: args("task_id", "reason", "exit_code", "log_root")},
				{RpcMethod: "ReleaseTask", Use: "release-task <task-id> [reason]", Short: "Give back an assigned or running task your machine cannot run: it goes to another node at once, at the cost of a lapse (abandon_slash_ppm; flops-worker does this when a task's GPU is lost)",
					Example: "flopsd tx market release-task 12 'GPU 3 fell off the bus' --from provider", PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "task_id"}, {ProtoField: "reason", Optional: true}}},
				{RpcMethod: "Challenge", Use: "challenge <task-id>", Short: "Challenge a verified result in its challenge window (locks the challenge bond; a committee decides)", Example: "flopsd tx market challenge 12 --from client", PositionalArgs: args("task_id")},
				{RpcMethod: "CreatePool", Skip: true}, // client/cli: reads a spec file
				{RpcMethod: "JoinPool", Use: "join-pool <pool-id> <node-id>", Short: "Add an eligible node to a pool", PositionalArgs: args("pool_id", "node_id")},
				{RpcMethod: "LeavePool", Use: "leave-pool <pool-id> <node-id>", Short: "Take a node out of a pool", PositionalArgs: args("pool_id", "node_id")},
				{RpcMethod: "SubmitUnits", Use: "submit-units <pool-id>", Short: "Post unit inputs to a pool: one --units '{\"uri\":...,\"sha256\":...,\"path\":...}' per unit", PositionalArgs: args("pool_id")},
				{RpcMethod: "CommitUnit", Use: "commit-unit <pool-id> <unit-id> <node-id> <commitment-hex>", Short: "Claim a unit with a result's commitment (flops-worker does this)", PositionalArgs: args("pool_id", "unit_id", "node_id", "commitment")},
				{RpcMethod: "RevealUnit", Use: "reveal-unit <pool-id> <unit-id> <result-root-hex> <salt-hex> <output-uri>", Short: "Reveal a claimed unit (flops-worker does this)", PositionalArgs: args("pool_id", "unit_id", "result_root", "salt", "output_uri")},
				{RpcMethod: "WithdrawPoolEarnings", Use: "withdraw-pool-earnings <pool-id>", Short: "Be paid for your verified units of a pool, in one transfer", PositionalArgs: args("pool_id")},
				{RpcMethod: "ClosePool", Use: "close-pool <pool-id>", Short: "Close a pool: credits paid, open units cancelled, the free budget refunded", PositionalArgs: args("pool_id")},
			},
		},
	}
}
