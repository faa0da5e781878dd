package reputation

import (
	autocliv1 "cosmossdk.io/api/cosmos/autocli/v1"
)

// AutoCLIOptions describes the CLI of every Msg and Query.
func (AppModule) AutoCLIOptions() *autocliv1.ModuleOptions {
	return &autocliv1.ModuleOptions{
		Query: &autocliv1.ServiceCommandDescriptor{
			Service: "flops.reputation.v1.Query",
			RpcCommandOptions: []*autocliv1.RpcCommandOptions{
				{RpcMethod: "Params", Use: "params", Short: "Show the x/reputation parameters"},
				{
					RpcMethod:      "Score",
					Use:            "score [node-id]",
					Short:          "Show a node's score, its components (A, R, S_prev), eligibility and the current epoch's counters",
					Example:        "flopsd q reputation score 7",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "node_id"}},
				},
				{
					RpcMethod:      "History",
					Use:            "history [node-id]",
					Short:          "List a node's past epoch scores, newest first (--reverse: oldest first)",
					Example:        "flopsd q reputation history 7 --limit 10",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "node_id"}},
				},
				{
					RpcMethod: "Ranked",
					Use:       "ranked",
					Short:     "List nodes by score, best first (--reverse: worst first)",
					Example:   "flopsd q reputation ranked --limit 20",
				},
				{
					RpcMethod:      "Provider",
					Use:            "provider [operator]",
					Short:          "Show the mean score of an operator's nodes and whether it earns rewards",
					Example:        "flopsd q reputation provider flops1...",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "operator"}},
				},
			},
		},
		Tx: &autocliv1.ServiceCommandDescriptor{
			Service: "flops.reputation.v1.Msg",
			RpcCommandOptions: []*autocliv1.RpcCommandOptions{
				{RpcMethod: "UpdateParams", Skip: true}, // authority (gov) only
			},
		},
	}
}
