//go:build unix

package ui

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// The delete picker on a real terminal: ↓ moves, space selects, enter
// confirms; esc cancels, and so does enter with nothing selected. The
// list shows on the screen while it waits, at 80×24 and 40×10.
func TestPickOnATerminal(t *testing.T) {
	items := []string{"dev (slot 1, port 7001, running)", "east (slot 2, port 7002, running)", "west (slot 3, port 7003, stopped)"}
	for _, c := range []struct {
		name string
		keys []string
		want []int
		err  error
	}{
		{"the second and the third", []string{"\x1b[B", " ", "\x1b[B", " ", "\r"}, []int{1, 2}, nil},
		{"x selects too, j moves", []string{"x", "j", "j", "x", "\r"}, []int{0, 2}, nil},
		{"ctrl+a selects every one", []string{"\x01", "\r"}, []int{0, 1, 2}, nil},
		{"esc cancels", []string{" ", "\x1b"}, nil, ErrCancelled},
		{"nothing selected", []string{"\r"}, nil, ErrCancelled},
	} {
		for _, size := range [][2]int{{80, 24}, {40, 10}} {
			t.Run(fmt.Sprintf("%s %dx%d", c.name, size[0], size[1]), func(t *testing.T) {
				s := newScreen(t, size[0], size[1])
				type result struct {
					idx []int
					err error
				}
				done := make(chan result, 1)
				go func() {
					idx, err := Pick(s.tty, s.tty, "Delete which clusters?", items)
					done <- result{idx, err}
				}()
				// The list is on the screen before a key is pressed.
				deadline := time.Now().Add(5 * time.Second)
				for !strings.Contains(strings.Join(s.lines(), "\n"), "east (slot 2") {
					if time.Now().After(deadline) {
						t.Fatalf("no list on the screen:\n%s", s)
					}
					time.Sleep(20 * time.Millisecond)
				}
				screen := strings.Join(s.lines(), "\n")
				t.Logf("the list, before a key:\n%s", screen)
				for _, want := range []string{"Delete which clusters?", "dev (slot 1", "west (slot 3"} {
					if !strings.Contains(screen, want) {
						t.Errorf("the screen lacks %q:\n%s", want, screen)
					}
				}
				for _, k := range c.keys {
					if _, err := s.pty.WriteString(k); err != nil {
						t.Fatal(err)
					}
					time.Sleep(60 * time.Millisecond) // one key at a time, as typed
				}
				select {
				case r := <-done:
					if !slices.Equal(r.idx, c.want) || !errors.Is(r.err, c.err) || (c.err == nil) != (r.err == nil) {
						t.Errorf("Pick = %v, %v; want %v, %v\n%s", r.idx, r.err, c.want, c.err, s)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("Pick did not return:\n%s", s)
				}
			})
		}
	}
}
