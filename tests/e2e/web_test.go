package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flopsnet/flops/cmd/flops-demo/demo"
)

// checkWeb drives the dashboard the demo serves in headless Chromium (web/test/
// browser.test.mjs): a client submits a job from the form and sees it settle at the
// chain's price, a bad spec shows its field's error and sends nothing, the provider view
// shows the node, its verified power and the payment, the network view's GFL is the
// chain's, and the page fits a phone's width. The screenshots and timings go to
// web/test-results/. It needs the dashboard built (make web) and Debian's chromium; under
// FLOPS_CI (make test in .ci/run) their absence fails the test, elsewhere it skips this
// part.
func checkWeb(t *testing.T, rpc string) func(context.Context, demo.Summary) error {
	return func(ctx context.Context, s demo.Summary) error {
		root, err := filepath.Abs("../..")
		if err != nil {
			return err
		}
		web := filepath.Join(root, "web")
		script := filepath.Join(web, "test", "browser.test.mjs")
		browser := os.Getenv("CHROMIUM")
		if browser == "" {
			browser = "/usr/bin/chromium"
		}
		var missing []string
		if s.WebURL == "" {
			missing = append(missing, "the dashboard's build (make web)")
		}
		if _, err := os.Stat(filepath.Join(web, "node_modules", "playwright-core")); err != nil {
			missing = append(missing, "web/node_modules (make web)")
		}
		if _, err := os.Stat(browser); err != nil {
			missing = append(missing, browser+" (apt-get install chromium)")
		}
		node, err := exec.LookPath("node")
		if err != nil {
			missing = append(missing, "node")
		}
		if !s.ProcessRuntime && os.Getenv("FLOPS_CI") != "" {
			missing = append(missing, "bubblewrap (the demo's PROCESS jobs, whose live log the test follows)")
		}
		if len(missing) > 0 {
			if os.Getenv("FLOPS_CI") != "" {
				return fmt.Errorf("the dashboard's browser test cannot run: no %s", strings.Join(missing, ", "))
			}
			t.Logf("the dashboard's browser test is skipped: no %s", strings.Join(missing, ", "))
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		out := filepath.Join(web, "test-results")
		cmd := exec.CommandContext(ctx, node, "--test", "--test-force-exit", "--test-reporter=spec", script)
		cmd.Dir = web
		cmd.Env = append(os.Environ(), "WEB_URL="+s.WebURL, "RPC="+rpc, "OUT="+out, "CHROMIUM="+browser,
			fmt.Sprintf("PROCESS_JOBS=%t", s.ProcessRuntime))
		res, err := cmd.CombinedOutput()
		t.Logf("the dashboard in Chromium:\n%s", res)
		if err != nil {
			return fmt.Errorf("the dashboard's browser test: %w", err)
		}
		if !strings.Contains(string(res), "ℹ fail 0") || strings.Contains(string(res), "ℹ pass 0") {
			return fmt.Errorf("the dashboard's browser test did not pass")
		}
		for _, png := range []string{"client.png", "provider.png", "network.png"} {
			if _, err := os.Stat(filepath.Join(out, png)); err != nil {
				return fmt.Errorf("the dashboard's browser test left no %s: %w", png, err)
			}
		}
		timings, _ := os.ReadFile(filepath.Join(out, "timings.json"))
		t.Logf("screenshots in %s; timings %s", out, timings)
		return nil
	}
}
