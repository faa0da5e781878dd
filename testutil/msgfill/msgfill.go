// Package msgfill builds flops Msgs for signing tests through protobuf reflection: every
// Msg of every flops Msg service, each with every field set to a value that is not its
// default, and the same Msg with one field changed, as a relay that edits a signed
// transaction would change it.
package msgfill

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	gogoproto "github.com/cosmos/gogoproto/proto"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	msgv1 "cosmossdk.io/api/cosmos/msg/v1"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/flopsnet/flops/app/encoding"
)

// mergedFiles is the registry the app signs with (encoding.ProtoFiles), built once.
var mergedFiles = sync.OnceValues(encoding.ProtoFiles)

// FlopsMsgs lists the request type of every rpc of every flops Msg service, sorted by
// full name.
func FlopsMsgs() ([]protoreflect.MessageDescriptor, error) {
	files, err := mergedFiles()
	if err != nil {
		return nil, err
	}
	var out []protoreflect.MessageDescriptor
	files.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "flops.") {
			return true
		}
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			if ok, _ := proto.GetExtension(sd.Options(), msgv1.E_Service).(bool); !ok {
				continue
			}
			for j := range sd.Methods().Len() {
				out = append(out, sd.Methods().Get(j).Input())
			}
		}
		return true
	})
	slices.SortFunc(out, func(a, b protoreflect.MessageDescriptor) int {
		return strings.Compare(string(a.FullName()), string(b.FullName()))
	})
	return out, nil
}

// Signer is the name of md's signer field (its cosmos.msg.v1.signer option).
func Signer(md protoreflect.MessageDescriptor) string {
	s, _ := proto.GetExtension(md.Options(), msgv1.E_Signer).([]string)
	if len(s) != 1 {
		panic(fmt.Sprintf("%s: want one signer field, have %v", md.FullName(), s))
	}
	return s[0]
}

// Filled returns the Msg of md with every field, at every depth, set to a value that is
// not its default (one element in each list), and signer in its signer field, both as
// the gogoproto Msg the app runs and as a dynamic message to walk.
func Filled(md protoreflect.MessageDescriptor, signer string) (sdk.Msg, *dynamicpb.Message, error) {
	dyn := dynamicpb.NewMessage(md)
	Fill(dyn)
	dyn.Set(md.Fields().ByName(protoreflect.Name(Signer(md))), protoreflect.ValueOfString(signer))
	msg, err := ToGogo(dyn)
	return msg, dyn, err
}

// Fill sets every field of m, recursively, to a value that is not its default.
func Fill(m protoreflect.Message) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		switch {
		case fd.IsList() && fd.Kind() == protoreflect.MessageKind:
			l := m.Mutable(fd).List()
			e := l.NewElement()
			Fill(e.Message())
			l.Append(e)
		case fd.IsList():
			m.Mutable(fd).List().Append(scalar(fd))
		case fd.Kind() == protoreflect.MessageKind:
			Fill(m.Mutable(fd).Message())
		default:
			m.Set(fd, scalar(fd))
		}
	}
}

// scalar is 7 in the field's type: a number is valid for every string field too
// (math.Int and LegacyDec custom types need digits; addresses are not parsed by an
// encoder). Enums take their last value.
func scalar(fd protoreflect.FieldDescriptor) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(fd.Enum().Values().Get(fd.Enum().Values().Len() - 1).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(7)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(7)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(7)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(7)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("7")
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{7, 7, 7})
	default:
		panic("msgfill: unhandled kind " + fd.Kind().String())
	}
}

// ErrOnlySigner: the Msg has no field but its signer, so nothing a relay could change
// without changing who must sign.
var ErrOnlySigner = errors.New("no field but the signer")

