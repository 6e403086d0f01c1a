package app

import "github.com/bcollard/marina/internal/config"

// warnHost warns about the settings of the valid config l that this Mac
// cannot honour (vm.rosetta off Apple silicon): they stop nothing, so they
// are said once, as the command reads the config. Session.readConfig calls
// it for the commands that read the config strictly (up, cluster create, …);
// the lenient ones (status, down, destroy, …) leave vm.rosetta alone.
func (e *Env) warnHost(l config.Lenient) {
	if l.File == "" {
		l.File = e.Paths.Config
	}
	for _, w := range l.HostWarnings(e.HostArch) {
		e.UI.Warnf("%s", w)
	}
}
