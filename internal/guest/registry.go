package guest

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/run"
)

// registryObserve prints the sha256 of every mirror config file and
// credential helper in the VM.
const registryObserve = `echo "@@ registry"
for f in ` + registry.ConfigDir + `/*.yml ` + registry.ConfigDir + `/*.auth; do
	if [ -n "${sum[$f]:-}" ]; then echo "${sum[$f]}  $f"; fi
done
`

func parseSums(sec string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(sec, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			out[f[1]] = f[0]
		}
	}
	return out
}

// RegistryApply adds to b what writes each mirror's config file and
// credential helper (root only: it holds upstream credentials), makes its
// cache folder, and removes the files of mirrors that are gone.
//
// An empty folder where a file should be is Docker's: it makes one for a
// bind mount whose file is missing, which a mirror restarting after its
// file was removed once got (marina up removed files before their
// containers until the lab's real clusters showed it). It goes first, or
// the file could not be written there.
func RegistryApply(b *Batch, specs []registry.Spec) error {
	keep := make([]string, 0, 2*len(specs))
	files := registry.ConfigDir + "/*.yml " + registry.ConfigDir + "/*.auth"
	b.Sh(fmt.Sprintf("install -d -m 0700 -o root -g root %s", registry.ConfigDir))
	b.Sh(fmt.Sprintf(`for f in %s; do
	if [ -d "$f" ] && [ ! -L "$f" ]; then
		rmdir "$f" 2>/dev/null || { echo "marina: $f is a folder with files in it, where a mirror's file belongs: look at it, then remove it (marina shell -- sudo rm -r $f)" >&2; exit 1; }
	fi
done`, files))
	for _, s := range specs {
		if err := b.Put(File{Path: s.ConfigFile, Mode: "0600", Content: string(s.Config)}, ""); err != nil {
			return err
		}
		keep = append(keep, run.ShellQuote(path.Base(s.ConfigFile)))
		if s.AuthFile != "" {
			// Run by the container's root: executable, by root only.
			if err := b.Put(File{Path: s.AuthFile, Mode: "0700", Content: string(s.Auth)}, ""); err != nil {
				return err
			}
			keep = append(keep, run.ShellQuote(path.Base(s.AuthFile)))
		}
		b.Sh("mkdir -p " + run.ShellQuote(s.CacheDir))
	}
	sort.Strings(keep)
	b.Sh(fmt.Sprintf(`for f in %s; do
	[ -e "$f" ] || continue
	case "$(basename "$f")" in %s) ;; *) rm -f "$f" ;; esac
done`, files, caseList(keep)))
	return nil
}

func caseList(names []string) string {
	if len(names) == 0 {
		return "''" // matches nothing a file is named
	}
	return strings.Join(names, "|")
}