// Tamper returns msg with one field changed the way a relay would change it: a leaf of
// its first nested message when it has one (a job's spec, a node's GPUs, a reveal's
// usage, a module's params), else its first scalar field other than the signer. It
// returns the path of the changed field.
func Tamper(msg sdk.Msg) (sdk.Msg, string, error) {
	bz, err := gogoproto.Marshal(msg)
	if err != nil {
		return nil, "", err
	}
	md, err := descriptorOf(msg)
	if err != nil {
		return nil, "", err
	}
	dyn := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(bz, dyn); err != nil {
		return nil, "", err
	}
	signer := Signer(md)
	path := ""
	for i := range md.Fields().Len() {
		fd := md.Fields().Get(i)
		if fd.Kind() != protoreflect.MessageKind || !dyn.Has(fd) {
			continue
		}
		var inner protoreflect.Message
		if fd.IsList() {
			inner = dyn.Mutable(fd).List().Get(0).Message()
		} else {
			inner = dyn.Mutable(fd).Message()
		}
		if p := changeLeaf(inner); p != "" {
			path = string(fd.Name()) + "." + p
			break
		}
	}
	if path == "" {
		for i := range md.Fields().Len() {
			fd := md.Fields().Get(i)
			if string(fd.Name()) != signer && fd.Kind() != protoreflect.MessageKind && !fd.IsList() && dyn.Has(fd) {
				dyn.Set(fd, changed(fd, dyn.Get(fd)))
				path = string(fd.Name())
				break
			}
		}
	}
	if path == "" {
		return nil, "", fmt.Errorf("%s: %w", md.FullName(), ErrOnlySigner)
	}
	out, err := ToGogo(dyn)
	return out, path, err
}

// changeLeaf changes the first set scalar field it finds in m, depth first, and returns
// its path ("" if none).
func changeLeaf(m protoreflect.Message) string {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		switch {
		case fd.Kind() == protoreflect.MessageKind && fd.IsList():
			if p := changeLeaf(m.Mutable(fd).List().Get(0).Message()); p != "" {
				return string(fd.Name()) + "[0]." + p
			}
		case fd.Kind() == protoreflect.MessageKind:
			if p := changeLeaf(m.Mutable(fd).Message()); p != "" {
				return string(fd.Name()) + "." + p
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			l.Set(0, changed(fd, l.Get(0)))
			return string(fd.Name()) + "[0]"
		default:
			m.Set(fd, changed(fd, m.Get(fd)))
			return string(fd.Name())
		}
	}
	return ""
}

// changed is v made different, and still valid for the custom types (digits stay digits).
func changed(fd protoreflect.FieldDescriptor, v protoreflect.Value) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(!v.Bool())
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		for i := range vals.Len() {
			if n := vals.Get(i).Number(); n != v.Enum() && n != 0 {
				return protoreflect.ValueOfEnum(n)
			}
		}
		return protoreflect.ValueOfEnum(0)
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(v.Int())*100 + 1)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(v.Int()*100 + 1)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(v.Uint())*100 + 1)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(v.Uint()*100 + 1)
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(v.String() + "0")
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes(append(slices.Clone(v.Bytes()), 1))
	default:
		panic("msgfill: unhandled kind " + fd.Kind().String())
	}
}

func descriptorOf(msg sdk.Msg) (protoreflect.MessageDescriptor, error) {
	files, err := mergedFiles()
	if err != nil {
		return nil, err
	}
	d, err := files.FindDescriptorByName(protoreflect.FullName(gogoproto.MessageName(msg)))
	if err != nil {
		return nil, err
	}
	return d.(protoreflect.MessageDescriptor), nil
}

// ToGogo is dyn as the gogoproto Msg the app runs (through its protobuf bytes).
func ToGogo(dyn *dynamicpb.Message) (sdk.Msg, error) {
	bz, err := proto.Marshal(dyn)
	if err != nil {
		return nil, err
	}
	name := string(dyn.Descriptor().FullName())
	typ := gogoproto.MessageType(name)
	if typ == nil {
		return nil, fmt.Errorf("%s has no gogoproto type", name)
	}
	msg, ok := reflect.New(typ.Elem()).Interface().(sdk.Msg)
	if !ok {
		return nil, fmt.Errorf("%s is not an sdk.Msg", name)
	}
	return msg, gogoproto.Unmarshal(bz, msg)
}
