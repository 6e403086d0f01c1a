package guest

import (
	"fmt"
	"path"
	"sort"

	"github.com/bcollard/marina/internal/run"
)

// localMark starts every push registry hosts.toml marina writes: what a
// later up may remove, and nothing else under certs.d.
const localMark = "# Written by marina: localhost:"

// LocalCertsApply adds to b what gives cluster name's certs.d the push
// registry's hosts.toml (files, by path under certs.d: registry.LocalCertsD;
// none when it is off), and removes the ones marina wrote for another
// port. A cluster whose folder is gone is left alone.
func LocalCertsApply(b *Batch, name string, files map[string]string) error {
	dir, err := CertsDir(name)
	if err != nil {
		return err
	}
	keep := make([]string, 0, len(files))
	for k := range files {
		keep = append(keep, run.ShellQuote(path.Dir(k)))
	}
	sort.Strings(keep)
	b.Sh(fmt.Sprintf(`if [ -d %[1]s ]; then
	for d in %[1]s/localhost:*; do
		[ -f "$d/hosts.toml" ] && [ ! -L "$d" ] || continue
		case "${d##*/}" in %[2]s) continue ;; esac
		if head -n 1 "$d/hosts.toml" | grep -q '^%[3]s'; then rm -f "$d/hosts.toml"; rmdir "$d" 2>/dev/null || true; fi
	done
fi`, run.ShellQuote(dir), caseList(keep), localMark))
	ks := make([]string, 0, len(files))
	for k := range files {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		p := path.Join(dir, k)
		b.Sh(fmt.Sprintf("if [ -d %s ]; then mkdir -p %s", run.ShellQuote(dir), run.ShellQuote(path.Dir(p))))
		if err := b.Put(File{Path: p, Mode: "0644", Content: files[k]}, ""); err != nil {
			return err
		}
		b.Sh("fi")
	}
	return nil
}
