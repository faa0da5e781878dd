//go:build unix

// Command flops-demo runs the whole market on one machine (`make demo`): a local chain,
// two providers running flops-worker, and a client whose jobs are assigned, auctioned and
// pooled, executed, verified and paid. See cmd/flops-demo/demo.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/flopsnet/flops/cmd/flops-demo/demo"
)

func main() {
	var o demo.Options
	root, _ := os.Getwd()
	flag.StringVar(&o.Root, "root", root, "the repository (scripts/localnet.sh, build/)")
	flag.StringVar(&o.Home, "home", "", "the demo's directory, wiped at the start (default <root>/.demo)")
	flag.IntVar(&o.Validators, "validators", 1, "validators in the localnet (4: kill one with -kill-validator)")
	flag.IntVar(&o.KillValidator, "kill-validator", 0, "kill this validator (1..validators-1) once the jobs are submitted")
	flag.IntVar(&o.CrashWorker, "crash-worker", 0, "kill this provider's worker (1 or 2, SIGKILL) with a task in flight, then start it again")
	flag.BoolVar(&o.CrashChain, "crash-chain", false, "kill every validator (SIGKILL) once the jobs are submitted, then start them again")
	flag.IntVar(&o.PortOffset, "port-offset", 0, "shift every port by this much")
	flag.DurationVar(&o.Epoch, "epoch", 20*time.Second, "epoch length")
	flag.IntVar(&o.ChallengeWindowBlocks, "challenge-window", 3, "blocks an owner has to challenge a result before it settles (30 or more to try the dashboard's Challenge button by hand)")
	flag.BoolVar(&o.Headless, "headless", false, "stop everything once the scenario is over")
	flag.Parse()
	if abs, err := filepath.Abs(o.Root); err == nil {
		o.Root = abs
	}
	// a closed terminal (SIGHUP) stops it as Ctrl-C does: the chain and workers with it
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if _, err := demo.Run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		stop()
		os.Exit(1) //nolint:gocritic // deferred stop already ran
	}
}
