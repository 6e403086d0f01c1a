package machine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bcollard/marina/internal/config"
	"github.com/bcollard/marina/internal/dns"
	"github.com/bcollard/marina/internal/docker"
	"github.com/bcollard/marina/internal/fileutil"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/session"
)

// dnsPlan is what up does to the local DNS: its two containers, the
// Corefile in the VM and the host's resolver file.
type dnsPlan struct {
	specs   []dns.Spec
	writes  bool // the Corefile in the VM needs writing
	create  []dns.Spec
	remove  []docker.Container
	reasons map[string]string
	// auth: etcd's users are to be set up (a new etcd container, or one
	// marina has not set them up in).
	auth bool

	resolver host.Resolver
	fix      [][]string     // write the resolver file
	src      string         // marina's copy the fix installs
	drop     []host.Removal // resolver files of an older dns.domain
}

// planDNS compares the wanted DNS containers with those found, the
// Corefile's sum in the VM and the resolver file.
func planDNS(specs []dns.Spec, have []docker.Container, sum, authed string) dnsPlan {
	p := dnsPlan{specs: specs, reasons: map[string]string{}}
	byRole := map[string]docker.Container{}
	for _, c := range have {
		r := c.Labels[dns.LabelRole]
		if _, dup := byRole[r]; dup {
			// Two for one role (an interrupted recreate): the extra goes.
			p.remove = append(p.remove, c)
			p.reasons[c.Name] = "a second container for the local DNS's " + r
			continue
		}
		byRole[r] = c
	}
	for _, s := range specs {
		fileOK := s.FilePath == "" || sum == s.FileSum()
		if !fileOK {
			p.writes = true
		}
		c, ok := byRole[s.Role]
		reason := containerDrift(c, ok, s.Name, s.Digest, dns.LabelConfig, fileOK)
		if reason == "" {
			continue
		}
		if ok {
			p.remove = append(p.remove, c)
		}
		p.create = append(p.create, s)
		p.reasons[s.Name] = reason
	}
	for _, c := range have {
		if r := c.Labels[dns.LabelRole]; r != dns.RoleEtcd && r != dns.RoleServer {
			p.remove = append(p.remove, c) // a role this marina does not run
			p.reasons[c.Name] = "not one of marina's DNS containers"
		}
	}
	etcd, ok := byRole[dns.RoleEtcd]
	p.auth = !ok || p.recreates(dns.EtcdName) || etcd.ID != authed
	return p
}

func (p dnsPlan) steps() []session.Step {
	var out []session.Step
	if p.writes {
		out = append(out, session.Step{Do: "write the local DNS server's Corefile to " + dns.CorefilePath + " in the VM"})
	}
	for _, c := range p.remove {
		if !p.recreates(c.Name) {
			out = append(out, session.Step{Do: "remove the container " + c.Name, Reason: p.reasons[c.Name]})
		}
	}
	for _, s := range p.create {
		verb := "run"
		if p.reasons[s.Name] != "new" {
			verb = "recreate"
		}
		out = append(out, session.Step{Do: fmt.Sprintf("%s the local DNS's %s at %s (%s)", verb, s.Name, s.IP, s.Image), Reason: p.reasons[s.Name]})
	}
	if p.auth {
		out = append(out, session.Step{Do: "set up the users of the local DNS's etcd and turn its authentication on: marina's root, marina-dns reading every name, and one per cluster for its ExternalDNS, which may use its own zone only"})
	}
	if p.fix != nil {
		out = append(out, session.Step{Do: "send names under " + filepath.Base(p.resolver.Path) + " to the local DNS: " + host.Quoted(p.fix, run.Quote), Reason: "now " + string(p.resolver.State)})
	}
	for _, r := range p.drop {
		out = append(out, session.Step{Do: "remove the resolver file " + r.Path + ", which marina wrote for another dns.domain: sudo " + run.Quote(r.Argv)})
	}
	return out
}

func (p dnsPlan) recreates(name string) bool {
	for _, s := range p.create {
		if s.Name == name {
			return true
		}
	}
	return false
}

