package cmd

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	gogoproto "github.com/cosmos/gogoproto/proto"
	"github.com/iancoleman/strcase"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// QueryArgs rewrites, in a query command's arguments, each flops enum value written as
// every output prints it (JOB_STATUS_ACTIVE) into the form autocli parses (active), so that
// what `q market job 7` prints can be pasted into `q market jobs-by-status`. Other
// commands' arguments (a tx's memo may be anything) are left as they are.
func QueryArgs(args []string) []string {
	isQuery := false
	for _, a := range args { // the first of the two subcommands decides
		if a == "query" || a == "q" || a == "tx" {
			isQuery = a != "tx"
			break
		}
	}
	if !isQuery {
		return args
	}
	names := enumNames()
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if short, ok := names[a]; ok {
			out[i] = short
		} else if flag, value, ok := strings.Cut(a, "="); ok && strings.HasPrefix(flag, "--") {
			if short, ok := names[value]; ok {
				out[i] = flag + "=" + short
			}
		}
	}
	return out
}

// enumNames maps every flops enum value's full name to autocli's name for it (the enum's
// prefix trimmed, in kebab case: VERIFICATION_CLASS_BUILTIN_GEMM -> builtin-gemm).
func enumNames() map[string]string {
	names := map[string]string{}
	gogoproto.HybridResolver.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), "flops.") {
			return true
		}
		addEnums(names, fd.Enums())
		for i := 0; i < fd.Messages().Len(); i++ {
			addEnums(names, fd.Messages().Get(i).Enums())
		}
		return true
	})
	return names
}

func addEnums(names map[string]string, enums protoreflect.EnumDescriptors) {
	for i := 0; i < enums.Len(); i++ {
		e := enums.Get(i)
		prefix := strcase.ToScreamingSnake(string(e.Name())) + "_"
		for j := 0; j < e.Values().Len(); j++ {
			full := string(e.Values().Get(j).Name())
			names[full] = strcase.ToKebab(strings.TrimPrefix(full, prefix))
		}
	}
}

var positionalFlag = regexp.MustCompile(`for "--(\d+)" flag`)

// Explain rewrites autocli's errors about a positional argument, which it parses as a flag
// named after the argument's index ("--0"), to name the argument.
func Explain(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if !positionalFlag.MatchString(msg) {
		return err
	}
	msg = positionalFlag.ReplaceAllStringFunc(msg, func(m string) string {
		n, convErr := strconv.Atoi(positionalFlag.FindStringSubmatch(m)[1])
		if convErr != nil {
			return m
		}
		return fmt.Sprintf("for argument %d", n+1)
	})
	return explained{msg: msg, err: err}
}

type explained struct {
	msg string
	err error
}

func (e explained) Error() string { return e.msg }
func (e explained) Unwrap() error { return e.err }
