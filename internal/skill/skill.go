// Package skill renders marina's agent skill from the command tree (so it
// names nothing marina lacks) and installs it where Claude Code finds it,
// never writing through a link.
package skill

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bcollard/marina/internal/fileutil"
)

// Path is where Claude Code finds the marina skill of the user whose
// home folder is home.
func Path(home string) string {
	return filepath.Join(home, ".claude", "skills", "marina", "SKILL.md")
}

// Options are marina skill install's flags.
type Options struct {
	Force  bool // replace a file that is there
	DryRun bool // say what would happen, write nothing
}

// Outcome is what Install did, or would do with DryRun.
type Outcome int

const (
	// Written: there was no file; it was written.
	Written Outcome = iota
	// Replaced: a file was there and Force replaced it.
	Replaced
	// Unchanged: the file there is this content already.
	Unchanged
	// Kept: a file with other content is there and was kept (no Force).
	Kept
)

// maxRead bounds what Install reads of a file that is there, to
// compare it: a skill is tens of kilobytes.
const maxRead = 4 << 20

// Install writes content to Path(home): the file 0644, and each
// folder it creates 0755 (~/.claude itself, when missing, 0700: it holds
// Claude Code's own credentials and history), whatever the umask. A file
// that is there is kept byte for byte unless o.Force; with it, the file is
// replaced in one rename. The skill's own folder and file must be a real
// folder and a regular file: a link at either (or a FIFO, a device) is
// refused, naming it, so nothing is written through it (S12). Nothing is
// read or written outside ~/.claude/skills/marina.
func Install(home string, content []byte, o Options) (Outcome, error) {
	if home == "" {
		return 0, errors.New("cannot find your home folder: set HOME")
	}
	path := Path(home)
	if st, err := os.Lstat(filepath.Dir(path)); err == nil && !st.IsDir() {
		return 0, fmt.Errorf("%s is %s, not a folder: marina writes its skill into a folder of its own only, and changed nothing; remove it (rm %s) and run it again", filepath.Dir(path), kindOf(st.Mode()), filepath.Dir(path))
	}
	st, err := os.Lstat(path)
	if err == nil && !st.IsDir() && !st.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is %s, not a skill file: marina changed nothing; remove it (rm %s) and run it again", path, kindOf(st.Mode()), path)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if o.DryRun {
			return Written, nil
		}
		if err := makeDirs(home); err != nil {
			return 0, err
		}
		if err := fileutil.WriteAtomic(path, content, 0o644); err != nil {
			return 0, err
		}
		return Written, nil
	case err != nil:
		return 0, err
	case st.IsDir():
		return 0, fmt.Errorf("%s is a folder, not a skill file: move it away first", path)
	}
	if !o.Force {
		if sameFile(path, content) {
			return Unchanged, nil
		}
		return Kept, nil
	}
	if o.DryRun {
		return Replaced, nil
	}
	if err := fileutil.WriteAtomic(path, content, 0o644); err != nil {
		return 0, err
	}
	return Replaced, nil
}

// sameFile reports whether path is a regular file (through a symlink too)
// holding exactly content. Anything else, a FIFO say, is not opened.
func sameFile(path string, content []byte) bool {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() != int64(len(content)) {
		return false
	}
	b, err := fileutil.ReadRegular(path, maxRead)
	return err == nil && bytes.Equal(b, content)
}

// makeDirs creates the folders of Path(home) that are missing, with
// their modes set explicitly so that the umask does not narrow them;
// folders that exist are left as they are.
func makeDirs(home string) error {
	claude := filepath.Join(home, ".claude")
	skills := filepath.Join(claude, "skills")
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{claude, 0o700}, {skills, 0o755}, {filepath.Join(skills, "marina"), 0o755}} {
		err := os.Mkdir(d.path, d.mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("create %s: %w", d.path, err)
		}
		if err := os.Chmod(d.path, d.mode); err != nil {
			return fmt.Errorf("create %s: %w", d.path, err)
		}
	}
	return nil
}

// kindOf names a file's type for messages: "a symbolic link to …" is said
// by the caller's path; here, what it is.
func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsRegular():
		return "a file"
	}
	return "a " + m.Type().String()
}
