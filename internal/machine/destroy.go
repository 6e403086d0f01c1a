package machine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bcollard/marina/internal/cluster"
	"github.com/bcollard/marina/internal/guest"
	"github.com/bcollard/marina/internal/host"
	"github.com/bcollard/marina/internal/kubeconfig"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/session"
	"github.com/bcollard/marina/internal/sudoers"
	"github.com/bcollard/marina/internal/ui"
	"github.com/bcollard/marina/internal/vm"
)

// DestroyOptions are the flags of marina destroy.
type DestroyOptions struct {
	Yes    bool
	DryRun bool
}

// Destroy deletes the VM and everything in it, then what its clusters
// left on the Mac: their kubeconfig files and (kind.autoRemoveKubeconfig)
// their entries in the user's kubeconfig, only what marina wrote, and only
// for the clusters the running VM's Docker lists: ~/.kube/marina is shared
// by every MARINA_HOME, and nothing in a file says which VM it was made
// for. The registry cache on the Mac and the config are kept.
func Destroy(ctx context.Context, e *session.Env, opts DestroyOptions) (session.Result, error) {
	s, err := session.Open(ctx, e, session.Needs{Config: session.VMOnly})
	if err != nil {
		return session.Result{}, err
	}
	defer s.Close()
	name, in := s.Name, s.Instance
	sock := s.Socket()
	var steps []session.Step
	if in != nil {
		steps = append(steps, session.Step{Do: fmt.Sprintf("delete VM %s (%s) and its disk, with every cluster and image in it", name, in.Status)})
	}
	removeSock := staleSocket(sock, in)
	if removeSock {
		steps = append(steps, session.Step{Do: "remove the Docker socket " + sock})
	}
	kc := kubeconfigCleanup(ctx, s)
	steps = append(steps, kc.steps()...)
	unroute, err := routeRemovals(ctx, s)
	if err != nil {
		return session.Result{}, err
	}
	for _, r := range unroute {
		steps = append(steps, r.step())
	}
	dropIn, err := host.LoadSudoers(s.Paths.Sudoers())
	if err != nil {
		return session.Result{}, err
	}
	if dropIn != nil {
		steps = append(steps, session.Step{Do: "remove the sudoers drop-in " + dropIn.Path + " that marina sudoers installed"})
	}
	if len(steps) == 0 {
		return session.Planned(nil, "VM "+name+" does not exist"), nil
	}
	if opts.DryRun {
		return session.Planned(steps, ""), nil
	}
	// Whatever cannot be made again is asked for: the VM, and the
	// kubeconfigs of its clusters.
	if destructive := in != nil || kc.removes(); destructive && !opts.Yes {
		if !e.TTY {
			return session.Result{}, fmt.Errorf("marina destroy %s and needs a confirmation: run it in a terminal, or pass -y", destroyWhat(s, kc))
		}
		if !ui.Confirm(e.Stdin, e.Stderr, destroyQuestion(s, kc)) {
			return session.Result{}, session.ErrCancelled
		}
	}
	// The VM first: while it is there, so are its clusters, and their
	// kubeconfigs stay usable when its deletion fails.
	if in != nil {
		if err := e.Step("Deleting VM "+name, "Deleted VM "+name, func() error { return s.VM.Delete(ctx, name) }); err != nil {
			return session.Result{}, err
		}
	}
	// Lima leaves the forwarded socket behind when the VM goes away; one
	// that still answers belongs to another VM of the same name (another
	// MARINA_HOME) and stays.
	if removeSock || (in != nil && staleSocket(sock, nil)) {
		if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return session.Result{}, fmt.Errorf("remove %s: %w", sock, err)
		}
	}
	// up's note of the VM's provisioning is about a VM that is gone,
	// unless it names another (vm.name changed since).
	if seen, err := guest.LoadSeen(s.Paths.Provisioned()); in != nil && (err != nil || (seen != nil && seen.VM == name)) {
		if err := os.Remove(s.Paths.Provisioned()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.UI.Warnf("remove %s: %v (marina version would still describe the VM that was deleted)", s.Paths.Provisioned(), err)
		}
	}
	// A kubeconfig that cannot go is said with its fix and stops nothing:
	// it points at a VM that is gone, while a route left behind would
	// keep sending the kind network to it.
	kcErr := kc.apply(s)
	routeErr := removeRoutes(ctx, s, unroute)
	// Last: the route's removal may have needed it.
	var dropErr error
	if dropIn != nil {
		dropErr = sudoers.Remove(ctx, s, dropIn)
	}
	return session.Result{}, errors.Join(kcErr, routeErr, dropErr)
}

// destroyWhat says what destroy deletes that needs a confirmation.
func destroyWhat(s *session.Session, kc kubeconfigs) string {
	var what []string
	if s.Instance != nil {
		what = append(what, fmt.Sprintf("deletes VM %s with every cluster in it", s.Name))
	}
	if kc.removes() {
		what = append(what, "removes the kubeconfigs of "+strings.Join(kc.removed(), ", "))
	}
	return strings.Join(what, ", ")
}

