package ui

import (
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/mattn/go-runewidth"
	"golang.org/x/term"
)

// Size reports a terminal's columns and rows; 0 when not known.
type Size func() (cols, rows int)

// TermSize is terminal f's size, read now and again on every SIGWINCH,
// so that a window resized during a long step is drawn to its new width.
func TermSize(f *os.File) Size {
	var cols, rows atomic.Int64
	read := func() {
		if c, r, err := term.GetSize(int(f.Fd())); err == nil {
			cols.Store(int64(c))
			rows.Store(int64(r))
		}
	}
	read()
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	go func() {
		for range ch {
			read()
		}
	}()
	return func() (int, int) { return int(cols.Load()), int(rows.Load()) }
}

// fit cuts s to n columns, ending it with an ellipsis when it is cut;
// n <= 0 leaves it as it is (the width is not known).
func fit(s string, n int) string {
	if n <= 0 || runewidth.StringWidth(s) <= n {
		return s
	}
	return runewidth.Truncate(s, n, "…")
}

// fitLine is head, body and tail on one line of cols columns: body is
// what gives way, so the spinner before it and the time after it stay.
// The last column stays empty, since a terminal wraps (or not) a line
// that fills it as it pleases.
func fitLine(cols int, head, body, tail string) string {
	if cols <= 0 {
		return head + body + tail
	}
	room := cols - 1 - runewidth.StringWidth(head) - runewidth.StringWidth(tail)
	if room < 1 {
		return fit(head+body+tail, cols-1)
	}
	return head + fit(body, room) + tail
}

// Colours, on a smart terminal only (NO_COLOR, TERM=dumb and a pipe turn
// them off with the spinner: IsSmartTerminal).
const (
	green  = "\x1b[32m"
	red    = "\x1b[31m"
	yellow = "\x1b[33m"
	reset  = "\x1b[0m"
)

// Mark is ✓ for ok and ✗ otherwise, in green or red when colour is on.
func Mark(ok, colour bool) string {
	m, c := "✓", green
	if !ok {
		m, c = "✗", red
	}
	if !colour {
		return m
	}
	return c + m + reset
}

// Paint colours s with the colour of a verdict word (OK green, WARN
// yellow, FAIL red) when colour is on.
func Paint(s, verdict string, colour bool) string {
	c := map[string]string{"OK": green, "WARN": yellow, "FAIL": red}[verdict]
	if !colour || c == "" {
		return s
	}
	return c + s + reset
}
