package cmd

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

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

var (
	positionalFlag = regexp.MustCompile(`for "--(\d+)" flag`)
	// a refusal in the simulation that --gas auto runs, as the gRPC client reports it
	simulated = regexp.MustCompile(`^(?:rpc error: code = \w+ desc = )+(.*) with gas used: '\d+': unknown request$`)
	// the source location errorsmod appends to a wrapped error
	errorTrace = regexp.MustCompile(` \[[^\]\s]+\.go:\d+\]`)
)

// Explain rewrites autocli's errors about a positional argument, which it parses as a flag
// named after the argument's index ("--0"), to name the argument by its number and, when
// cmd (the command that ran) names it in its usage line, by its name; and it says what
// form a coin or a duration takes when one was given in another.
func Explain(err error, cmd *cobra.Command) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	orig := msg
	msg = positionalFlag.ReplaceAllStringFunc(msg, func(m string) string {
		n, convErr := strconv.Atoi(positionalFlag.FindStringSubmatch(m)[1])
		if convErr != nil {
			return m
		}
		if name := argName(cmd, n); name != "" {
			return fmt.Sprintf("for argument %d (%s)", n+1, name)
		}
		return fmt.Sprintf("for argument %d", n+1)
	})
	if m := simulated.FindStringSubmatch(msg); m != nil {
		msg = "the tx fails (simulated, nothing was sent): " + m[1]
	}
	msg = errorTrace.ReplaceAllString(msg, "")
	switch {
	case strings.Contains(msg, "invalid input format") || strings.Contains(msg, "invalid decimal coin expression") ||
		strings.Contains(msg, "invalid coin expression"):
		msg += ": a coin is an amount and a denom, e.g. 100000000udps (100 DPS)"
	case strings.Contains(msg, "time: invalid duration") || strings.Contains(msg, "time: missing unit"):
		msg += ": a duration is a number and a unit, e.g. 90s, 10m or 1h30m"
	}
	if msg == orig {
		return err
	}
	return explained{msg: msg, err: err}
}

// argName is the name of cmd's positional argument n in its usage line ("bond [amount]").
func argName(cmd *cobra.Command, n int) string {
	if cmd == nil {
		return ""
	}
	fields := strings.Fields(cmd.Use)
	if n+1 >= len(fields) {
		return ""
	}
	name := strings.Trim(fields[n+1], "[]<>.")
	if strings.HasPrefix(name, "-") || name == "flags" {
		return ""
	}
	return name
}

type explained struct {
	msg string
	err error
}

func (e explained) Error() string { return e.msg }
func (e explained) Unwrap() error { return e.err }

// usageErrors are the phrases of cobra's and pflag's errors about a command line's shape.
var usageErrors = regexp.MustCompile(`arg\(s\)|unknown (command|flag|shorthand)|flag needs an argument|invalid argument|required flag`)

// IsUsageError says whether err is about how the command was called (then main points to
// its --help) rather than about what it did.
func IsUsageError(err error) bool { return usageErrors.MatchString(err.Error()) }