// destroyQuestion asks to delete the VM, naming its clusters and what of
// theirs goes from the Mac with it.
func destroyQuestion(s *session.Session, kc kubeconfigs) string {
	var b strings.Builder
	if s.Instance != nil {
		fmt.Fprintf(&b, "Delete VM %s and every cluster and image in it", s.Name)
		if len(kc.names) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(kc.names, ", "))
		}
	} else {
		fmt.Fprintf(&b, "Remove what is left of the clusters of VM %s (%s)", s.Name, strings.Join(kc.removed(), ", "))
	}
	switch {
	case len(kc.files) > 0 && len(kc.entries) > 0:
		fmt.Fprintf(&b, ", with their kubeconfig files in %s and their entries in %s", s.Paths.KubeconfigDir(), kc.target)
	case len(kc.files) > 0:
		fmt.Fprintf(&b, ", with their kubeconfig files in %s", s.Paths.KubeconfigDir())
	case len(kc.entries) > 0:
		fmt.Fprintf(&b, ", with their entries in %s", kc.target)
	}
	if kc.unknown {
		fmt.Fprintf(&b, "? (the kubeconfigs in %s and the registry cache in %s are kept)", kubeconfigDirShown, s.Paths.RegistryCache())
	} else {
		fmt.Fprintf(&b, "? (the registry cache in %s is kept)", s.Paths.RegistryCache())
	}
	return b.String()
}

// kubeconfigDirShown is how destroy names marina's kubeconfig folder in
// what it says of the files it leaves, and in the commands that remove
// one (config.Paths.KubeconfigDir, under $HOME).
const kubeconfigDirShown = "~/.kube/marina"

// kubeconfigs are what destroy removes of the clusters' kubeconfigs.
type kubeconfigs struct {
	// names are the VM's clusters as its Docker lists them: none when it
	// does not run or its Docker cannot list them (unknown).
	names []string
	// unknown is true when the VM's clusters are not known: nothing in
	// marina's folder, which every MARINA_HOME shares, is then removed.
	unknown bool
	// files are their own kubeconfig files that marina wrote.
	files []string
	// target is the user's kubeconfig, and entries the clusters with a
	// context there that marina wrote (kind.autoRemoveKubeconfig).
	target  string
	entries []string
}

// removes reports whether kc removes anything.
func (kc kubeconfigs) removes() bool { return len(kc.files)+len(kc.entries) > 0 }

// removed are the clusters whose file or entries kc removes, sorted.
func (kc kubeconfigs) removed() []string {
	var names []string
	for _, f := range kc.files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".kubeconfig"))
	}
	names = ui.Dedupe(append(names, kc.entries...))
	sort.Strings(names)
	return names
}

// kubeconfigCleanup finds what destroy removes of the clusters'
// kubeconfigs, and says what it leaves and why. It looks only: Docker (no
// guest round trip) and the files. Only the clusters the running VM's
// Docker lists are taken for its own; when they cannot be listed nothing
// is removed, and the files left are named with the commands that remove
// one.
func kubeconfigCleanup(ctx context.Context, s *session.Session) kubeconfigs {
	e := s.Env
	var kc kubeconfigs
	var why string
	switch {
	case s.Instance == nil:
		why = fmt.Sprintf("VM %s does not exist", s.Name)
	case !s.Running():
		why = fmt.Sprintf("VM %s is %s", s.Name, s.Instance.Status)
	default:
		infos, err := s.ListClusters(ctx)
		if err != nil {
			why = fmt.Sprintf("the clusters of VM %s cannot be listed (%v)", s.Name, session.DockerCause(err))
		} else {
			kc.names = cluster.Names(infos)
		}
	}
	target := e.KubeconfigTarget()
	if why != "" {
		kc.unknown = true
		left := kubeconfigFileNames(e.Paths.KubeconfigDir())
		if len(left) == 0 {
			return kc
		}
		for i, n := range left {
			left[i] = n + ".kubeconfig"
		}
		e.UI.Printf("The kubeconfigs in %[1]s stay: %[2]s, so marina cannot tell which of them were its clusters' (%[1]s is shared by every MARINA_HOME). "+
			"There: %[3]s. For one that was VM %[4]s's, `marina kubeconfig remove NAME` removes its entries from %[5]s and `rm %[1]s/NAME.kubeconfig` its file.",
			kubeconfigDirShown, why, strings.Join(left, ", "), s.Name, target)
		return kc
	}
	for _, n := range kc.names {
		path, err := e.Paths.Kubeconfig(n) // names from Docker are checked in cluster.Group
		if err != nil {
			continue
		}
		switch ok, err := kubeconfig.Own(path, n, s.KubeOwner(false)); {
		case err != nil:
			e.UI.Warnf("%s is left as it is: %v; if it is a leftover, `rm %s` removes it", path, err, run.ShellQuote(path))
		case ok:
			kc.files = append(kc.files, path)
		}
	}
	var have []string
	for _, n := range kc.names {
		switch ok, err := kubeconfig.Has(target, n, s.KubeOwner(false)); {
		case err != nil:
			e.UI.Warnf("%s cannot be read (%v): the entries of %s stay; `marina kubeconfig remove %s` removes them once it can be read", target, err, n, n)
		case ok:
			have = append(have, n)
		default:
			// An older marina's entries of the name: whose, it did not say.
			if old, _ := kubeconfig.Has(target, n, s.KubeOwner(true)); old {
				e.UI.Warnf("the entries of %s in %s are an older marina's, which did not record its home: they stay; `marina kubeconfig remove %s` removes them if they were this VM's", n, target, n)
			}
		}
	}
	switch {
	case len(have) == 0:
	case s.File.Err != nil:
		e.UI.Warnf("kind.autoRemoveKubeconfig is not read from an invalid config: the entries of %s in %s stay (`marina kubeconfig remove %s` removes them)", strings.Join(have, ", "), target, strings.Join(have, " "))
	case !s.Config.Kind.AutoRemoveKubeconfig:
		e.UI.Printf("The entries of %s in %s stay (kind.autoRemoveKubeconfig is false): `marina kubeconfig remove %s` removes them", strings.Join(have, ", "), target, strings.Join(have, " "))
	default:
		kc.target, kc.entries = target, have
	}
	return kc
}

