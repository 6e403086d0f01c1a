package guest

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestMain lets the test binary stand in for iptables (see fakeIptables)
// when a test runs a rendered script with it first on PATH.
func TestMain(m *testing.M) {
	if state := os.Getenv("MARINA_FAKE_IPTABLES"); state != "" {
		os.Exit(fakeIptables(state, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// iptState is the fake's rule set: per table, chains in the order iptables
// lists them.
type iptState struct {
	Tables map[string][]*iptChain
	// Log holds every command that changed something.
	Log []string
}

type iptChain struct {
	Name   string
	Policy string // built-in chains only
	Rules  []string
}

func (s *iptState) chain(table, name string) *iptChain {
	for _, c := range s.Tables[table] {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// fakeIptables does what iptables does to the part of the rule set the
// network script uses (-S, -N, -F, -A, -I, -D, -P, -t, -w) over a JSON
// file, printing -S exactly as iptables does: policies and new chains
// first, then the rules chain by chain.
func fakeIptables(file string, args []string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	var s iptState
	if err := json.Unmarshal(b, &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	table := "filter"
	var rest []string
	for i := 0; i < len(args); i++ {
		switch args[i] {
		case "-w":
		case "-t":
			i++
			table = args[i]
		default:
			rest = append(rest, args[i])
		}
	}
	if len(rest) == 0 {
		return 2
	}
	op, name := rest[0], ""
	if len(rest) > 1 {
		name = rest[1]
	}
	noChain := func() int {
		fmt.Fprintln(os.Stderr, "iptables: No chain/target/match by that name.")
		return 1
	}
	c := s.chain(table, name)
	changed := true
	switch op {
	case "-S":
		changed = false
		var heads, rules []string
		for _, ch := range s.Tables[table] {
			if name != "" && ch.Name != name {
				continue
			}
			if ch.Policy != "" {
				heads = append(heads, "-P "+ch.Name+" "+ch.Policy)
			} else {
				heads = append(heads, "-N "+ch.Name)
			}
			rules = append(rules, ch.Rules...)
		}
		if len(heads) == 0 {
			return noChain()
		}
		for _, l := range append(heads, rules...) {
			fmt.Fprintln(os.Stdout, l)
		}
	case "-N":
		if c != nil {
			fmt.Fprintln(os.Stderr, "iptables: Chain already exists.")
			return 1
		}
		s.Tables[table] = append(s.Tables[table], &iptChain{Name: name})
	case "-F":
		if c == nil {
			return noChain()
		}
		c.Rules = nil
	case "-P":
		if c == nil || c.Policy == "" {
			return noChain()
		}
		// Setting the policy it already has changes nothing.
		changed = c.Policy != rest[2]
		c.Policy = rest[2]
	case "-A", "-D", "-I":
		if c == nil {
			return noChain()
		}
		spec := rest[2:]
		pos := 1
		if op == "-I" && len(spec) > 0 {
			if n, err := strconv.Atoi(spec[0]); err == nil {
				pos, spec = n, spec[1:]
			}
		}
		rule := strings.Join(append([]string{"-A", name}, spec...), " ")
		switch op {
		case "-A":
			c.Rules = append(c.Rules, rule)
		case "-I":
			c.Rules = slices.Insert(c.Rules, pos-1, rule)
		case "-D":
			i := slices.Index(c.Rules, rule)
			if i < 0 {
				fmt.Fprintln(os.Stderr, "iptables: Bad rule (does a matching rule exist in that chain?).")
				return 1
			}
			c.Rules = slices.Delete(c.Rules, i, i+1)
		}
	default:
		fmt.Fprintln(os.Stderr, "fake iptables: unsupported", args)
		return 2
	}
	if changed {
		s.Log = append(s.Log, strings.Join(args, " "))
	}
	if b, err = json.Marshal(s); err == nil {
		err = os.WriteFile(file, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}
