package guest

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/bcollard/marina/internal/run"
)

// putFunc is the one shell helper that writes files in the guest, shared
// by every batch and by the provisioning script. The content comes on
// stdin from a quoted here-document, so nothing in it reaches the shell's
// parser: no expansion, no quoting, not in any process's arguments.
const putFunc = `# put PATH MODE: install stdin as PATH with MODE only when the content or
# the mode differ; true when it changed the file. A failure ends the whole
# script: put runs as a condition, where set -e does not apply.
put() {
	local tmp
	tmp=$(mktemp) || exit 1
	cat >"$tmp" || exit 1
	if [ -f "$1" ] && [ "$(stat -c %a "$1")" = "${2#0}" ] && cmp -s "$tmp" "$1"; then
		rm -f "$tmp"
		return 1
	fi
	install -D -m "$2" "$tmp" "$1" || exit 1
	rm -f "$tmp"
}
`

// Batch collects changes for one apply round trip: files that are written
// only when their content differs, and commands.
type Batch struct{ b strings.Builder }

// NewBatch starts an empty batch.
func NewBatch() *Batch {
	b := &Batch{}
	b.b.WriteString("set -eu -o pipefail\n" + putFunc)
	return b
}

var (
	modeRe = regexp.MustCompile(`^0?[0-7]{3}$`)
	flagRe = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

// putCall renders the put call that installs f, setting the shell variable
// flag to 1 when the file changed (unless flag is empty). The path and the
// mode are quoted, whatever they hold; a path that is not absolute and
// clean, a mode that is not octal, a flag that is not a variable name, or
// content a here-document cannot carry exactly is an error.
func putCall(f File, flag string) (string, error) {
	switch {
	case !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || strings.ContainsAny(f.Path, "\x00\n"):
		return "", fmt.Errorf("refusing to write %q in the VM: not an absolute, clean path (a marina bug: paths come from constants and checked names)", f.Path)
	case !modeRe.MatchString(f.Mode):
		return "", fmt.Errorf("refusing to write %s in the VM with mode %q: not an octal mode such as 0644 (a marina bug)", f.Path, f.Mode)
	case flag != "" && !flagRe.MatchString(flag):
		return "", fmt.Errorf("refusing the shell flag %q: not a lower-case variable name (a marina bug)", flag)
	case strings.Contains(f.Content, "\x00"):
		return "", fmt.Errorf("refusing to write %s in the VM: its content holds a NUL byte, which a script cannot carry", f.Path)
	case f.Content != "" && !strings.HasSuffix(f.Content, "\n"):
		// A here-document always ends with a newline: the file would get
		// one more byte than marina checks its sum against.
		return "", fmt.Errorf("refusing to write %s in the VM: its content does not end with a newline (a marina bug: every file marina writes is text)", f.Path)
	}
	eof := delimiter(f.Content)
	call := fmt.Sprintf("put %s %s <<'%s'", run.ShellQuote(f.Path), run.ShellQuote(f.Mode), eof)
	if flag != "" {
		call = fmt.Sprintf("if %s; then %s=1; fi", call, flag)
	} else {
		call += " || true"
	}
	// The here-document's body starts on the next line and ends at the
	// first line that is exactly eof.
	return call + "\n" + f.Content + eof + "\n", nil
}

// delimiter is "EOF", or "EOF_<n>" for the smallest n such that no line of
// content is the delimiter (which would end the here-document early).
func delimiter(content string) string {
	lines := map[string]bool{}
	for _, l := range strings.Split(content, "\n") {
		lines[l] = true
	}
	eof := "EOF"
	for n := 1; lines[eof]; n++ {
		eof = "EOF_" + strconv.Itoa(n)
	}
	return eof
}

// Put adds what installs f; when flag is not empty the shell variable of
// that name is set to 1 if the file changed. Anything putCall refuses is
// an error, and the batch must not be sent.
func (b *Batch) Put(f File, flag string) error {
	s, err := putCall(f, flag)
	if err != nil {
		return err
	}
	b.b.WriteString(s)
	return nil
}

// Sh appends shell commands.
func (b *Batch) Sh(script string) {
	b.b.WriteString(strings.TrimRight(script, "\n") + "\n")
}

// Script is the batch as one script.
func (b *Batch) Script() string { return b.b.String() }
