package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	aminov1 "cosmossdk.io/api/amino"

	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/tx/signing"
	authsign "github.com/cosmos/cosmos-sdk/x/auth/signing"

	"github.com/flopsnet/flops/app/encoding"
	"github.com/flopsnet/flops/testutil/msgfill"
)

// aminoSignBytes is what a Ledger (or --sign-mode amino-json) signs for msg.
func aminoSignBytes(t *testing.T, enc encoding.Config, msg sdk.Msg) []byte {
	t.Helper()
	priv := secp256k1.GenPrivKeyFromSecret([]byte("amino"))
	b := enc.TxConfig.NewTxBuilder()
	require.NoError(t, b.SetMsgs(msg))
	require.NoError(t, b.SetSignatures(signing.SignatureV2{PubKey: priv.PubKey(), Data: &signing.SingleSignatureData{SignMode: signing.SignMode_SIGN_MODE_LEGACY_AMINO_JSON}}))
	bz, err := authsign.GetSignBytesAdapter(context.Background(), enc.TxConfig.SignModeHandler(), signing.SignMode_SIGN_MODE_LEGACY_AMINO_JSON,
		authsign.SignerData{Address: sdk.AccAddress(priv.PubKey().Address()).String(), ChainID: "flops-test-1", PubKey: priv.PubKey()}, b.GetTx())
	require.NoError(t, err)
	return bz
}

// requireEveryField checks that the amino JSON v holds every field of m under its JSON
// name, descending into nested messages and the first element of lists.
func requireEveryField(t *testing.T, path string, m protoreflect.Message, v any) {
	t.Helper()
	obj, ok := v.(map[string]any)
	require.Truef(t, ok, "%s: want a JSON object, got %T %v", path, v, v)
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		key := string(fd.Name())
		if n, _ := proto.GetExtension(fd.Options(), aminov1.E_FieldName).(string); n != "" {
			key = n
		}
		got, ok := obj[key]
		require.Truef(t, ok, "%s.%s is missing from the amino-JSON sign bytes", path, key)
		require.NotNilf(t, got, "%s.%s is null in the amino-JSON sign bytes", path, key)
		if fd.Kind() != protoreflect.MessageKind || wellKnown(fd.Message()) {
			continue
		}
		if fd.IsList() {
			list, ok := got.([]any)
			require.Truef(t, ok && len(list) == 1, "%s.%s: want a one-element list, got %v", path, key, got)
			requireEveryField(t, path+"."+key+"[0]", m.Get(fd).List().Get(0).Message(), list[0])
			continue
		}
		requireEveryField(t, path+"."+key, m.Get(fd).Message(), got)
	}
}

// wellKnown messages are encoded as JSON scalars (RFC 3339 times, nanosecond durations).
func wellKnown(md protoreflect.MessageDescriptor) bool {
	return strings.HasPrefix(string(md.FullName()), "google.protobuf.")
}

// TestAminoJSONSignBytesCoverEveryFieldOfEveryMsg is the regression test of the
// amino-JSON relay attack: the SIGN_MODE_LEGACY_AMINO_JSON sign bytes (what a Ledger
// or a multisig member signs) held `{}` for every nested message, because the signing
// resolver was handed placeholder descriptors, so a relay could change a job's price
// and region after it was signed. For every flops Msg, every field, at every depth,
// must be in the sign bytes, and the bytes must equal the legacy amino codec's JSON,
// an encoder that shares no descriptor code with x/tx.
func TestAminoJSONSignBytesCoverEveryFieldOfEveryMsg(t *testing.T) {
	enc := encoding.MustMake()
	msgs, err := msgfill.FlopsMsgs()
	require.NoError(t, err)
	require.Len(t, msgs, 37, "flops has 37 Msgs; a new one is covered here automatically")
	for _, md := range msgs {
		t.Run(string(md.Name())+"_"+string(md.ParentFile().Package()), func(t *testing.T) {
			msg, dyn, err := msgfill.Filled(md, "7")
			require.NoError(t, err)
			signBytes := aminoSignBytes(t, enc, msg)
			var doc struct {
				Msgs []struct {
					Type  string `json:"type"`
					Value any    `json:"value"`
				} `json:"msgs"`
			}
			require.NoError(t, json.Unmarshal(signBytes, &doc))
			require.Len(t, doc.Msgs, 1)
			want, _ := proto.GetExtension(md.Options(), aminov1.E_Name).(string)
			require.Equal(t, want, doc.Msgs[0].Type)
			requireEveryField(t, string(md.Name()), dyn, doc.Msgs[0].Value)

			// The legacy amino codec's JSON of the same Msg (JSONEq ignores key order).
			legacy, err := enc.Amino.MarshalJSON(msg)
			require.NoError(t, err)
			var wrapped struct {
				Value json.RawMessage `json:"value"`
			}
			require.NoError(t, json.Unmarshal(legacy, &wrapped))
			got, err := json.Marshal(doc.Msgs[0].Value)
			require.NoError(t, err)
			require.JSONEq(t, string(wrapped.Value), string(got))
		})
	}
}
