package guest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/bcollard/marina/internal/fileutil"
)

// Seen is what marina up notes on the Mac of the VM's provisioning when it
// leaves the VM provisioned by its own script: which VM, the marina that
// provisioned it, and the script's digest. marina version reads it to say
// whether the VM is behind this binary without reaching the VM, which
// costs nothing and works while the VM is stopped.
type Seen struct {
	VM     string    `json:"vm"`
	Marina string    `json:"marina"`
	Script string    `json:"script"`
	At     time.Time `json:"at"`
}

// Behind reports whether the noted script is not this marina's: marina up
// provisions the VM again.
func (s Seen) Behind() bool { return s.Script != ProvisionDigest() }

var vmNameRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// maxSeen bounds the note read back: it is a few lines.
const maxSeen = 4 << 10

// SaveSeen writes the note, replacing the last.
func SaveSeen(path string, s Seen) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return fileutil.WriteAtomic(path, append(b, '\n'), 0o644)
}

// LoadSeen reads the note; nil without error when there is none. A note
// whose values are not of their kind is refused.
func LoadSeen(path string) (*Seen, error) {
	b, err := fileutil.ReadRegular(path, maxSeen)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w: fix its permissions, or remove it and run marina up", path, err)
	}
	var s Seen
	if err := json.Unmarshal(b, &s); err != nil || !vmNameRe.MatchString(s.VM) || !versionRe.MatchString(s.Marina) || !digestRe.MatchString(s.Script) {
		return nil, fmt.Errorf("%s is not a note marina up wrote (a VM name, a version and a sha256): the next marina up writes it again", path)
	}
	return &s, nil
}
