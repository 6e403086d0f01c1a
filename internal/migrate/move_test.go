package migrate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// cache makes a small mirror cache at dir: nested folders, files with
// their own modes, a symlink.
func cache(t *testing.T, dir string) {
	t.Helper()
	for p, body := range map[string]string{
		"docker/registry/v2/blobs/sha256/ab/abcd/data":                "layer bytes",
		"docker/registry/v2/repositories/library/alpine/_layers/x":    "link",
		"docker/registry/v2/repositories/library/alpine/_manifests/y": "",
	} {
		f := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "docker/registry/v2/blobs/sha256/ab/abcd/data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../alpine", filepath.Join(dir, "docker/registry/v2/repositories/library/latest")); err != nil {
		t.Fatal(err)
	}
}

// exdev stands for a rename across file systems.
func exdev(from, to string) error {
	return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EXDEV}
}

func snapshot(t *testing.T, dir string) map[string]entry {
	t.Helper()
	tr, err := tree(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestMoveSameFileSystem(t *testing.T) {
	root := t.TempDir()
	src, dst := filepath.Join(root, "klimax", "registry-dockerio"), filepath.Join(root, "marina", "registry-dockerio")
	cache(t, src)
	want := snapshot(t, src)
	how, err := Mover{}.Move(src, dst)
	if err != nil || how != Renamed {
		t.Fatalf("Move = %q, %v; want %q", how, err, Renamed)
	}
	if _, err := os.Lstat(src); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the source is still there: %v", err)
	}
	// Run again (a migration resumed after this step): nothing to do.
	if how, err := (Mover{}).Move(src, dst); err != nil || how != Finished {
		t.Fatalf("a second Move = %q, %v; want %q", how, err, Finished)
	}
	if got := snapshot(t, dst); len(got) != len(want) {
		t.Fatalf("moved tree has %d entries, want %d", len(got), len(want))
	}
}

func TestMoveAcrossFileSystems(t *testing.T) {
	root := t.TempDir()
	src, dst := filepath.Join(root, "klimax", "registry-quayio"), filepath.Join(root, "marina", "registry-quayio")
	cache(t, src)
	want := snapshot(t, src)
	how, err := Mover{Rename: exdev}.Move(src, dst)
	if err != nil || how != Copied {
		t.Fatalf("Move = %q, %v; want %q", how, err, Copied)
	}
	got := snapshot(t, dst)
	for p, e := range want {
		if got[p] != e {
			t.Errorf("%s: copied as %+v, was %+v (modes, contents and links must survive)", p, got[p], e)
		}
	}
	if _, err := os.Lstat(src); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the source should go once the copy is verified: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "marina", ".registry-quayio.migrating")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the copy's working folder was left behind")
	}
}

