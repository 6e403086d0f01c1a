package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// clock is a settable now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// Without a terminal every step of every row is a plain line that names
// its row, and each end carries its duration; the row keeps the times.
func TestBoardPlainLines(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	b := NewBoard(&out, false, false, c.now)
	east, west := b.Add("east"), b.Add("west-long")
	east.Begin()
	u := east.UI()
	u.Start("Creating cluster east")
	c.t = c.t.Add(1500 * time.Millisecond)
	u.Warnf("careful")
	u.End(true)
	u.Start("Installing MetalLB")
	c.t = c.t.Add(2 * time.Second)
	u.End(false)
	east.Finish(false, "failed: boom")
	west.Finish(false, "skipped: dependency")
	b.Stop()
	want := []string{
		" • east       Creating cluster east …",
		"east: WARNING: careful",
		" ✓ east       Creating cluster east (1.5s)",
		" • east       Installing MetalLB …",
		" ✗ east       Installing MetalLB (2s)",
		" ✗ east       failed: boom (3.5s)",
		" ✗ west-long  skipped: dependency (0s)",
	}
	if got := strings.TrimRight(out.String(), "\n"); got != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	times := east.Times()
	if len(times) != 2 || times[0].Seconds != 1.5 || !times[0].OK || times[1].OK {
		t.Errorf("times %+v", times)
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Error("escape codes without a terminal")
	}
}

// On a terminal the rows are redrawn in place, one line each.
func TestBoardRedraws(t *testing.T) {
	var out bytes.Buffer
	c := &clock{t: time.Unix(0, 0)}
	b := NewBoard(&out, true, false, c.now)
	a := b.Add("a")
	b.Add("b")
	a.Begin()
	a.UI().Start("step one")
	a.Finish(true, "created")
	b.Stop()
	s := out.String()
	if !strings.Contains(s, "\x1b[2A") || !strings.Contains(s, " \x1b[32m✓\x1b[0m a  created (0s)") || !strings.Contains(s, " · b  waiting") {
		t.Errorf("redraw:\n%q", s)
	}
}
