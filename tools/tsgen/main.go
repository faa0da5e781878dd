// Command tsgen writes the parts of the TypeScript client (clients/ts) that ts-proto cannot
// know: the amino-JSON schema of every flops Msg, read from the proto registry the chain
// signs with (amino.name, amino.field_name, amino.dont_omitempty, amino.encoding,
// cosmos_proto.scalar and gogoproto.customtype, the options x/tx's aminojson encoder reads),
// the list of Msgs for the CosmJS Registry, and test vectors: Msgs in protobuf bytes with
// the amino JSON the chain's own SIGN_MODE_LEGACY_AMINO_JSON handler writes for them.
//
//	go run ./tools/tsgen clients/ts
//
// scripts/protocgen.sh runs it after ts-proto; make proto-check fails when its output drifts.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	gogoproto "github.com/cosmos/gogoproto/proto"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	aminov1 "cosmossdk.io/api/amino"
	cosmosprotov1 "github.com/cosmos/cosmos-proto"

	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/tx/signing"
	authsign "github.com/cosmos/cosmos-sdk/x/auth/signing"

	"github.com/flopsnet/flops/app/encoding"
	"github.com/flopsnet/flops/testutil/msgfill"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: tsgen CLIENT_DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "tsgen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	mds, err := msgfill.FlopsMsgs()
	if err != nil {
		return err
	}
	schema := map[string][]field{}
	for _, md := range mds {
		if err := walk(md, schema); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "schema.ts"), []byte(schemaTS(mds, schema)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "msgs.ts"), []byte(msgsTS(mds)), 0o644); err != nil {
		return err
	}
	vecs, err := vectors(mds)
	if err != nil {
		return err
	}
	bz, err := json.MarshalIndent(vecs, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "test", "vectors.json"), append(bz, '\n'), 0o644)
}

// field is one field's amino-JSON encoding, in the short keys schema.ts uses.
type field struct {
	Name     string // proto name
	Amino    string // amino.field_name or the proto name
	TS       string // ts-proto's property name
	Kind     string
	Repeated bool
	Message  string // full name of a message field's type
	Keep     bool   // amino.dont_omitempty
	Encoding string // legacy_coins, null_slice_as_empty, int (cosmos.Int), dec (cosmos.Dec as LegacyDec)
}

func walk(md protoreflect.MessageDescriptor, schema map[string][]field) error {
	name := string(md.FullName())
	if _, ok := schema[name]; ok {
		return nil
	}
	if md.Options() != nil {
		if enc, _ := proto.GetExtension(md.Options(), aminov1.E_MessageEncoding).(string); enc != "" {
			return fmt.Errorf("%s: amino.message_encoding %q is not supported by the client", name, enc)
		}
	}
	schema[name] = nil // mark before descending (recursive types)
	var out []field
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.ContainingOneof() != nil || fd.IsMap() {
			return fmt.Errorf("%s.%s: oneofs and maps are not supported by the client", name, fd.Name())
		}
		f := field{Name: string(fd.Name()), Amino: string(fd.Name()), TS: tsName(string(fd.Name())), Repeated: fd.IsList()}
		opts := fd.Options()
		if n, _ := proto.GetExtension(opts, aminov1.E_FieldName).(string); n != "" {
			f.Amino = n
		}
		f.Keep, _ = proto.GetExtension(opts, aminov1.E_DontOmitempty).(bool)
		f.Encoding, _ = proto.GetExtension(opts, aminov1.E_Encoding).(string)
		switch f.Encoding {
		case "", "legacy_coins", "null_slice_as_empty":
		default:
			return fmt.Errorf("%s.%s: amino.encoding %q is not supported by the client", name, fd.Name(), f.Encoding)
		}
		if f.Encoding == "" && fd.Kind() == protoreflect.StringKind {
			switch scalar, _ := proto.GetExtension(opts, cosmosprotov1.E_Scalar).(string); scalar {
			case "cosmos.Int":
				f.Encoding = "int"
			case "cosmos.Dec":
				// x/tx formats a cosmos.Dec only when its Go type is LegacyDec
				if ct, _ := proto.GetExtension(opts, customType).(string); ct == "cosmossdk.io/math.LegacyDec" {
					f.Encoding = "dec"
				}
			}
		}
		switch fd.Kind() {
		case protoreflect.MessageKind:
			switch fd.Message().FullName() {
			case "google.protobuf.Timestamp":
				f.Kind = "timestamp"
			case "google.protobuf.Duration":
				f.Kind = "duration"
			case "google.protobuf.Any":
				return fmt.Errorf("%s.%s: Any is not supported by the client", name, fd.Name())
			default:
				f.Kind = "message"
				f.Message = string(fd.Message().FullName())
				if err := walk(fd.Message(), schema); err != nil {
					return err
				}
			}
		case protoreflect.StringKind:
			f.Kind = "string"
		case protoreflect.BoolKind:
			f.Kind = "bool"
		case protoreflect.BytesKind:
			f.Kind = "bytes"
		case protoreflect.EnumKind:
			f.Kind = "enum"
		case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
			f.Kind = "int32"
		case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
			f.Kind = "uint32"
		case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			f.Kind = "int64"
		case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
			f.Kind = "uint64"
		default:
			return fmt.Errorf("%s.%s: kind %s is not supported by the client", name, fd.Name(), fd.Kind())
		}
		out = append(out, f)
	}
	schema[name] = out
	return nil
}

