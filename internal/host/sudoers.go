package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/bcollard/marina/internal/fileutil"
)

// SudoersDir is where sudo reads drop-in rules (sudoers' #includedir).
const SudoersDir = "/etc/sudoers.d"

// sudoersUser is a user name a sudoers rule can name as it is.
var sudoersUser = regexp.MustCompile(`^[a-z_][a-z0-9_.-]{0,31}$`)

// sudoersArg is an argument a sudoers rule can match as it is: none of
// sudoers' special characters (, : = \ and space) and no wildcard.
var sudoersArg = regexp.MustCompile(`^[A-Za-z0-9._/+-]+$`)

// SudoersPath is marina's drop-in for user. sudo skips a drop-in whose
// name holds a dot, so a dot in the user's name becomes "_".
func SudoersPath(user string) (string, error) {
	if !sudoersUser.MatchString(user) {
		return "", fmt.Errorf("the user name %q cannot be named in a sudoers rule as it is", user)
	}
	return filepath.Join(SudoersDir, "marina-"+strings.ReplaceAll(user, ".", "_")), nil
}

// gatewayMark stands for the VM's address in a rendered rule.
var gatewayMark = netip.IPv4Unspecified()

// Sudoers renders the drop-in that lets user run without a password
// exactly marina's route commands for cidr, and for each of pods (the pod
// and service ranges of network.podRouting), through the VM (added,
// changed, deleted), the removal of the resolver file at resolver, and the
// drop-in's own removal.
//
// The VM's address moves when it starts again, within lima0's /24: each
// rule names that /24 and one to three digits for the last octet, as
// character classes. A "*" would match spaces too, and with them any
// further argument route(8) takes (-dst default, a netmask). The resolver
// file is not written through the rule: its content comes from a file
// the user owns, which a passwordless rule must not let root read.
func (h *Host) Sudoers(user string, cidr netip.Prefix, lima0 netip.Addr, resolver string, pods ...netip.Prefix) (string, error) {
	if h.styleErr != nil {
		return "", h.styleErr
	}
	self, err := SudoersPath(user)
	if err != nil {
		return "", err
	}
	if !lima0.Is4() {
		return "", fmt.Errorf("the VM's lima0 address %v is not IPv4: `marina up` first, then marina sudoers again", lima0)
	}
	t := h.tool()
	var cmds [][]string
	nets := append([]netip.Prefix{cidr}, pods...)
	for _, n := range nets {
		for _, c := range [][]string{t.add(n, gatewayMark), t.change(n, gatewayMark), t.del(n, gatewayMark)} {
			for _, last := range []string{"[0-9]", "[0-9][0-9]", "[0-9][0-9][0-9]"} {
				a := lima0.As4()
				gw := fmt.Sprintf("%d.%d.%d.%s", a[0], a[1], a[2], last)
				cmds = append(cmds, slices.Replace(slices.Clone(c), slices.Index(c, gatewayMark.String()), slices.Index(c, gatewayMark.String())+1, gw))
			}
		}
	}
	if !filepath.IsAbs(cmds[0][0]) {
		return "", errors.New("this host changes routes with ip(8), which marina runs by name, not by a full path a sudoers rule can name: marina sudoers is for a Mac (route(8))")
	}
	for _, n := range nets {
		cmds = append(cmds, t.del(n, netip.Addr{}))
	}
	cmds = append(cmds, resolverRemove(resolver), []string{rmTool, "-f", self})
	var lines []string
	for _, c := range cmds {
		for _, a := range c {
			if !sudoersArg.MatchString(a) && !gatewayArg.MatchString(a) {
				return "", fmt.Errorf("%q cannot be named in a sudoers rule as it is (a space or one of , : = \\ * in it): move it, or keep typing the password", a)
			}
		}
		lines = append(lines, strings.Join(c, " "))
	}
	return "# marina's rule for " + user + ", written by `marina sudoers --install`: the\n" +
		"# commands marina up, down and destroy run as root, without a password.\n" +
		"# The route to the kind network (" + cidr.String() + ")" + podsNote(pods) + " through the VM at\n" +
		"# any address of its /24, the removal of the resolver file " + resolver + ",\n" +
		"# and this file's removal; nothing else.\n" +
		user + " ALL=(root) NOPASSWD: " + strings.Join(lines, ", \\\n\t") + "\n", nil
}

// podsNote names network.podRouting's routes in the drop-in's comment.
func podsNote(pods []netip.Prefix) string {
	if len(pods) == 0 {
		return ""
	}
	return fmt.Sprintf(" and the %d routes of\n# the clusters' pod and service ranges (network.podRouting),", len(pods))
}

// gatewayArg is a gateway pattern Sudoers renders.
var gatewayArg = regexp.MustCompile(`^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.(\[0-9\]){1,3}$`)

// SudoersRecord is what marina remembers of the drop-in it installed: it
// removes only a drop-in it recorded, and says when the one it installed
// is no longer the one it would write.
type SudoersRecord struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// LoadSudoers reads the record at file (nil when there is none). A record
// naming anything but a marina drop-in in SudoersDir is not marina's, and
// an error.
func LoadSudoers(file string) (*SudoersRecord, error) {
	b, err := fileutil.ReadRegular(file, 1<<16)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r SudoersRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("read %s: %w (remove it if marina did not install %s/marina-*)", file, err, SudoersDir)
	}
	if filepath.Dir(r.Path) != SudoersDir || !strings.HasPrefix(filepath.Base(r.Path), "marina-") || !sudoersArg.MatchString(r.Path) {
		return nil, fmt.Errorf("%s names %q, which is not a drop-in marina writes: remove the record", file, r.Path)
	}
	return &r, nil
}

// SaveSudoers writes the record at file, or removes it when r is nil.
func SaveSudoers(file string, r *SudoersRecord) error {
	if r == nil {
		if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return fileutil.WriteAtomic(file, append(b, '\n'), 0o600)
}
