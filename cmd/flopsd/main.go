// Command flopsd is the flops node and CLI: it runs a validator or full node, manages
// keys and genesis, and sends transactions and queries to every module.
package main

import (
	"fmt"
	"os"

	svrcmd "github.com/cosmos/cosmos-sdk/server/cmd"

	"github.com/flopsnet/flops/app"
	"github.com/flopsnet/flops/cmd/flopsd/cmd"
)

func main() {
	rootCmd := cmd.NewRootCmd()
	args := cmd.QueryArgs(os.Args[1:])
	rootCmd.SetArgs(args)
	ran, _, _ := rootCmd.Find(args)
	if err := cmd.Explain(svrcmd.Execute(rootCmd, "FLOPSD", app.DefaultNodeHome), ran); err != nil {
		_, _ = fmt.Fprintln(rootCmd.OutOrStderr(), "Error:", err.Error())
		if ran != nil && ran != rootCmd && cmd.IsUsageError(err) {
			_, _ = fmt.Fprintf(rootCmd.OutOrStderr(), "See '%s --help'.\n", ran.CommandPath())
		}
		os.Exit(1)
	}
}