// customType is gogoproto.customtype as x/tx's aminojson encoder reads it (the extension it
// registers in the global types).
var customType = func() protoreflect.ExtensionType {
	xt, err := protoregistry.GlobalTypes.FindExtensionByName("gogoproto.customtype")
	if err != nil {
		panic(fmt.Errorf("gogoproto.customtype: %w", err))
	}
	return xt
}()

// tsName is ts-proto's property name for a snake_case proto field (its snakeToCamel).
func tsName(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

const header = "// Code generated by tools/tsgen from the chain's proto registry. DO NOT EDIT.\n\n"

func schemaTS(mds []protoreflect.MessageDescriptor, schema map[string][]field) string {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString(`/** FieldSchema is one field's amino-JSON encoding. */
export interface FieldSchema {
  /** proto field name */
  n: string;
  /** amino JSON key (amino.field_name, else the proto name) */
  a: string;
  /** ts-proto property */
  t: string;
  k: "string" | "bool" | "bytes" | "enum" | "int32" | "uint32" | "int64" | "uint64" | "message" | "timestamp" | "duration";
  /** repeated */
  r?: boolean;
  /** message type (k = "message") */
  m?: string;
  /** amino.dont_omitempty: written even when empty */
  keep?: boolean;
  /** amino.encoding, or "int"/"dec" for cosmos.Int and cosmos.Dec (LegacyDec) strings */
  e?: "legacy_coins" | "null_slice_as_empty" | "int" | "dec";
}

/** messages: every message type a flops Msg holds, by full proto name. */
export const messages: Record<string, { f: FieldSchema[] }> = {
`)
	names := make([]string, 0, len(schema))
	for n := range schema {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  %q: {\n    f: [\n", n)
		for _, f := range schema[n] {
			fmt.Fprintf(&b, "      { n: %q, a: %q, t: %q, k: %q", f.Name, f.Amino, f.TS, f.Kind)
			if f.Repeated {
				b.WriteString(", r: true")
			}
			if f.Message != "" {
				fmt.Fprintf(&b, ", m: %q", f.Message)
			}
			if f.Keep {
				b.WriteString(", keep: true")
			}
			if f.Encoding != "" {
				fmt.Fprintf(&b, ", e: %q", f.Encoding)
			}
			b.WriteString(" },\n")
		}
		b.WriteString("    ],\n  },\n")
	}
	b.WriteString("};\n\n/** msgs: every flops Msg with its amino name and signer field. */\nexport const msgs: { typeUrl: string; aminoName: string; signer: string }[] = [\n")
	for _, md := range mds {
		fmt.Fprintf(&b, "  { typeUrl: %q, aminoName: %q, signer: %q },\n", "/"+md.FullName(), aminoName(md), tsName(msgfill.Signer(md)))
	}
	b.WriteString("];\n")
	return b.String()
}

func aminoName(md protoreflect.MessageDescriptor) string {
	n, _ := proto.GetExtension(md.Options(), aminov1.E_Name).(string)
	return n
}

// alias names a Msg's import uniquely: market_MsgSubmitJob.
func alias(md protoreflect.MessageDescriptor) string {
	pkg := strings.Split(string(md.ParentFile().Package()), ".") // flops.market.v1
	return pkg[1] + "_" + string(md.Name())
}

func msgsTS(mds []protoreflect.MessageDescriptor) string {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("import type { GeneratedType } from \"@cosmjs/proto-signing\";\n\n")
	for _, md := range mds {
		path := strings.TrimSuffix(md.ParentFile().Path(), ".proto") + ".js"
		fmt.Fprintf(&b, "import { %s as %s } from \"./gen/%s\";\n", md.Name(), alias(md), path)
	}
	b.WriteString("\n/** flopsTypes: every flops Msg's type URL and ts-proto codec, for a CosmJS Registry. */\nexport const flopsTypes: ReadonlyArray<[string, GeneratedType]> = [\n")
	for _, md := range mds {
		fmt.Fprintf(&b, "  [%q, %s],\n", "/"+md.FullName(), alias(md))
	}
	b.WriteString("];\n")
	return b.String()
}

// vector is one Msg as protobuf bytes and the amino JSON the chain signs for it.
type vector struct {
	Name      string          `json:"name"`
	TypeURL   string          `json:"typeUrl"`
	Proto     string          `json:"proto"`
	AminoType string          `json:"aminoType"`
	Amino     json.RawMessage `json:"amino"`
}

// vectors: for every Msg, one with every field set (msgfill), one with only the fields
// gogoproto always writes (non-nullable messages) and zero values, and three drawn from a
// fixed seed with zeros, empty lists, negative and large numbers and fractional times
// mixed in.
func vectors(mds []protoreflect.MessageDescriptor) ([]vector, error) {
	enc, err := encoding.Make()
	if err != nil {
		return nil, err
	}
	var out []vector
	r := &rng{s: 0x666c6f7073}
	for _, md := range mds {
		variants := map[string]*dynamicpb.Message{}
		_, full, err := msgfill.Filled(md, "flops1full")
		if err != nil {
			return nil, err
		}
		variants["full"] = full
		zero := dynamicpb.NewMessage(md)
		fillRandom(zero, &rng{s: 0}, 0, true)
		variants["zero"] = zero
		for i := range 3 {
			m := dynamicpb.NewMessage(md)
			fillRandom(m, r, 0, false)
			variants[fmt.Sprintf("random%d", i)] = m
		}
		for _, k := range []string{"full", "zero", "random0", "random1", "random2"} {
			dyn := variants[k]
			msg, err := msgfill.ToGogo(dyn)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", md.FullName(), k, err)
			}
			typ, value, err := aminoJSON(enc, msg)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", md.FullName(), k, err)
			}
			// the bytes the chain reads are gogoproto's: re-marshal through the app's type
			gbz, err := gogoproto.Marshal(msg)
			if err != nil {
				return nil, err
			}
			out = append(out, vector{Name: string(md.FullName()) + " " + k, TypeURL: "/" + string(md.FullName()),
				Proto: base64.StdEncoding.EncodeToString(gbz), AminoType: typ, Amino: value})
		}
	}
	return out, nil
}

// aminoJSON is the amino type and value of msg in the sign bytes of the app's
// SIGN_MODE_LEGACY_AMINO_JSON handler.
func aminoJSON(enc encoding.Config, msg sdk.Msg) (string, json.RawMessage, error) {
	priv := secp256k1.GenPrivKeyFromSecret([]byte("tsgen"))
	b := enc.TxConfig.NewTxBuilder()
	if err := b.SetMsgs(msg); err != nil {
		return "", nil, err
	}
	if err := b.SetSignatures(signing.SignatureV2{PubKey: priv.PubKey(), Data: &signing.SingleSignatureData{SignMode: signing.SignMode_SIGN_MODE_LEGACY_AMINO_JSON}}); err != nil {
		return "", nil, err
	}
	bz, err := authsign.GetSignBytesAdapter(context.Background(), enc.TxConfig.SignModeHandler(), signing.SignMode_SIGN_MODE_LEGACY_AMINO_JSON,
		authsign.SignerData{Address: sdk.AccAddress(priv.PubKey().Address()).String(), ChainID: "flops-tsgen-1", PubKey: priv.PubKey()}, b.GetTx())
	if err != nil {
		return "", nil, err
	}
	var doc struct {
		Msgs []struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		} `json:"msgs"`
	}
	if err := json.Unmarshal(bz, &doc); err != nil {
		return "", nil, err
	}
	if len(doc.Msgs) != 1 {
		return "", nil, fmt.Errorf("sign bytes hold %d msgs", len(doc.Msgs))
	}
	return doc.Msgs[0].Type, doc.Msgs[0].Value, nil
}

