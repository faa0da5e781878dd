package chain

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cosmos/cosmos-sdk/codec"
	"github.com/cosmos/cosmos-sdk/crypto/hd"
	"github.com/cosmos/cosmos-sdk/crypto/keyring"
	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
)

// Keyring opens a keyring the way flopsd does (backend "test", "file" or "os"; dir is
// the keyring's home, e.g. ~/.flops-worker/keyring or flopsd's --home). The "file"
// backend's passphrase is asked on the terminal.
func Keyring(backend, dir string, cdc codec.Codec) (keyring.Keyring, error) {
	return keyring.New(sdk.KeyringServiceName(), backend, dir, bufio.NewReader(os.Stdin), cdc)
}

// KeyringWithPassphrase opens a keyring whose "file" backend is unlocked (or, the first
// time, created) with passphrase instead of a prompt: a daemon has no terminal.
func KeyringWithPassphrase(backend, dir, passphrase string, cdc codec.Codec) (keyring.Keyring, error) {
	if backend != keyring.BackendFile {
		return Keyring(backend, dir, cdc)
	}
	if len(passphrase) < 8 {
		return nil, errors.New("the file keyring's passphrase must have at least 8 characters")
	}
	// the backend asks once to open, twice (and confirms) to create
	answers := strings.Repeat(passphrase+"\n", 4)
	return keyring.New(sdk.KeyringServiceName(), backend, dir, bufio.NewReader(strings.NewReader(answers)), cdc)
}

// LoadKey returns the private key named name from a keyring.
func LoadKey(kr keyring.Keyring, name string) (cryptotypes.PrivKey, error) {
	rec, err := kr.Key(name)
	if err != nil {
		return nil, fmt.Errorf("key %q: %w", name, err)
	}
	local := rec.GetLocal()
	if local == nil || local.PrivKey == nil {
		return nil, fmt.Errorf("key %q is not a local key (ledger and offline keys cannot sign for the worker)", name)
	}
	priv, ok := local.PrivKey.GetCachedValue().(cryptotypes.PrivKey)
	if !ok {
		return nil, fmt.Errorf("key %q: unexpected key type %T", name, local.PrivKey.GetCachedValue())
	}
	return priv, nil
}

// NewKey creates a secp256k1 key named name in the keyring and returns its mnemonic.
func NewKey(kr keyring.Keyring, name string) (cryptotypes.PrivKey, string, error) {
	rec, mnemonic, err := kr.NewMnemonic(name, keyring.English, sdk.FullFundraiserPath, keyring.DefaultBIP39Passphrase, hd.Secp256k1)
	if err != nil {
		return nil, "", err
	}
	_ = rec
	priv, err := LoadKey(kr, name)
	return priv, mnemonic, err
}
