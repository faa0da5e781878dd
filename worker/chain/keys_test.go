package chain_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flopsnet/flops/app/encoding"
	"github.com/flopsnet/flops/worker/chain"
)

// The worker's default keyring is encrypted: the key opens with its passphrase only, and
// no file of the keyring holds the private key in the clear.
func TestFileKeyringIsEncrypted(t *testing.T) {
	enc, err := encoding.Make()
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "keyring")
	kr, err := chain.KeyringWithPassphrase("file", dir, "correct horse battery", enc.Codec)
	require.NoError(t, err)
	priv, _, err := chain.NewKey(kr, "provider")
	require.NoError(t, err)

	kr, err = chain.KeyringWithPassphrase("file", dir, "correct horse battery", enc.Codec)
	require.NoError(t, err)
	again, err := chain.LoadKey(kr, "provider")
	require.NoError(t, err)
	require.True(t, priv.Equals(again))

	kr, err = chain.KeyringWithPassphrase("file", dir, "wrong passphrase", enc.Codec)
	if err == nil {
		_, err = chain.LoadKey(kr, "provider")
	}
	require.Error(t, err, "a wrong passphrase does not open the key")
	_, err = chain.KeyringWithPassphrase("file", dir, "short", enc.Codec)
	require.Error(t, err)

	raw := string(priv.Bytes())
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() {
			return nil
		}
		bz, err := os.ReadFile(p)
		require.NoError(t, err)
		require.False(t, strings.Contains(string(bz), raw), "%s holds the private key in the clear", p)
		return nil
	}))
}