// rng is splitmix64: the vectors must be the same on every run.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (r *rng) intn(n int) int { return int(r.next() % uint64(n)) }

// fillRandom sets a random subset of m's fields to random values. Message fields that
// gogoproto always writes (non-nullable, so amino.dont_omitempty here) are always set, as
// the chain's own types would marshal them. zero leaves every scalar at its default.
func fillRandom(m protoreflect.Message, r *rng, depth int, zero bool) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		keep, _ := proto.GetExtension(fd.Options(), aminov1.E_DontOmitempty).(bool)
		isMsg := fd.Kind() == protoreflect.MessageKind
		if isMsg && !fd.IsList() && keep {
			fillWellKnownOr(m.Mutable(fd).Message(), r, depth, zero)
			continue
		}
		if zero || r.intn(3) == 0 || depth > 4 {
			continue
		}
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range r.intn(3) {
				if isMsg {
					e := l.NewElement()
					fillWellKnownOr(e.Message(), r, depth, false)
					l.Append(e)
				} else {
					l.Append(randomScalar(fd, r))
				}
			}
		case isMsg:
			fillWellKnownOr(m.Mutable(fd).Message(), r, depth, false)
		default:
			m.Set(fd, randomScalar(fd, r))
		}
	}
}

func fillWellKnownOr(m protoreflect.Message, r *rng, depth int, zero bool) {
	switch m.Descriptor().FullName() {
	case "google.protobuf.Timestamp", "google.protobuf.Duration":
		if zero {
			return
		}
		fs := m.Descriptor().Fields()
		secs := int64(r.next() % 4_000_000_000)
		if m.Descriptor().FullName() == "google.protobuf.Duration" {
			secs = int64(r.next()%1_000_000) - 1000 // a few negative ones
		}
		m.Set(fs.ByName("seconds"), protoreflect.ValueOfInt64(secs))
		nanos := int32(0)
		switch r.intn(3) {
		case 1:
			nanos = int32(r.next() % 1_000_000_000)
		case 2:
			nanos = int32(r.next()%1000) * 1_000_000
		}
		if secs < 0 {
			nanos = -nanos
		}
		m.Set(fs.ByName("nanos"), protoreflect.ValueOfInt32(nanos))
	default:
		fillRandom(m, r, depth+1, zero)
	}
}

