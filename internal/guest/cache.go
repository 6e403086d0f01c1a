package guest

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/bcollard/marina/internal/registry"
	"github.com/bcollard/marina/internal/run"
	"github.com/bcollard/marina/internal/vm"
)

// cacheRoot is the folder every cache folder these scripts touch sits in:
// the mirrors' caches in the guest, one child per mirror (see
// registry.CacheDir). A variable only so that tests can point it at a
// temporary folder.
var cacheRoot = vm.GuestCacheDir

// checkCacheDirs refuses any folder that is not a clean, absolute path
// naming a direct child of the cache root: a measuring or emptying script
// must never reach anything else ("/", the root itself, a sibling, a
// deeper path). A newline is refused too: du's output is one line per
// folder.
func checkCacheDirs(dirs []string) error {
	for _, d := range dirs {
		if !path.IsAbs(d) || d != path.Clean(d) || path.Dir(d) != cacheRoot || d == cacheRoot || strings.ContainsAny(d, "\x00\n") {
			return fmt.Errorf("refusing the cache folder %q: not a mirror's folder directly under %s (a marina bug: cache folders come from registry.CacheDir)", d, cacheRoot)
		}
	}
	return nil
}

// MeasureDirs is a root script printing a `du -sb` line ("<bytes>\t<dir>")
// for each folder; a missing folder prints nothing. Read its output with
// ParseSizes.
func MeasureDirs(dirs []string) (string, error) {
	// The push registry's storage is measured, never emptied, with them.
	caches := slices.DeleteFunc(slices.Clone(dirs), func(d string) bool { return d == registry.LocalData })
	if err := checkCacheDirs(caches); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("set -u\n")
	for _, d := range dirs {
		// A missing folder or an unreadable file is no reason to fail
		// status: du still prints what it could count.
		fmt.Fprintf(&b, "du -sb -- %s 2>/dev/null || true\n", run.ShellQuote(d))
	}
	return b.String(), nil
}

// MeasureRepos is a root script printing one line "<bytes>\trepos:<dir>":
// the bytes of the blobs that repos link in mirror cache folder dir (see
// registry.HostCache.RepoBytes), each blob once. Run with MeasureDirs'
// script, it is read by ParseSizes too.
func MeasureRepos(dir string, repos []string) (string, error) {
	if err := checkCacheDirs([]string{dir}); err != nil {
		return "", err
	}
	var globs []string
	for _, r := range repos {
		ds := registry.RepoLinkDirs(r)
		if ds == nil {
			return "", fmt.Errorf("refusing the repository %q: not a repository path (a marina bug: repositories come from registry.NodeRepos)", r)
		}
		for _, d := range ds {
			globs = append(globs, run.ShellQuote(path.Join(dir, d))+"/*")
		}
	}
	if len(globs) == 0 {
		return "", nil
	}
	// Each entry is named by a digest's hex; its blob is counted once,
	// when it is a file and not a link. A glob that matches nothing
	// stays itself, which names no blob.
	return fmt.Sprintf(measureRepos, strings.Join(globs, " "), run.ShellQuote(path.Join(dir, "docker/registry/v2/blobs/sha256")), run.ShellQuote(dir)), nil
}

// measureRepos is MeasureRepos' script: the globs, the blobs' folder, the
// cache folder.
const measureRepos = `for l in %s; do
	h=${l##*/}
	case $h in *[!0-9a-f]* | '') continue ;; esac
	[ ${#h} -eq 64 ] && echo "$h"
done | sort -u | while read -r h; do
	f=%s/${h:0:2}/$h/data
	if [ -f "$f" ] && [ ! -L "$f" ]; then stat -c %%s "$f"; fi
done | awk -v d=%s '{ n += $1 } END { printf "%%.0f\trepos:%%s\n", n, d }'
`

// ParseSizes reads MeasureDirs' output: folder → bytes. Lines that are not
// "<bytes>\t<dir>" are ignored.
func ParseSizes(out string) map[string]int64 {
	sizes := map[string]int64{}
	for _, line := range strings.Split(out, "\n") {
		size, dir, ok := strings.Cut(line, "\t")
		if n, err := strconv.ParseInt(size, 10, 64); ok && err == nil && n >= 0 && dir != "" {
			sizes[dir] = n
		}
	}
	return sizes
}

// EmptyDirs is a root script that removes each folder with all it holds
// and makes it again, empty. The first failure ends it with an error.
func EmptyDirs(dirs []string) (string, error) {
	// The push registry's storage, when clean-cache names it.
	caches := slices.DeleteFunc(slices.Clone(dirs), func(d string) bool { return d == registry.LocalData })
	if err := checkCacheDirs(caches); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("set -eu\n")
	for _, d := range dirs {
		q := run.ShellQuote(d)
		fmt.Fprintf(&b, "rm -rf -- %s\nmkdir -p -- %s\n", q, q)
	}
	return b.String(), nil
}

// CachedFiles is a root script printing each of files (paths relative to
// a mirror's cache folder, from registry.BlobFiles), prefixed with the
// folder's name, that is a regular file there. Read its output with
// ParseCached.
func CachedFiles(files map[string][]string) (string, error) {
	var b strings.Builder
	b.WriteString("set -u\n")
	dirs := slices.Sorted(maps.Keys(files))
	if err := checkCacheDirs(dirs); err != nil {
		return "", err
	}
	for _, d := range dirs {
		for _, f := range files[d] {
			if path.IsAbs(f) || f != path.Clean(f) || strings.HasPrefix(f, "..") || strings.ContainsAny(f, "\x00\n") {
				return "", fmt.Errorf("refusing the cache file %q: not a path inside %s (a marina bug: blob files come from registry.BlobFiles)", f, d)
			}
			p := run.ShellQuote(path.Join(d, f))
			fmt.Fprintf(&b, "if [ -f %s ] && [ ! -L %s ]; then printf '%%s\\n' %s; fi\n", p, p, p)
		}
	}
	return b.String(), nil
}

// ParseCached reads CachedFiles' output: the files that are there.
func ParseCached(out string) map[string]bool {
	have := map[string]bool{}
	for line := range strings.SplitSeq(out, "\n") {
		if line != "" {
			have[line] = true
		}
	}
	return have
}
