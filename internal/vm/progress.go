package vm

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// limaMsg is the message of one of limactl's log lines, as logrus writes
// it without a terminal: level=info msg="…" (Go-quoted).
var limaMsg = regexp.MustCompile(`\blevel=info msg=("(?:[^"\\]|\\.)*")`)

// limaWaiting is Lima's host agent starting on a boot requirement.
// Its description is Go-quoted (%q) inside the quoted message.
var limaWaiting = regexp.MustCompile(`^Waiting for the (essential|optional|final) requirement (\d+) of (\d+): (".*")$`)

// BootStage is the boot stage a line of `limactl start` reports, in
// marina's words, and whether it reports one: the driver starting, the
// image downloading, and each of the requirements Lima waits for (ssh,
// then the template's probes, then the boot scripts, which install
// Docker on a first boot and take the longest).
func BootStage(line string) (string, bool) {
	m := limaMsg.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	msg, err := strconv.Unquote(m[1])
	if err != nil {
		return "", false
	}
	msg = strings.TrimPrefix(msg, "[hostagent] ")
	switch {
	case strings.HasPrefix(msg, "Starting the instance "):
		return "starting the VM", true
	case strings.HasPrefix(msg, "Attempting to download the image"):
		return "downloading the image", true
	case strings.HasPrefix(msg, "Attempting to download the nerdctl archive"):
		return "", false
	}
	if w := limaWaiting.FindStringSubmatch(msg); w != nil {
		desc, err := strconv.Unquote(w[4])
		if err != nil {
			return "", false
		}
		// The words come from the VM's template, and end on a terminal.
		desc = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return -1
			}
			return r
		}, desc)
		return "waiting for " + desc + " (" + w[1] + " requirement " + w[2] + " of " + w[3] + ")", true
	}
	return "", false
}

// stageWriter calls fn with each boot stage in the lines written to it;
// stdout and stderr write to it from their own goroutines.
type stageWriter struct {
	mu   sync.Mutex
	fn   func(string)
	rest []byte
}

func (w *stageWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rest = append(w.rest, p...)
	for {
		i := bytes.IndexByte(w.rest, '\n')
		if i < 0 {
			break
		}
		if s, ok := BootStage(string(w.rest[:i])); ok {
			w.fn(s)
		}
		w.rest = w.rest[i+1:]
	}
	if len(w.rest) > 64<<10 { // a line that never ends is no stage
		w.rest = nil
	}
	return len(p), nil
}
