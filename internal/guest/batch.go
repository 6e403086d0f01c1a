package guest

import (
	"encoding/base64"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/bcollard/marina/internal/run"
)

// Batch collects changes for one apply round trip: files that are written
// only when their content differs, and commands. File contents travel
// base64-encoded inside the script, so nothing in them reaches a shell
// parser (or a process list).
type Batch struct{ b strings.Builder }

// NewBatch starts an empty batch.
func NewBatch() *Batch {
	b := &Batch{}
	b.b.WriteString(`set -eu -o pipefail
# put PATH MODE BASE64: install the content only when it differs; true
# when it changed the file.
# A failure ends the whole script (set -e does not apply inside && lists).
put() {
	local tmp
	tmp=$(mktemp) || exit 1
	printf '%s' "$3" | base64 -d >"$tmp" || exit 1
	if [ -f "$1" ] && [ "$(stat -c %a "$1")" = "${2#0}" ] && cmp -s "$tmp" "$1"; then rm -f "$tmp"; return 1; fi
	install -D -m "$2" "$tmp" "$1" || exit 1
	rm -f "$tmp"
}
`)
	return b
}

var (
	modeRe = regexp.MustCompile(`^0?[0-7]{3}$`)
	flagRe = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

// Put installs f; when flag is not empty the shell variable of that name
// is set to 1 if the file changed. The path is quoted, whatever it holds; a
// path that is not absolute and clean, a mode that is not octal or a flag
// that is not a variable name is an error, and the batch is not sent.
func (b *Batch) Put(f File, flag string) error {
	switch {
	case !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || strings.ContainsAny(f.Path, "\x00\n"):
		return fmt.Errorf("refusing to write %q in the VM: not an absolute, clean path", f.Path)
	case !modeRe.MatchString(f.Mode):
		return fmt.Errorf("refusing to write %s in the VM with mode %q", f.Path, f.Mode)
	case flag != "" && !flagRe.MatchString(flag):
		return fmt.Errorf("refusing the shell flag %q", flag)
	}
	fmt.Fprintf(&b.b, "put %s %s %s", run.ShellQuote(f.Path), f.Mode, base64.StdEncoding.EncodeToString([]byte(f.Content)))
	if flag != "" {
		fmt.Fprintf(&b.b, " && %s=1", flag)
	}
	b.b.WriteString(" || true\n")
	return nil
}

// Sh appends shell commands.
func (b *Batch) Sh(script string) {
	b.b.WriteString(strings.TrimRight(script, "\n") + "\n")
}

// Script is the batch as one script.
func (b *Batch) Script() string { return b.b.String() }
