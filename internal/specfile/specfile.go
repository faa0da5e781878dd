// Package specfile reads a protobuf message from a YAML or JSON file, for CLI commands
// whose input is a nested spec (a node, a job): YAML is converted to JSON and decoded with
// the app's codec, so field names are the proto JSON names and unknown fields are errors.
package specfile

import (
	"fmt"
	"io"
	"os"

	"github.com/cosmos/gogoproto/proto"
	"sigs.k8s.io/yaml"

	"github.com/cosmos/cosmos-sdk/codec"
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

// Decode decodes YAML or JSON bytes into msg.
func Decode(cdc codec.JSONCodec, bz []byte, msg proto.Message) error {
	js, err := yaml.YAMLToJSON(bz)
	if err != nil {
		return fmt.Errorf("spec is neither YAML nor JSON: %w", err)
	}
	if err := cdc.UnmarshalJSON(js, msg); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	return nil
}

func readAll(f *os.File) ([]byte, error) {
	return io.ReadAll(f)
}
