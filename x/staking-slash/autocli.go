package stakingslash

import (
	autocliv1 "cosmossdk.io/api/cosmos/autocli/v1"
)

// AutoCLIOptions describes the CLI of every Msg and Query.
func (AppModule) AutoCLIOptions() *autocliv1.ModuleOptions {
	return &autocliv1.ModuleOptions{
		Query: &autocliv1.ServiceCommandDescriptor{
			Service: "flops.stakingslash.v1.Query",
			RpcCommandOptions: []*autocliv1.RpcCommandOptions{
				{RpcMethod: "Params", Use: "params", Short: "Show the x/stakingslash parameters"},
				{
					RpcMethod:      "Collateral",
					Use:            "collateral [provider]",
					Short:          "Show a provider's collateral, unbonding sum, requirement, exposure cap and jail status",
					Example:        "flopsd q stakingslash collateral flops1...",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "provider"}},
				},
				{
					RpcMethod:      "Unbondings",
					Use:            "unbondings [provider]",
					Short:          "List a provider's open unbonding entries",
					Example:        "flopsd q stakingslash unbondings flops1... --limit 10",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "provider"}},
				},
				{
					RpcMethod:      "SlashHistory",
					Use:            "slash-history [provider]",
					Short:          "List a provider's slashes, oldest first",
					Example:        "flopsd q stakingslash slash-history flops1... --limit 10",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "provider"}},
				},
			},
		},
		Tx: &autocliv1.ServiceCommandDescriptor{
			Service: "flops.stakingslash.v1.Msg",
			RpcCommandOptions: []*autocliv1.RpcCommandOptions{
				{RpcMethod: "UpdateParams", Skip: true}, // authority (gov) only
				{
					RpcMethod:      "Bond",
					Use:            "bond [amount]",
					Short:          "Bond collateral from the --from account",
					Example:        "flopsd tx stakingslash bond 100000000udps --from provider",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "amount"}},
				},
				{
					RpcMethod:      "Unbond",
					Use:            "unbond [amount]",
					Short:          "Start unbonding collateral; it stays slashable until the unbonding time has passed",
					Example:        "flopsd tx stakingslash unbond 50000000udps --from provider",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "amount"}},
				},
				{
					RpcMethod: "Unjail",
					Use:       "unjail",
					Short:     "Unjail the --from provider once its jail time is over",
					Example:   "flopsd tx stakingslash unjail --from provider",
				},
			},
		},
	}
}
