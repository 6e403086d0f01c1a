package config

import "fmt"

// RosettaOn reports whether the VM runs x86_64 binaries through Rosetta on
// a Mac of architecture hostArch (a GOARCH): only Apple silicon (arm64)
// has Rosetta, so vm.rosetta is dropped anywhere else.
func (v VM) RosettaOn(hostArch string) bool { return v.Rosetta && hostArch == "arm64" }

// HostWarnings are the settings of a valid config that a Mac of
// architecture hostArch cannot honour. They stop nothing (marina goes on
// without them), so they are warnings, not problems: each names its key,
// where the file sets it, why it does not apply, and the fix.
func (l Lenient) HostWarnings(hostArch string) []string {
	c := l.Config
	var probs []Problem
	if c.VM.Rosetta && !c.VM.RosettaOn(hostArch) {
		probs = append(probs, Problem{Path: "vm.rosetta", Msg: fmt.Sprintf(
			"true is ignored on this %s Mac: Rosetta runs x86_64 binaries on Apple silicon (arm64) only, so the VM is made without it; remove vm.rosetta from the config (or set it to false)", hostArch)})
	}
	out := make([]string, len(probs))
	for i, p := range probs {
		p.Line = l.Lines.find(p.Path)
		out[i] = p.format(l.File)
	}
	return out
}