func randomScalar(fd protoreflect.FieldDescriptor, r *rng) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(r.intn(2) == 0)
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(r.intn(vals.Len())).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(r.next()))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(int64(r.next()))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(r.next()))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(r.next())
	case protoreflect.StringKind:
		scalar, _ := proto.GetExtension(fd.Options(), cosmosprotov1.E_Scalar).(string)
		switch scalar {
		case "cosmos.Int", "cosmos.Dec":
			// digits, as math.Int and LegacyDec's wire forms are; zero and big ones too
			switch r.intn(4) {
			case 0:
				return protoreflect.ValueOfString("0")
			case 1:
				return protoreflect.ValueOfString(fmt.Sprintf("%d%018d", r.next()%1000, r.next()%1_000_000_000_000_000_000))
			default:
				return protoreflect.ValueOfString(fmt.Sprint(r.next() % 10_000_000))
			}
		}
		// characters JSON and the sign doc must escape the same way on both sides
		alphabet := []string{"a", "Z", "9", " ", "&", "<", ">", "\"", "\\", "é", "/", "\n", "😀", "sha256:", "flops1"}
		var s strings.Builder
		for range r.intn(8) {
			s.WriteString(alphabet[r.intn(len(alphabet))])
		}
		return protoreflect.ValueOfString(s.String())
	case protoreflect.BytesKind:
		b := make([]byte, r.intn(40))
		for i := range b {
			b[i] = byte(r.next())
		}
		return protoreflect.ValueOfBytes(b)
	default:
		panic("tsgen: unhandled kind " + fd.Kind().String())
	}
}
