// Package sudoers renders, installs and removes the sudoers drop-in that
// lets marina change the Mac's route and resolver file without a password.
package sudoers

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"

	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/podnet"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/session"
)

// Options are the flags of marina sudoers.
type Options struct {
	Install bool
	Remove  bool
	DryRun  bool
}

// Report is what marina sudoers found and did.
type Report struct {
	Path    string // the drop-in's path
	Content string // what marina writes there for this config
	// Installed is set when marina's record says it installed the drop-in;
	// Stale when what it installed is not Content (network.cidr or
	// dns.domain changed since).
	Installed, Stale bool
}

// Run renders the sudoers drop-in that lets this user run marina's
// route and resolver commands without a password; with Install it checks
// it with visudo and installs it (one sudo, the last password asked), with
// Remove it removes the one marina installed. The rule names lima0's /24,
// so printing and installing need the VM running; removing does not.
func Run(ctx context.Context, e *session.Env, opts Options) (Report, session.Result, error) {
	if geteuid() == 0 {
		return Report{}, session.Result{}, errors.New("marina sudoers writes a rule for the user who runs it, and this is root, who needs none: run it as yourself")
	}
	u, err := user.Current()
	if err != nil {
		return Report{}, session.Result{}, fmt.Errorf("who runs marina: %w", err)
	}
	var rep Report
	if rep.Path, err = host.SudoersPath(u.Username); err != nil {
		return rep, session.Result{}, err
	}
	rec, err := host.LoadSudoers(e.Paths.Sudoers())
	if err != nil {
		return rep, session.Result{}, err
	}
	if opts.Remove {
		// Needs no VM.
		s, err := session.Open(ctx, e, session.Needs{Config: session.VMOnlyQuiet})
		if err != nil {
			return rep, session.Result{}, err
		}
		defer s.Close()
		if rec == nil {
			return rep, session.Planned(nil, "marina installed no sudoers drop-in"), nil
		}
		step := session.Step{Do: "remove " + rec.Path + " (`sudo " + run.Quote(removeSudoers(rec.Path)) + "`)"}
		if opts.DryRun {
			return rep, session.Planned([]session.Step{step}, ""), nil
		}
		return rep, session.Result{}, Remove(ctx, s, rec)
	}
	// lima0's /24 is where the VM's address moves: the rule names it.
	s, err := session.Open(ctx, e, session.Needs{Config: session.StrictOrDefault, Running: true, Lima0: true})
	if err != nil {
		return rep, session.Result{}, err
	}
	defer s.Close()
	resolver := filepath.Join(host.ResolverDir(), s.Config.DNS.Domain)
	var pods []netip.Prefix
	if s.Config.Network.PodRouting {
		pods = podnet.HostRoutes()
	}
	if rep.Content, err = s.Host.Sudoers(u.Username, s.Config.Network.Prefix(), s.Lima0, resolver, pods...); err != nil {
		return rep, session.Result{}, err
	}
	// Removed by hand, it is not installed, whatever the record says.
	_, statErr := stat(rep.Path)
	rep.Installed = rec != nil && rec.Path == rep.Path && statErr == nil
	rep.Stale = rep.Installed && rec.Content != rep.Content
	if !opts.Install {
		return rep, session.Result{}, nil
	}
	if rep.Installed && !rep.Stale {
		return rep, session.Planned(nil, rep.Path+" is installed and current"), nil
	}
	step := session.Step{Do: "check the drop-in with visudo -c, then install it as " + rep.Path + " (one sudo)"}
	if opts.DryRun {
		return rep, session.Planned([]session.Step{step}, ""), nil
	}
	return rep, session.Result{}, installDropIn(ctx, s, rep)
}

// geteuid and stat are the os's (tests, which run as root in CI and
// install nothing in /etc/sudoers.d, change them).
var (
	geteuid = os.Geteuid
	stat    = os.Stat
)

// installDropIn checks the drop-in with sudo's own parser, then installs
// it root-owned and read-only (sudo ignores a drop-in anyone can write),
// and records it.
func installDropIn(ctx context.Context, s *session.Session, rep Report) error {
	tmp, err := os.CreateTemp(s.Paths.Dir, "sudoers-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(rep.Content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	visudo := "/usr/sbin/visudo"
	if p, err := exec.LookPath("visudo"); err == nil {
		visudo = p
	}
	if out, err := exec.CommandContext(ctx, visudo, "-c", "-q", "-f", tmp.Name()).CombinedOutput(); err != nil {
		return fmt.Errorf("visudo rejects marina's drop-in (a marina bug; nothing was installed): %w\n%s", err, out)
	}
	err = s.Step("Installing "+rep.Path, "Installed "+rep.Path+": marina up, down and destroy change the route and the resolver file without a password", func() error {
		if err := s.Host.Privileged(ctx, []string{"/usr/bin/install", "-m", "0440", "-o", "0", "-g", "0", tmp.Name(), rep.Path}); err != nil {
			return err
		}
		return host.SaveSudoers(s.Paths.Sudoers(), &host.SudoersRecord{Path: rep.Path, Content: rep.Content})
	})
	return err
}

func removeSudoers(path string) []string { return []string{"/bin/rm", "-f", path} }

// Remove removes the drop-in marina recorded, and the record (marina
// destroy too).
func Remove(ctx context.Context, s *session.Session, rec *host.SudoersRecord) error {
	return s.Step("Removing "+rec.Path, "Removed "+rec.Path, func() error {
		if err := s.Host.Privileged(ctx, removeSudoers(rec.Path)); err != nil {
			return err
		}
		return host.SaveSudoers(s.Paths.Sudoers(), nil)
	})
}
