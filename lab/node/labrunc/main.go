//go:build linux

// Command lab-runc is the lab daemon's default OCI runtime: runc, after
// taking out of a container's (or a `docker exec`'s) capabilities those the
// machine's own bounding set lacks.
//
// Docker gives a --privileged container every capability the kernel knows,
// but the lab may itself run in a container whose bounding set is smaller
// (CI machines lack CAP_SYS_RESOURCE), and runc then fails with "unable to
// apply caps". kind's nodes are privileged, so without this they cannot
// start in the lab. Other containers never ask for such capabilities, so
// for them this is plain runc.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const realRunc = "/usr/local/bin/runc"

// capNames are the capabilities by number (linux/capability.h).
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
	"CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE",
	"CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
	"CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

func main() {
	args := os.Args[1:]
	if missing := missingCaps(); len(missing) > 0 {
		sub, rest := subcommand(args)
		var file string
		var key []string
		switch sub {
		case "create", "run":
			bundle := flagValue(rest, "--bundle", "-b")
			if bundle == "" {
				bundle, _ = os.Getwd()
			}
			file, key = filepath.Join(bundle, "config.json"), []string{"process", "capabilities"}
		case "exec":
			file, key = flagValue(rest, "--process", "-p"), []string{"capabilities"}
		}
		if file != "" {
			if err := dropCaps(file, key, missing); err != nil {
				fmt.Fprintf(os.Stderr, "lab-runc: %s: %v\n", file, err)
				os.Exit(1)
			}
		}
	}
	err := syscall.Exec(realRunc, append([]string{"runc"}, args...), os.Environ())
	fmt.Fprintf(os.Stderr, "lab-runc: exec %s: %v\n", realRunc, err)
	os.Exit(1)
}

// missingCaps names the capabilities not in this process's bounding set.
func missingCaps() map[string]bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return nil
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "CapBnd:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return nil
			}
			missing := map[string]bool{}
			for i, n := range capNames {
				if mask&(1<<i) == 0 {
					missing[n] = true
				}
			}
			return missing
		}
	}
	return nil
}

// subcommand finds runc's command after its global options.
func subcommand(args []string) (string, []string) {
	withValue := map[string]bool{"--root": true, "--log": true, "--log-format": true, "--criu": true, "--rootless": true}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			return a, args[i+1:]
		}
		if withValue[a] {
			i++
		}
	}
	return "", nil
}

func flagValue(args []string, long, short string) string {
	for i, a := range args {
		if a == long || a == short {
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		}
		if v, ok := strings.CutPrefix(a, long+"="); ok {
			return v
		}
	}
	return ""
}

// dropCaps removes the missing capabilities from every set under key in
// the JSON file, keeping everything else as it was (numbers exactly).
func dropCaps(file string, key []string, missing map[string]bool) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return err
	}
	var caps any = doc
	for _, k := range key {
		m, ok := caps.(map[string]any)
		if !ok {
			return nil
		}
		caps = m[k]
	}
	sets, ok := caps.(map[string]any)
	if !ok {
		return nil
	}
	changed := false
	for name, v := range sets {
		list, ok := v.([]any)
		if !ok {
			continue
		}
		kept := make([]any, 0, len(list))
		for _, c := range list {
			if s, ok := c.(string); ok && missing[s] {
				changed = true
				continue
			}
			kept = append(kept, c)
		}
		sets[name] = kept
	}
	if !changed {
		return nil
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return err
	}
	st, err := os.Stat(file)
	if err != nil {
		return err
	}
	tmp := file + ".lab-runc"
	if err := os.WriteFile(tmp, out.Bytes(), st.Mode().Perm()); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}
