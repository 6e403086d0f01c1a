package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/fileutil"
)

// ResolverDirEnv moves the resolver folder (default /etc/resolver, which
// macOS reads, resolver(5)); the lab points it into its own folders, so
// that a test never writes the machine's /etc.
const ResolverDirEnv = "MARINA_RESOLVER_DIR"

// DefaultResolverDir is where macOS looks for per-domain resolvers.
const DefaultResolverDir = "/etc/resolver"

// The tools the resolver file is changed with, at the paths macOS (and
// Debian) have them; sudo runs them by absolute path.
const (
	installTool = "/usr/bin/install"
	rmTool      = "/bin/rm"
)

// ResolverDir is the folder of per-domain resolver files.
func ResolverDir() string {
	if d := os.Getenv(ResolverDirEnv); filepath.IsAbs(d) {
		return filepath.Clean(d)
	}
	return DefaultResolverDir
}

// resolverPath reports whether p is a file marina may write: a domain's
// file directly in the resolver folder (so a record naming any other path
// never makes marina touch it).
func resolverPath(p string) bool {
	return filepath.Clean(p) == p && filepath.Dir(p) == ResolverDir() && config.IsDomain(filepath.Base(p))
}

// ResolverState is one domain's resolver file.
type ResolverState string

// The states of a resolver file.
const (
	ResolverOK      ResolverState = "present"
	ResolverMissing ResolverState = "missing"
	ResolverStale   ResolverState = "stale"   // marina's, with other content
	ResolverForeign ResolverState = "foreign" // not marina's: left alone
)

// Resolver is what the host has for one domain's resolver file.
type Resolver struct {
	Path  string
	Want  string
	Have  string // "" when missing
	State ResolverState
	Why   string // what made a file foreign besides its content
}

func (r Resolver) String() string {
	switch r.State {
	case ResolverForeign:
		why := ""
		if r.Why != "" {
			why = " (" + r.Why + ")"
		}
		return fmt.Sprintf("%s exists and marina did not write it%s: marina leaves it alone, and names under %s may not reach marina's DNS; remove it or choose another dns.domain", r.Path, why, filepath.Base(r.Path))
	case ResolverStale:
		return r.Path + " names another server"
	}
	return r.Path + " " + string(r.State)
}

// ReadResolver reads domain's resolver file in dir against want.
func ReadResolver(dir, domain, want string, made *Made) (Resolver, error) {
	r := Resolver{Path: filepath.Join(dir, domain), Want: want}
	if !config.IsDomain(domain) {
		return r, fmt.Errorf("%q is not a domain name", domain)
	}
	// A link (even a dangling one), a folder or a file marina cannot
	// read is not marina's: it is reported and left alone, and up goes
	// on.
	fi, err := os.Lstat(r.Path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		r.State = ResolverMissing
		return r, nil
	case err != nil:
		r.State, r.Why = ResolverForeign, err.Error()
		return r, nil
	case !fi.Mode().IsRegular():
		r.State, r.Why = ResolverForeign, "it is a "+fi.Mode().Type().String()+", not a file"
		return r, nil
	}
	b, err := fileutil.ReadRegular(r.Path, 1<<16)
	if err != nil {
		r.State, r.Why = ResolverForeign, err.Error()
		return r, nil
	}
	r.Have = string(b)
	wrote, mine := made.wrote(r.Path)
	switch {
	case r.Have == want:
		r.State = ResolverOK
	case mine && r.Have == wrote:
		r.State = ResolverStale
	default:
		r.State = ResolverForeign
	}
	return r, nil
}

// ResolverFix are the commands that write r from src (marina's copy of
// the content, readable by root): none when it is right or not marina's.
func ResolverFix(r Resolver, src string) [][]string {
	switch r.State {
	case ResolverMissing, ResolverStale:
	default:
		return nil
	}
	var out [][]string
	if _, err := os.Stat(filepath.Dir(r.Path)); errors.Is(err, os.ErrNotExist) {
		out = append(out, resolverMkdir(filepath.Dir(r.Path)))
	}
	return append(out, resolverWrite(src, r.Path))
}

// The commands, run as root, that make the resolver folder, write a
// resolver file from marina's copy, and remove one (Sudoers names them).
func resolverMkdir(dir string) []string       { return []string{installTool, "-d", "-m", "0755", dir} }
func resolverWrite(src, path string) []string { return []string{installTool, "-m", "0644", src, path} }
func resolverRemove(path string) []string     { return []string{rmTool, "-f", path} }

// Removal is the removal of one resolver file marina wrote.
type Removal struct {
	Path string
	Argv []string // the command, run as root
}

// ResolverRemovals remove the resolver files marina wrote and that still
// hold what it wrote; keep is a path not to remove ("" for none).
func ResolverRemovals(made *Made, keep string) []Removal {
	var out []Removal
	for _, m := range made.Resolvers {
		if m.Path == keep {
			continue
		}
		b, err := fileutil.ReadRegular(m.Path, 1<<16)
		if err != nil || string(b) != m.Content {
			continue // gone, or changed since: not marina's to remove
		}
		out = append(out, Removal{Path: m.Path, Argv: resolverRemove(m.Path)})
	}
	return out
}

// Quoted lists commands for a plan line.
func Quoted(cmds [][]string, quote func([]string) string) string {
	parts := make([]string, len(cmds))
	for i, c := range cmds {
		parts[i] = "sudo " + quote(c)
	}
	return strings.Join(parts, " && ")
}

// FlushDNS is what empties macOS's DNS cache, Apple's own way: the
// directory service's cache, then mDNSResponder's, which it empties on
// SIGHUP. Both need root. mDNSResponder keeps a missing name at least 60 s
// and doubles that while the name is asked for (its negative cache), so a
// name looked up before it existed may stay missing for a minute or more:
// this is the way out. There is no such cache behind marina's resolver on
// Linux (ip style): an error says so.
func (h *Host) FlushDNS() ([][]string, error) {
	if h.styleErr != nil {
		return nil, h.styleErr
	}
	s := h.Style
	if s == "" {
		s = platformStyle(runtime.GOOS)
	}
	if s != BSD {
		return nil, errors.New("marina dns flush empties macOS's DNS cache (mDNSResponder), and this host is not a Mac (it routes with ip(8)): there is no mDNSResponder here; flush your own caching resolver if you run one (resolvectl flush-caches)")
	}
	return [][]string{
		{"/usr/bin/dscacheutil", "-flushcache"},
		{"/usr/bin/killall", "-HUP", "mDNSResponder"},
	}, nil
}
