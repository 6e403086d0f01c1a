package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
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

// anyGateway stands for the VM's address in a rendered rule: it changes
// when the VM starts again, so the rule takes any.
var anyGateway = netip.IPv4Unspecified()

// Sudoers renders the drop-in that lets user run without a password
// exactly marina's commands as root: the route to cidr through any
// gateway (added, changed, deleted), the resolver file at resolver,
// written from marina's copy at src (its folder made, the file removed),
// and the drop-in's own removal.
// Only route(8) (a Mac) is named by a full path, which sudoers needs.
func (h *Host) Sudoers(user string, cidr netip.Prefix, resolver, src string) (string, error) {
	if h.styleErr != nil {
		return "", h.styleErr
	}
	if !sudoersUser.MatchString(user) {
		return "", fmt.Errorf("the user name %q cannot be named in a sudoers rule as it is", user)
	}
	t := h.tool()
	cmds := [][]string{t.add(cidr, anyGateway), t.change(cidr, anyGateway), t.del(cidr, anyGateway), t.del(cidr, netip.Addr{})}
	if !filepath.IsAbs(cmds[0][0]) {
		return "", errors.New("this host changes routes with ip(8), which marina runs by name, not by a full path a sudoers rule can name: marina sudoers is for a Mac (route(8))")
	}
	self, err := SudoersPath(user)
	if err != nil {
		return "", err
	}
	// Its own removal (marina destroy, marina sudoers --remove) takes away
	// a privilege: it needs no password either.
	cmds = append(cmds, resolverMkdir(filepath.Dir(resolver)), resolverWrite(src, resolver), resolverRemove(resolver), []string{rmTool, "-f", self})
	var lines []string
	for _, c := range cmds {
		var args []string
		for i, a := range c {
			switch {
			case i > 0 && a == anyGateway.String():
				args = append(args, "*")
			case sudoersArg.MatchString(a):
				args = append(args, a)
			default:
				return "", fmt.Errorf("%q cannot be named in a sudoers rule as it is (a space or one of , : = \\ * in it): move it, or keep typing the password", a)
			}
		}
		lines = append(lines, strings.Join(args, " "))
	}
	return "# marina's rule for " + user + ", written by `marina sudoers --install`: the\n" +
		"# commands marina up, down and destroy run as root, without a password.\n" +
		"# The route to the kind network (" + cidr.String() + ") through the VM, whatever address\n" +
		"# the VM has, the resolver file " + resolver + ", and this file's\n" +
		"# removal; nothing else.\n" +
		user + " ALL=(root) NOPASSWD: " + strings.Join(lines, ", \\\n\t") + "\n", nil
}

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
