package guest

import (
	"encoding/base64"
	"fmt"
	"strings"
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

// Put installs f; when flag is not empty the shell variable of that name
// is set to 1 if the file changed.
func (b *Batch) Put(f File, flag string) {
	fmt.Fprintf(&b.b, "put %s %s %s", f.Path, f.Mode, base64.StdEncoding.EncodeToString([]byte(f.Content)))
	if flag != "" {
		fmt.Fprintf(&b.b, " && %s=1", flag)
	}
	b.b.WriteString(" || true\n")
}

// Sh appends shell commands.
func (b *Batch) Sh(script string) {
	b.b.WriteString(strings.TrimRight(script, "\n") + "\n")
}

// Script is the batch as one script.
func (b *Batch) Script() string { return b.b.String() }
