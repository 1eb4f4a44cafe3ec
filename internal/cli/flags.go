package cli

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/throttlelab/throttlelab/units"
)

// durationValue is a flag read by units.ParseDuration, the parser the spec
// uses, so that a flag and a spec field take the same durations.
type durationValue time.Duration

func (d *durationValue) Set(s string) error {
	v, err := units.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return time.Duration(*d).String() }
func (d *durationValue) Type() string   { return "duration" }

func durationVar(fs *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fs.Var((*durationValue)(p), name, usage)
}

// seedValue is --seed: a seed of 0 or more, or -1 (unset, the help shows no
// default) for the spec's own.
type seedValue int64

// seedVar defines --seed on fs: -1 until given.
func seedVar(fs *pflag.FlagSet, p *int64, usage string) {
	*p = -1
	fs.Var((*seedValue)(p), "seed", usage)
}

func (s *seedValue) Set(v string) error {
	n, err := strconv.ParseUint(v, 10, 63)
	if err != nil {
		return fmt.Errorf("%q: want a whole number, 0 or more", v)
	}
	*s = seedValue(n)
	return nil
}

func (s *seedValue) String() string {
	if *s < 0 {
		return ""
	}
	return strconv.FormatInt(int64(*s), 10)
}

func (s *seedValue) Type() string { return "int" }

// rateValue is a flag read by units.ParseRate: requests per second, finite,
// within the rate bounds (0 allowed).
type rateValue float64

func (r *rateValue) Set(s string) error {
	v, err := units.ParseRate(s)
	if err != nil {
		return err
	}
	*r = rateValue(v)
	return nil
}

func (r *rateValue) String() string { return strconv.FormatFloat(float64(*r), 'g', -1, 64) }
func (r *rateValue) Type() string   { return "rate" }

func rateVar(fs *pflag.FlagSet, p *float64, name string, def float64, usage string) {
	*p = def
	fs.Var((*rateValue)(p), name, usage)
}

// positiveFinite checks a float flag that must be a positive, finite number
// (pflag's float flags also take "inf" and "NaN").
func positiveFinite(flag string, v float64) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return usagef("--%s %g: must be a positive number", flag, v)
	}
	return nil
}

// checkCores checks a --cores flag (0: this machine's) and returns the count.
func checkCores(cores int) (int, error) {
	if cores < 0 || cores > units.MaxCPUs {
		return 0, usagef("--cores %d: want 1 to %d (or leave it out for this machine's)", cores, units.MaxCPUs)
	}
	return orHostCores(cores)
}

// checkURLs refuses a URL (empty ones are skipped) that is not http(s).
func checkURLs(us ...string) error {
	for _, u := range us {
		if u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return usagef("%q: give a URL starting with http:// or https://", u)
		}
	}
	return nil
}

// aliasValue is a hidden, deprecated spelling of another flag: it sets
// that flag's value and says once, on stderr, what to write instead. (pflag's
// own notice goes to the command's output, stdout here, where it would
// break -o json.)
type aliasValue struct {
	pflag.Value
	cmd        *cobra.Command
	old, instd string
	told       *bool
}

func (a aliasValue) Set(s string) error {
	if !*a.told {
		fmt.Fprintf(a.cmd.ErrOrStderr(), "throttlelab: %s is deprecated: use %s\n", a.old, a.instd)
		*a.told = true
	}
	return a.Value.Set(s)
}

// aliasVar defines the hidden flag name (shorthand sh, may be empty) that
// sets v and advises instd instead.
func aliasVar(cmd *cobra.Command, v pflag.Value, name, sh, instd string) *pflag.Flag {
	old := "--" + name
	if sh != "" {
		old = "-" + sh
	}
	fl := cmd.Flags().VarPF(aliasValue{v, cmd, old, instd, new(bool)}, name, sh, "deprecated: use "+instd)
	fl.Hidden = true
	return fl
}

// deprecatedAlias makes old a hidden spelling of cmd's flag named current:
// it sets the same value, and using it prints a one-line notice.
func deprecatedAlias(cmd *cobra.Command, old, current string) {
	f := cmd.Flags().Lookup(current)
	aliasVar(cmd, f.Value, old, "", "--"+current).NoOptDefVal = f.NoOptDefVal
}

// formatAlias is a boolean flag (--json) that stands for -o FORMAT.
type formatAlias struct {
	p      *string
	format string
}

func (a formatAlias) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	if b {
		*a.p = a.format
	}
	return nil
}

func (a formatAlias) String() string { return "false" }
func (a formatAlias) Type() string   { return "bool" }

// formatAliasVar defines --name as a hidden, deprecated spelling of
// -o format that sets *output.
func formatAliasVar(cmd *cobra.Command, output *string, name, format string) {
	aliasVar(cmd, formatAlias{output, format}, name, "", "-o "+format).NoOptDefVal = "true"
}

// boolShorthandAlias defines -sh as a hidden, deprecated spelling of the
// boolean flag --current.
func boolShorthandAlias(cmd *cobra.Command, sh, current string) {
	aliasVar(cmd, cmd.Flags().Lookup(current).Value, "deprecated-"+sh, sh, "--"+current).NoOptDefVal = "true"
}

// pct writes a share of periods as the flags take it (0.05 as "5%").
func pct(r float64) string { return strconv.FormatFloat(r*100, 'g', -1, 64) + "%" }

// outputFormat checks -o against the formats cmd writes, before anything
// runs, and names the value and cmd's choices. "text", check's word for
// its table before table was the word everywhere, is read as "table" with
// a notice on stderr.
func outputFormat(cmd *cobra.Command, p *string, formats ...string) error {
	if *p == "text" && slices.Contains(formats, "table") {
		fmt.Fprintln(cmd.ErrOrStderr(), "throttlelab: -o text is deprecated: use -o table")
		*p = "table"
	}
	if slices.Contains(formats, *p) {
		return nil
	}
	return usagef("--output %q: %s writes %s", *p, cmd.CommandPath(), strings.Join(formats, ", "))
}
