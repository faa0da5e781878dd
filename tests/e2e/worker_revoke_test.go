//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/worker/outputs"
	markettypes "github.com/flopsnet/flops/x/market/types"
)

// checkRevokeSessions: a session key a dashboard read tk's outputs with leaks; the owner
// runs `flops-worker revoke-sessions` with the tasks (the binary, its key from the test
// keyring), which finds their providers on chain and sends each the owner's revocation.
// The real workers refuse the leaked session from then on and take a new one.
func checkRevokeSessions(t *testing.T, wc *workerChain, tasks []markettypes.Task) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner := sdk.AccAddress(wc.keys["client"].PubKey().Address()).String()
	tk := tasks[0]
	base := baseURL(t, tk.OutputUri)
	u, err := url.Parse(base)
	require.NoError(t, err)
	read := func(session cryptotypes.PrivKey, d outputs.Delegation) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, tk.OutputUri, nil)
		require.NoError(t, err)
		require.NoError(t, outputs.SignDelegated(req, session, owner, d, time.Now()))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Error
	}
	leaked := secp256k1.GenPrivKey()
	stolen, err := outputs.Delegate(wc.keys["client"], leaked, owner, u.Host, time.Now(), time.Now().Add(8*time.Hour)) // issued in the revocation's second, maybe
	require.NoError(t, err)
	status, msg := read(leaked, stolen)
	require.Equal(t, http.StatusOK, status, "the session reads task %d's outputs: %s", tk.Id, msg)

	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	args := []string{"revoke-sessions", "--key", "client", "--keyring-dir", wc.keyDir, "--keyring-backend", "test", "--grpc", wc.grpc}
	for _, x := range tasks {
		args = append(args, strconv.FormatUint(x.Id, 10))
	}
	out, err := exec.CommandContext(ctx, filepath.Join(binaries(t, root), "flops-worker"), args...).CombinedOutput() //nolint:gosec // our binary
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), base+": sessions issued before ", string(out))

	status, msg = read(leaked, stolen)
	require.Equal(t, http.StatusUnauthorized, status, msg)
	require.Contains(t, msg, "ended its sessions here")
	fresh := secp256k1.GenPrivKey()
	issued := outputs.RevokeAllUntil(time.Now()) // no earlier than the revocation's time
	d, err := outputs.Delegate(wc.keys["client"], fresh, owner, u.Host, issued, issued.Add(8*time.Hour))
	require.NoError(t, err)
	status, msg = read(fresh, d)
	require.Equal(t, http.StatusOK, status, "a session delegated after the revocation reads: %s", msg)
	t.Logf("revoke-sessions:\n%s", strings.TrimSpace(string(out)))
}
