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
	rootCmd.SetArgs(cmd.QueryArgs(os.Args[1:]))
	if err := cmd.Explain(svrcmd.Execute(rootCmd, "FLOPSD", app.DefaultNodeHome)); err != nil {
		_, _ = fmt.Fprintln(rootCmd.OutOrStderr(), err)
		os.Exit(1)
	}
}
