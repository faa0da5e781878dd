package encoding_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/flopsnet/flops/app/encoding"
	"github.com/flopsnet/flops/testutil/msgfill"
)

// TestSigningResolverHasNoPlaceholders: every message descriptor the signing context
// resolves for a flops Msg is complete (a placeholder has no fields), the root cause of
// the amino-JSON relay attack. It runs in a binary that links only this package, as
// flops-worker does, where the merge of the proto registries once failed.
func TestSigningResolverHasNoPlaceholders(t *testing.T) {
	enc := encoding.MustMake()
	resolver := enc.InterfaceRegistry.SigningContext().FileResolver()
	msgs, err := msgfill.FlopsMsgs()
	require.NoError(t, err)
	for _, md := range msgs {
		d, err := resolver.FindDescriptorByName(md.FullName())
		require.NoError(t, err)
		var walk func(protoreflect.MessageDescriptor, map[protoreflect.FullName]bool)
		walk = func(m protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) {
			if seen[m.FullName()] {
				return
			}
			seen[m.FullName()] = true
			require.Falsef(t, m.IsPlaceholder(), "%s resolves %s as a placeholder", md.FullName(), m.FullName())
			for i := range m.Fields().Len() {
				if f := m.Fields().Get(i); f.Message() != nil {
					walk(f.Message(), seen)
				}
			}
		}
		walk(d.(protoreflect.MessageDescriptor), map[protoreflect.FullName]bool{})
	}
}
