package gfl

import (
	autocliv1 "cosmossdk.io/api/cosmos/autocli/v1"

	"github.com/spf13/cobra"

	"github.com/flopsnet/flops/x/gfl/client/cli"
)

// GetTxCmd returns the hand-written tx commands; autocli adds the rest to them.
func (AppModule) GetTxCmd() *cobra.Command { return cli.TxCmd() }

// AutoCLIOptions describes the CLI of every Msg and Query.
func (AppModule) AutoCLIOptions() *autocliv1.ModuleOptions {
	id := func(field string) []*autocliv1.PositionalArgDescriptor {
		return []*autocliv1.PositionalArgDescriptor{{ProtoField: field}}
	}
	return &autocliv1.ModuleOptions{
		Query: &autocliv1.ServiceCommandDescriptor{
			Service: "flops.gfl.v1.Query",
			RpcCommandOptions: []*autocliv1.RpcCommandOptions{
				{RpcMethod: "Params", Use: "params", Short: "Show the x/gfl parameters (GPU classes, workload weights, challenge settings)"},
				{RpcMethod: "Node", Use: "node <node-id>", Short: "Show a node", PositionalArgs: id("node_id")},
				{RpcMethod: "Nodes", Use: "nodes", Short: "List every node"},
				{RpcMethod: "NodesByOperator", Use: "nodes-by-operator <operator>", Short: "List an operator's nodes", PositionalArgs: id("operator")},
				{RpcMethod: "NodesByClass", Use: "nodes-by-class <gpu-class>", Short: "List the nodes of a GPU class", Example: "flopsd q gfl nodes-by-class A100-40GB", PositionalArgs: id("gpu_class")},
				{RpcMethod: "NodesByStatus", Use: "nodes-by-status <status>", Short: "List the nodes in a status", Example: "flopsd q gfl nodes-by-status NODE_STATUS_ACTIVE", PositionalArgs: id("status")},
				{RpcMethod: "Challenge", Use: "challenge <challenge-id>", Short: "Show an open PoCP challenge", PositionalArgs: id("challenge_id")},
				{RpcMethod: "ChallengeRound", Use: "challenge-round <round-id>", Short: "Show an operator's PoCP challenge round: its members are measured together", PositionalArgs: id("round_id")},
				{RpcMethod: "PendingRounds", Use: "pending-rounds", Short: "List the drand rounds the chain awaits (bound to recent blocks, not on chain yet): what a beacon relay submits"},
				{RpcMethod: "Beacon", Use: "beacon <height>", Short: "Show the beacon's value for a committed block (a drand round's randomness, a fallback or the block hash) that the block's draws derive from", PositionalArgs: id("height")},
				{RpcMethod: "OpenChallenges", Use: "open-challenges <operator>", Short: "List the open challenges of an operator's nodes", PositionalArgs: id("operator")},
				{RpcMethod: "NodePower", Use: "node-power <node-id>", Short: "Show a node's GFL index, median, availability and power per workload class", PositionalArgs: id("node_id")},
				{RpcMethod: "NodeStats", Use: "node-stats <node-id>", Short: "Show a node's challenge results in the epoch in progress", PositionalArgs: id("node_id")},
				{RpcMethod: "NetworkPower", Use: "network-power", Short: "Show the network's GFL index per workload class and the rebalance progress"},
			},
		},
		Tx: &autocliv1.ServiceCommandDescriptor{
			Service:              "flops.gfl.v1.Msg",
			EnhanceCustomCommand: true,
			RpcCommandOptions: []*autocliv1.RpcCommandOptions{
				{RpcMethod: "UpdateParams", Skip: true}, // authority (gov) only
				{RpcMethod: "RegisterNode", Skip: true}, // client/cli: reads a spec file
				{RpcMethod: "UpdateNode", Skip: true},   // client/cli: reads a spec file
				{RpcMethod: "DeactivateNode", Use: "deactivate-node <node-id>", Short: "Take a node off the market (its GFL is burned, its collateral unlocked)", Example: "flopsd tx gfl deactivate-node 1 --from provider", PositionalArgs: id("node_id")},
				{RpcMethod: "ReactivateNode", Use: "reactivate-node <node-id>", Short: "Put an inactive node back on the market", PositionalArgs: id("node_id")},
				{RpcMethod: "ApproveNode", Use: "approve-node <node-id>", Short: "Admit a pending node (GOVERNED admission): submitted as a governance proposal", PositionalArgs: id("node_id"), GovProposal: true},
				{RpcMethod: "CommitChallenge", Use: "commit-challenge <challenge-id> <root-hex>", Short: "Commit the Merkle root of a PoCP answer (flops-worker does this)", PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "challenge_id"}, {ProtoField: "root"}}},
				{RpcMethod: "SubmitBeacon", Use: "submit-beacon <round> <signature-hex>", Short: "Put a drand round on chain (flops-worker's beacon relay does this); the signature decides, not the submitter", Example: "flopsd tx gfl submit-beacon 1000 b44679b9...5e39 --from relay", PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "round"}, {ProtoField: "signature"}}},
				{RpcMethod: "RevealChallenge", Use: "reveal-challenge <challenge-id>", Short: "Open the sampled chunks of a PoCP answer, as JSON in --proofs (flops-worker does this)", PositionalArgs: id("challenge_id")},
			},
		},
	}
}