// A run stopped in the middle of a copy leaves a partial working folder:
// the next run starts the copy over and the result is whole.
func TestMoveResumesAnInterruptedCopy(t *testing.T) {
	root := t.TempDir()
	src, dst := filepath.Join(root, "klimax", "m"), filepath.Join(root, "marina", "m")
	cache(t, src)
	want := snapshot(t, src)
	partial := filepath.Join(root, "marina", ".m.migrating")
	if err := os.MkdirAll(filepath.Join(partial, "docker"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(partial, "docker", "half"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (Mover{Rename: exdev}).Move(src, dst); err != nil {
		t.Fatal(err)
	}
	got := snapshot(t, dst)
	if len(got) != len(want) {
		t.Fatalf("after the resumed copy: %d entries, want %d (the partial file must not survive)", len(got), len(want))
	}
}

// Stopped after the copy was renamed into place but before the source
// went: both are there and equal, so the move finishes.
func TestMoveFinishesACompleteCopy(t *testing.T) {
	root := t.TempDir()
	src, dst := filepath.Join(root, "a"), filepath.Join(root, "b")
	cache(t, src)
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	how, err := Mover{}.Move(src, dst)
	if err != nil || how != Finished {
		t.Fatalf("Move = %q, %v; want %q", how, err, Finished)
	}
	if _, err := os.Lstat(src); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the source should go: the copy is complete")
	}
}

// Two different trees: nothing is touched, and the error says both.
func TestMoveRefusesTwoDifferentTrees(t *testing.T) {
	root := t.TempDir()
	src, dst := filepath.Join(root, "a"), filepath.Join(root, "b")
	cache(t, src)
	cache(t, dst)
	if err := os.WriteFile(filepath.Join(dst, "docker", "extra"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	before, beforeDst := snapshot(t, src), snapshot(t, dst)
	_, err := Mover{}.Move(src, dst)
	if err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("Move = %v; want a refusal that changed nothing", err)
	}
	if len(snapshot(t, src)) != len(before) || len(snapshot(t, dst)) != len(beforeDst) {
		t.Fatal("a refused move changed a tree")
	}
}

// An empty folder where the source goes (marina's mount point for a cache
// not filled yet) is no conflict: the move takes its place, on the same
// file system and across two; a folder with anything in it, even an empty
// folder, is a conflict.
func TestMoveIntoAnEmptyFolder(t *testing.T) {
	for _, m := range []Mover{{}, {Rename: exdev}} {
		root := t.TempDir()
		src, dst := filepath.Join(root, "a"), filepath.Join(root, "b")
		cache(t, src)
		want := snapshot(t, src)
		if err := os.Mkdir(dst, 0o700); err != nil {
			t.Fatal(err)
		}
		if how, err := m.Move(src, dst); err != nil || len(snapshot(t, dst)) != len(want) {
			t.Fatalf("Move into an empty folder = %q, %v", how, err)
		}
	}
	root := t.TempDir()
	src, dst := filepath.Join(root, "a"), filepath.Join(root, "b")
	cache(t, src)
	if err := os.MkdirAll(filepath.Join(dst, "docker"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := (Mover{}).Move(src, dst); err == nil || !strings.Contains(err.Error(), "both there and differ") {
		t.Fatalf("Move onto a folder with a folder in it = %v", err)
	}
}

// A file migrate does not copy (a FIFO) stops the copy with the source
// untouched and no partial copy left.
func TestMoveRefusesSpecialFiles(t *testing.T) {
	root := t.TempDir()
	src, dst := filepath.Join(root, "a"), filepath.Join(root, "marina", "b")
	cache(t, src)
	if err := syscall.Mkfifo(filepath.Join(src, "fifo"), 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	before := snapshot(t, src)
	if _, err := (Mover{Rename: exdev}).Move(src, dst); err == nil || !strings.Contains(err.Error(), "source is untouched") {
		t.Fatalf("Move = %v; want a refusal naming the untouched source", err)
	}
	if len(snapshot(t, src)) != len(before) {
		t.Fatal("the source changed")
	}
	for _, p := range []string{dst, filepath.Join(root, "marina", ".b.migrating")} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s was left behind", p)
		}
	}
}

func TestSameSeesEveryDifference(t *testing.T) {
	root := t.TempDir()
	a := filepath.Join(root, "a")
	cache(t, a)
	for name, change := range map[string]func(b string) error{
		"contents": func(b string) error {
			return os.WriteFile(filepath.Join(b, "docker/registry/v2/blobs/sha256/ab/abcd/data"), []byte("other bytes"), 0o600)
		},
		"mode": func(b string) error {
			return os.Chmod(filepath.Join(b, "docker/registry/v2/blobs/sha256/ab/abcd/data"), 0o644)
		},
		"missing": func(b string) error {
			return os.Remove(filepath.Join(b, "docker/registry/v2/repositories/library/alpine/_layers/x"))
		},
		"link": func(b string) error {
			l := filepath.Join(b, "docker/registry/v2/repositories/library/latest")
			if err := os.Remove(l); err != nil {
				return err
			}
			return os.Symlink("../other", l)
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := filepath.Join(root, name)
			if err := copyTree(a, b); err != nil {
				t.Fatal(err)
			}
			if err := same(a, b); err != nil {
				t.Fatalf("a fresh copy differs: %v", err)
			}
			if err := change(b); err != nil {
				t.Fatal(err)
			}
			if err := same(a, b); err == nil {
				t.Fatal("same missed the difference")
			}
		})
	}
}

// S2: a source that is the destination (through a link above it) is
// refused with both intact; it used to be compared with itself, found
// equal, and deleted — the cache.
func TestMoveRefusesTheSameFolder(t *testing.T) {
	root := t.TempDir()
	marina := filepath.Join(root, "marina", "registry-cache")
	cache(t, filepath.Join(marina, "registry-dockerio"))
	klimax := filepath.Join(root, "klimax")
	if err := os.MkdirAll(klimax, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(marina, filepath.Join(klimax, "registry-cache")); err != nil {
		t.Fatal(err)
	}
	src, dst := filepath.Join(klimax, "registry-cache", "registry-dockerio"), filepath.Join(marina, "registry-dockerio")
	before := snapshot(t, dst)
	for _, m := range []Mover{{}, {Rename: exdev}} {
		if _, err := m.Move(src, dst); err == nil || !strings.Contains(err.Error(), "nothing was moved or deleted") {
			t.Errorf("Move onto itself: %v", err)
		}
		if after := snapshot(t, dst); len(after) != len(before) {
			t.Fatalf("the cache lost files: %d → %d", len(before), len(after))
		}
	}
}

// S2: a source that is a link is not a folder to move.
func TestMoveRefusesALinkedSource(t *testing.T) {
	root := t.TempDir()
	docs := filepath.Join(root, "Documents")
	cache(t, docs)
	src := filepath.Join(root, "registry-dockerio")
	if err := os.Symlink(docs, src); err != nil {
		t.Fatal(err)
	}
	if _, err := (Mover{}).Move(src, filepath.Join(root, "dst")); err == nil || !strings.Contains(err.Error(), "follows no link") {
		t.Errorf("Move of a link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(docs, "docker")); err != nil {
		t.Errorf("the link's target changed: %v", err)
	}
}

// Item 11: the comparison of a cross-file-system copy with its source
// stands between the copy and the source's removal: a copy that came out
// different (one byte) is removed, and the source stays whole.
func TestMoveKeepsTheSourceWhenTheCopyDiffers(t *testing.T) {
	root := t.TempDir()
	src, dst := filepath.Join(root, "a"), filepath.Join(root, "b")
	cache(t, src)
	before := snapshot(t, src)
	corrupt := func(from, to string) error {
		if err := copyTree(from, to); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, "docker/registry/v2/blobs/sha256/ab/abcd/data"), []byte("layer bytez"), 0o600)
	}
	_, err := Mover{Rename: exdev, Copy: corrupt}.Move(src, dst)
	if err == nil || !strings.Contains(err.Error(), "the source is untouched") {
		t.Fatalf("Move with a bad copy: %v", err)
	}
	if after := snapshot(t, src); len(after) != len(before) {
		t.Fatal("the source lost files")
	}
	for _, p := range []string{dst, filepath.Join(root, ".b.migrating")} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left: %v", p, err)
		}
	}
}