// planResolver adds the resolver file's fix (and the removal of files
// left from another dns.domain) to p.
func (p *dnsPlan) planResolver(paths config.Paths, domain string, r host.Resolver, made *host.Made) {
	p.resolver = r
	p.src = paths.ResolverCopy(domain)
	p.fix = host.ResolverFix(r, p.src)
	p.drop = host.ResolverRemovals(made, r.Path)
}

// applyDNS (re)creates the DNS containers; the Corefile is in the VM.
func applyDNS(ctx context.Context, dc session.Docker, p dnsPlan) error {
	for _, c := range p.remove {
		if err := dc.Remove(ctx, c.ID); err != nil {
			return err
		}
	}
	for _, s := range p.create {
		if err := dc.EnsureImage(ctx, s.Image); err != nil {
			return err
		}
		err := dc.Run(ctx, docker.RunSpec{
			Name: s.Name, Image: s.Image, Cmd: s.Cmd, IP: s.IP, Binds: s.Binds, User: s.User,
			Labels: map[string]string{dns.LabelRole: s.Role, dns.LabelConfig: s.Digest},
		})
		if err != nil && strings.Contains(err.Error(), "Address already in use") {
			return fmt.Errorf("%w\nanother container on the kind network holds %s, which the local DNS needs: `marina shell -- docker network inspect kind` shows which", err, s.IP)
		}
		if err != nil {
			if strings.Contains(err.Error(), "already in use") {
				return fmt.Errorf("%w\na container marina did not make is named %s: remove it (`marina shell -- docker rm -f %s`)", err, s.Name, s.Name)
			}
			return err
		}
	}
	return nil
}

// applyResolver writes the resolver file through sudo (marina's copy
// first), removes those of an older domain, and records both.
func applyResolver(ctx context.Context, s *session.Session, p dnsPlan, made *host.Made) error {
	if p.fix != nil {
		err := s.Step("Sending names under "+filepath.Base(p.resolver.Path)+" to the local DNS ("+p.resolver.Path+")", "", func() error {
			if err := os.MkdirAll(filepath.Dir(p.src), 0o700); err != nil {
				return err
			}
			// Root copies it from here: readable, and only marina's.
			if err := fileutil.WriteAtomic(p.src, []byte(p.resolver.Want), 0o644); err != nil {
				return err
			}
			for _, c := range p.fix {
				if err := s.Host.Privileged(ctx, c); err != nil {
					return err
				}
			}
			return made.Wrote(p.resolver.Path, p.resolver.Want)
		})
		if err != nil {
			return err
		}
	}
	return removeResolvers(ctx, s, made, p.drop)
}

// removeResolvers runs the removals of resolver files and forgets them.
func removeResolvers(ctx context.Context, s *session.Session, made *host.Made, rms []host.Removal) error {
	for _, r := range rms {
		err := s.Step("Removing "+r.Path, "", func() error {
			if err := s.Host.Privileged(ctx, r.Argv); err != nil {
				return err
			}
			// marina's copy it was installed from goes too.
			if err := os.Remove(s.Paths.ResolverCopy(filepath.Base(r.Path))); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			return made.Removed(r.Path)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// loadOwnMade reads marina's record of what it made on the host, for
// cfg, and says what in it is not marina's now (left alone).
func loadOwnMade(s *session.Session, cfg config.Config, valid bool) (*host.Made, error) {
	made, err := host.LoadMade(s.Paths.Routes(), session.HostOwn(cfg, valid))
	if err != nil {
		return nil, err
	}
	if len(made.Ignored) > 0 && s.UI != nil {
		s.UI.Warnf("%s records %s, which %s not marina's now (only network.cidr's route and dns.domain's resolver file are): left alone; if it is a leftover of marina's, remove it by hand", s.Paths.Routes(), strings.Join(made.Ignored, " and "), pluralVerb(len(made.Ignored)))
	}
	return made, nil
}

func pluralVerb(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
