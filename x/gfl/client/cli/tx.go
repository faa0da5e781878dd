// Package cli holds x/gfl's hand-written commands: the ones whose input is a nested spec
// read from a YAML or JSON file. Every other command comes from autocli (autocli.go).
package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"
	"github.com/cosmos/cosmos-sdk/client/tx"

	"github.com/flopsnet/flops/internal/clicheck"
	"github.com/flopsnet/flops/internal/specfile"
	"github.com/flopsnet/flops/x/gfl/types"
)

// TxCmd is `flopsd tx gfl`; autocli adds the generated commands to it.
func TxCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:                        types.ModuleName,
		Short:                      "Transactions of the compute registry and PoCP (x/gfl)",
		DisableFlagParsing:         false,
		SuggestionsMinimumDistance: 2,
		RunE:                       client.ValidateCmd,
	}
	cmd.AddCommand(registerNodeCmd(), updateNodeCmd())
	return cmd
}

func registerNodeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "register-node <spec.yaml|->",
		Short: "Register a GPU machine from a node spec (YAML or JSON); flops-worker does this itself",
		Long: `Register a node. The spec lists the GPUs as NVML reports them (model, uuid, memory_mib,
compute_capability, tensor_cores, mig_capable, power_limit_watts), the region, the
worker's HTTP endpoint, the workload classes accepted, the ask per GPU-hour and the
claimed power in GFLOP/s. The operator's collateral must cover every GPU.`,
		Example: "flopsd tx gfl register-node examples/node.yaml --from provider",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			clientCtx, err := client.GetClientTxContext(cmd)
			if err != nil {
				return err
			}
			var spec types.NodeSpec
			if err := specfile.Read(clientCtx.Codec, args[0], &spec); err != nil {
				return err
			}
			if err := checkNodeSpec(clientCtx, args[0], spec); err != nil {
				return err
			}
			msg := &types.MsgRegisterNode{Operator: clientCtx.GetFromAddress().String(), Spec: spec}
			return tx.GenerateOrBroadcastTxCLI(clientCtx, cmd.Flags(), msg)
		},
	}
	flags.AddTxFlagsToCmd(cmd)
	return cmd
}

func updateNodeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "update-node <node-id> <spec.yaml|->",
		Short:   "Replace a node's spec (GPUs, region, endpoint, workloads, ask, claimed power)",
		Example: "flopsd tx gfl update-node 1 examples/node.yaml --from provider",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			clientCtx, err := client.GetClientTxContext(cmd)
			if err != nil {
				return err
			}
			id, err := strconv.ParseUint(args[0], 10, 64)
			if err != nil {
				return fmt.Errorf("node id %q: %w", args[0], err)
			}
			var spec types.NodeSpec
			if err := specfile.Read(clientCtx.Codec, args[1], &spec); err != nil {
				return err
			}
			if err := checkNodeSpec(clientCtx, args[1], spec); err != nil {
				return err
			}
			msg := &types.MsgUpdateNode{Operator: clientCtx.GetFromAddress().String(), NodeId: id, Spec: spec}
			return tx.GenerateOrBroadcastTxCLI(clientCtx, cmd.Flags(), msg)
		},
	}
	flags.AddTxFlagsToCmd(cmd)
	return cmd
}

// checkNodeSpec runs the chain's NodeSpec.Validate on the client, against the chain's params
// (the defaults with --offline), before the spec is signed.
func checkNodeSpec(clientCtx client.Context, file string, spec types.NodeSpec) error {
	p := types.DefaultParams()
	if clicheck.Online(clientCtx) {
		res, err := types.NewQueryClient(clientCtx).Params(clientCtx.CmdContext, &types.QueryParamsRequest{})
		if err != nil {
			return clicheck.Unreachable(clientCtx, err)
		}
		p = res.Params
	}
	if _, err := spec.Validate(p); err != nil {
		return clicheck.Invalid(file, err)
	}
	return nil
}
