// Package cli holds x/market's hand-written commands: submit-job reads a job spec from a
// YAML or JSON file. Every other command comes from autocli (autocli.go).
package cli

import (
	"github.com/spf13/cobra"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"
	"github.com/cosmos/cosmos-sdk/client/tx"

	"github.com/flopsnet/flops/internal/clicheck"
	"github.com/flopsnet/flops/internal/specfile"
	"github.com/flopsnet/flops/x/market/types"
)

// TxCmd is `flopsd tx market`; autocli adds the generated commands to it.
func TxCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:                        types.ModuleName,
		Short:                      "Transactions of the compute market (x/market)",
		SuggestionsMinimumDistance: 2,
		RunE:                       client.ValidateCmd,
	}
	cmd.AddCommand(submitJobCmd(), createPoolCmd())
	return cmd
}

func submitJobCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "submit-job <job.yaml|->",
		Short: "Submit a job from a job spec (YAML or JSON); its whole budget moves into escrow",
		Long: `Submit a job. The spec gives the workload class, the runtime (BUILTIN, PROCESS or
CONTAINER) and its image or command, inputs as (uri, sha256, path), node requirements,
the number of tasks and replicas, the verification class, the max price per task, the
max duration of a task, the deadline, a priority tip and the allocation mode (ASSIGN or
AUCTION). The escrow is tasks x replicas x (max price + tip) + verification budget; what
is not spent is refunded. See examples/job.yaml.`,
		Example: "flopsd tx market submit-job examples/job.yaml --from client",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			clientCtx, err := client.GetClientTxContext(cmd)
			if err != nil {
				return err
			}
			var spec types.JobSpec
			if err := specfile.Read(clientCtx.Codec, args[0], &spec); err != nil {
				return err
			}
			p, err := params(clientCtx)
			if err != nil {
				return err
			}
			now, err := clicheck.ChainTime(clientCtx)
			if err != nil {
				return err
			}
			if err := spec.Validate(p, now); err != nil {
				return clicheck.Invalid(args[0], err)
			}
			msg := &types.MsgSubmitJob{Owner: clientCtx.GetFromAddress().String(), Spec: spec}
			return tx.GenerateOrBroadcastTxCLI(clientCtx, cmd.Flags(), msg)
		},
	}
	flags.AddTxFlagsToCmd(cmd)
	return cmd
}

func createPoolCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "create-pool <pool.yaml|->",
		Short: "Open a pool for continuous inference from a pool spec (YAML or JSON); its budget moves into escrow",
		Long: `Open a pool. The spec gives the workload class, the runtime and its image or command,
node requirements, the verification class (BUILTIN_GEMM or NONE), the price of one
verified unit, the budget and the most member nodes. Members race for the units you post
with submit-units; each verified unit is credited to the first member whose commitment
claimed it. See examples/pool.yaml.`,
		Example: "flopsd tx market create-pool examples/pool.yaml --from client",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			clientCtx, err := client.GetClientTxContext(cmd)
			if err != nil {
				return err
			}
			var spec types.PoolSpec
			if err := specfile.Read(clientCtx.Codec, args[0], &spec); err != nil {
				return err
			}
			p, err := params(clientCtx)
			if err != nil {
				return err
			}
			if err := spec.Validate(p); err != nil {
				return clicheck.Invalid(args[0], err)
			}
			msg := &types.MsgCreatePool{Owner: clientCtx.GetFromAddress().String(), Spec: spec}
			return tx.GenerateOrBroadcastTxCLI(clientCtx, cmd.Flags(), msg)
		},
	}
	flags.AddTxFlagsToCmd(cmd)
	return cmd
}

// params are the chain's market params, or with --offline the defaults, to check a spec
// against before it is signed (the chain runs the same Validate).
func params(clientCtx client.Context) (types.Params, error) {
	if !clicheck.Online(clientCtx) {
		return types.DefaultParams(), nil
	}
	res, err := types.NewQueryClient(clientCtx).Params(clientCtx.CmdContext, &types.QueryParamsRequest{})
	if err != nil {
		return types.Params{}, clicheck.Unreachable(clientCtx, err)
	}
	return res.Params, nil
}