// kubeconfigFileNames are the cluster names of the kubeconfig files in
// marina's folder dir, sorted: what destroy names as left when it cannot
// tell whose they are. A file whose name is no cluster name is not marina's
// and is not named (nor printed).
func kubeconfigFileNames(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil // no folder: no files
	}
	var names []string
	for _, d := range ents {
		n, ok := strings.CutSuffix(d.Name(), ".kubeconfig")
		if ok && cluster.CheckName(n) == nil {
			names = append(names, n)
		}
	}
	return names
}

// steps are the plan lines of the kubeconfig cleanup.
func (kc kubeconfigs) steps() []session.Step {
	var out []session.Step
	if len(kc.files) > 0 {
		base := make([]string, len(kc.files))
		for i, f := range kc.files {
			base[i] = filepath.Base(f)
		}
		out = append(out, session.Step{Do: fmt.Sprintf("remove the kubeconfig %s %s from %s", map[bool]string{true: "file", false: "files"}[len(base) == 1], strings.Join(base, ", "), filepath.Dir(kc.files[0]))})
	}
	if len(kc.entries) > 0 {
		out = append(out, session.Step{Do: fmt.Sprintf("remove the cluster, user and context entries of %s that marina wrote from %s", strings.Join(kc.entries, ", "), kc.target), Reason: "kind.autoRemoveKubeconfig"})
	}
	return out
}

// apply removes what kc found, all of it even when a part fails: each
// failure names what is left and the command that removes it.
func (kc kubeconfigs) apply(s *session.Session) error {
	if !kc.removes() {
		return nil
	}
	e := s.Env
	names := kc.removed()
	return e.Step("Removing the kubeconfigs of "+strings.Join(names, ", "), "Removed the kubeconfigs of "+strings.Join(names, ", "), func() error {
		var errs []error
		for _, f := range kc.files {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("the kubeconfig file of %s is left: %w; `rm %s` removes it", strings.TrimSuffix(filepath.Base(f), ".kubeconfig"), err, run.ShellQuote(f)))
			}
		}
		for _, n := range kc.entries {
			r, err := kubeconfig.Remove(kc.target, n, s.KubeOwner(false))
			if err != nil {
				errs = append(errs, fmt.Errorf("the entries of %s stay in %s: %w; `marina kubeconfig remove %s` removes them once that is fixed", n, kc.target, err, n))
			}
			if len(r.Foreign) > 0 {
				e.UI.Warnf("%s has a %s named %s that marina did not write: it was left as it is", kc.target, strings.Join(r.Foreign, ", "), n)
			}
		}
		return errors.Join(errs...)
	})
}

// staleSocket reports whether the Docker socket at sock is a leftover
// marina may remove: a socket that nothing answers on. in is this home's
// VM: while it exists, its socket is its own.
func staleSocket(sock string, in *vm.Instance) bool {
	st, err := os.Lstat(sock)
	if err != nil || st.Mode()&os.ModeSocket == 0 || in != nil {
		return false
	}
	return !socketAnswers(sock)
}

// socketAnswers reports whether something accepts connections on sock.
func socketAnswers(sock string) bool {
	c, err := net.DialTimeout("unix", sock, 500*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
