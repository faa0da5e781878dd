// Package specfile reads a protobuf message from a YAML or JSON file, for CLI commands
// whose input is a nested spec (a node, a job): YAML is converted to JSON and decoded with
// the app's codec, so field names are the proto JSON names and unknown fields are errors.
package specfile

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/cosmos/gogoproto/proto"
	"sigs.k8s.io/yaml"

	"github.com/cosmos/cosmos-sdk/codec"
	sdk "github.com/cosmos/cosmos-sdk/types"
)

// Read decodes path (YAML or JSON; "-" reads stdin) into msg.
func Read(cdc codec.JSONCodec, path string, msg proto.Message) error {
	var bz []byte
	var err error
	if path == "-" {
		bz, err = readAll(os.Stdin)
	} else {
		bz, err = os.ReadFile(path)
	}
	if err != nil {
		return err
	}
	return Decode(cdc, bz, msg)
}

// Decode decodes YAML or JSON bytes into msg. A coin may be written as the CLI's flags
// take one ("5000000udps") as well as {denom, amount}; a coin or nested message in another
// form is an error that names its field.
func Decode(cdc codec.JSONCodec, bz []byte, msg proto.Message) error {
	js, err := yaml.YAMLToJSON(bz)
	if err != nil {
		return fmt.Errorf("spec is neither YAML nor JSON: %w", err)
	}
	if md := descriptorOf(msg); md != nil {
		var v any
		if err := json.Unmarshal(js, &v); err != nil {
			return fmt.Errorf("spec: %w", err)
		}
		if v, err = normalize(md, v, ""); err != nil {
			return fmt.Errorf("spec: %w", err)
		}
		if js, err = json.Marshal(v); err != nil {
			return fmt.Errorf("spec: %w", err)
		}
	}
	if err := cdc.UnmarshalJSON(js, msg); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	return nil
}

// descriptorOf is msg's descriptor in the merged registry (nil if it is not there).
func descriptorOf(msg proto.Message) protoreflect.MessageDescriptor {
	d, err := proto.HybridResolver.FindDescriptorByName(protoreflect.FullName(proto.MessageName(msg)))
	if err != nil {
		return nil
	}
	md, _ := d.(protoreflect.MessageDescriptor)
	return md
}

// normalize walks v as a JSON value of md: coins given as strings become {denom, amount},
// and a message field holding a scalar is an error naming it.
func normalize(md protoreflect.MessageDescriptor, v any, path string) (any, error) {
	if md.FullName() == "cosmos.base.v1beta1.Coin" {
		if s, ok := v.(string); ok {
			c, err := sdk.ParseCoinNormalized(s)
			if err != nil {
				return nil, fmt.Errorf("%s: %q: a coin is an amount and a denom, e.g. 5000000udps (5 DPS)", path, s)
			}
			return map[string]any{"denom": c.Denom, "amount": c.Amount.String()}, nil
		}
	}
	if strings.HasPrefix(string(md.FullName()), "google.protobuf.") {
		return v, nil // durations and times are strings; jsonpb reads them
	}
	obj, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return v, nil
		}
		what := "an object"
		if md.FullName() == "cosmos.base.v1beta1.Coin" {
			what = `a coin ("5000000udps" or {denom: udps, amount: "5000000"})`
		}
		return nil, fmt.Errorf("%s: want %s, got %v", orTop(path), what, v)
	}
	fields := md.Fields()
	for k, fv := range obj {
		fd := fields.ByJSONName(k)
		if fd == nil {
			fd = fields.ByName(protoreflect.Name(k))
		}
		if fd == nil || fd.Kind() != protoreflect.MessageKind || fd.IsMap() {
			continue // unknown fields and scalars: jsonpb's errors
		}
		fpath := join(path, k)
		if fd.IsList() {
			list, ok := fv.([]any)
			if !ok {
				if fv == nil {
					continue
				}
				return nil, fmt.Errorf("%s: want a list, got %v", fpath, fv)
			}
			for i, e := range list {
				n, err := normalize(fd.Message(), e, fmt.Sprintf("%s[%d]", fpath, i))
				if err != nil {
					return nil, err
				}
				list[i] = n
			}
			continue
		}
		n, err := normalize(fd.Message(), fv, fpath)
		if err != nil {
			return nil, err
		}
		obj[k] = n
	}
	return obj, nil
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func orTop(path string) string {
	if path == "" {
		return "spec"
	}
	return path
}

func readAll(f *os.File) ([]byte, error) {
	return io.ReadAll(f)
}
