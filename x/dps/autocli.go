package dps

import (
	autocliv1 "cosmossdk.io/api/cosmos/autocli/v1"
)

// AutoCLIOptions describes the CLI of every Msg and Query.
func (AppModule) AutoCLIOptions() *autocliv1.ModuleOptions {
	return &autocliv1.ModuleOptions{
		Query: &autocliv1.ServiceCommandDescriptor{
			Service: "flops.dps.v1.Query",
			RpcCommandOptions: []*autocliv1.RpcCommandOptions{
				{RpcMethod: "Params", Use: "params", Short: "Show the x/dps parameters"},
				{RpcMethod: "Era", Use: "era", Short: "Show the halving era, its rate and when the next halving comes (by time and by GFL)", Example: "flopsd q dps era"},
				{RpcMethod: "Pool", Use: "pool", Short: "Show the reward pool's balance and what the distribution in progress still owes", Example: "flopsd q dps pool"},
				{RpcMethod: "LatestEmission", Use: "latest-emission", Short: "Show the latest finished distribution (E, its split, paid, remainder)", Example: "flopsd q dps latest-emission"},
				{
					RpcMethod: "Emission", Use: "emission <epoch>", Short: "Show the finished distribution of an epoch",
					Example:        "flopsd q dps emission 12",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "epoch"}},
				},
				{RpcMethod: "Emissions", Use: "emissions", Short: "List the finished distributions by epoch", Example: "flopsd q dps emissions --reverse --limit 10"},
				{
					RpcMethod: "ProviderRewards", Use: "rewards <provider>", Short: "List a provider's rewards by epoch (availability and work)",
					Example:        "flopsd q dps rewards flops1... --reverse",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "provider"}},
				},
				{RpcMethod: "Distribution", Use: "distribution", Short: "Show the distribution in progress, if any, and the queued epochs", Example: "flopsd q dps distribution"},
				{
					RpcMethod: "VerifiedWork", Use: "work <provider> <epoch>", Short: "Show a provider's verified work in a reward epoch, per workload class",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "provider"}, {ProtoField: "epoch"}},
					Example:        "flopsd q dps work flops1... 3",
				},
			},
		},
		Tx: &autocliv1.ServiceCommandDescriptor{
			Service: "flops.dps.v1.Msg",
			RpcCommandOptions: []*autocliv1.RpcCommandOptions{
				{RpcMethod: "UpdateParams", Skip: true}, // authority (gov) only
			},
		},
	}
}
