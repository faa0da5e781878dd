package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	svrcmd "github.com/cosmos/cosmos-sdk/server/cmd"
)

// validateGenesis runs flopsd genesis validate on home's genesis; its output and error.
func validateGenesis(t *testing.T, home string) (string, error) {
	t.Helper()
	return genesisCmd(t, home, "validate")
}

// genesisCmd runs flopsd genesis <sub> on home; its output and error.
func genesisCmd(t *testing.T, home, sub string) (string, error) {
	t.Helper()
	root := NewRootCmd()
	var out strings.Builder
	root.SetOut(&out)
	root.SetErr(&strings.Builder{})
	root.SetArgs([]string{"genesis", sub, "--home", home})
	err := svrcmd.Execute(root, "FLOPSD", home)
	return out.String(), err
}

// flopsd genesis validate refuses a genesis whose work reward cap is not below the
// market's take, which each module's own check passes and InitChain refuses (so a
// validator finds out before the launch, not at it).
func TestGenesisValidateChecksRulesAcrossModules(t *testing.T) {
	home := initHome(t)
	out, err := validateGenesis(t, home)
	require.NoError(t, err)
	require.Contains(t, out, "is a valid genesis file")

	path := filepath.Join(home, "config", "genesis.json")
	bz, err := os.ReadFile(path)
	require.NoError(t, err)
	const def = `"work_reward_cap_ppm": "40000"`
	require.Contains(t, string(bz), def)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(bz), def, `"work_reward_cap_ppm": "50000"`, 1)), 0o600))
	out, err = validateGenesis(t, home)
	require.ErrorContains(t, err, "work_reward_cap_ppm 50000 is not below x/market's take_rate_ppm 50000")
	require.NotContains(t, out, "valid genesis file")
	// collect-gentxs writes no genesis the chain would refuse at its launch
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	_, err = genesisCmd(t, home, "collect-gentxs")
	require.ErrorContains(t, err, "work_reward_cap_ppm 50000 is not below x/market's take_rate_ppm 50000")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, before, after, "the genesis is left as it was")

	// the market in another denom than the chain's
	var gen map[string]any
	require.NoError(t, json.Unmarshal(bz, &gen))
	params := gen["app_state"].(map[string]any)["market"].(map[string]any)["params"].(map[string]any)
	params["denom"] = "uatom"
	for _, c := range []string{"bid_deposit", "challenge_bond"} {
		params[c].(map[string]any)["denom"] = "uatom"
	}
	bz, err = json.Marshal(gen)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, bz, 0o600))
	_, err = validateGenesis(t, home)
	require.ErrorContains(t, err, `must both be the chain's bond denom "udps"`)
}
