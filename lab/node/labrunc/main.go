//go:build linux

// Command lab-runc is the lab daemon's default OCI runtime: runc, after
// taking out of a container's (or a `docker exec`'s) capabilities those the
// machine's own bounding set lacks.
//
// The lab's real kind node image (lab/node/pack real) has it too, as the runc its
// containerd finds first on PATH: there it also raises an oomScoreAdj below
// its own to its own, since lowering one takes CAP_SYS_RESOURCE (kubelet
// asks -998 for every pod sandbox, and runc would fail with "failed to
// update /proc/self/oom_score_adj: Permission denied"). That is what
// containerd's restrict_oom_score_adj does, one level down.
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
			if err := fixSpec(file, key, missing, sub != "exec"); err != nil {
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

// fixSpec removes the missing capabilities from every set under key in the
// JSON file and, in a bundle's config (bundle), raises process.oomScoreAdj
// to this process's own when CAP_SYS_RESOURCE is missing, keeping
// everything else as it was (numbers exactly).
func fixSpec(file string, key []string, missing map[string]bool, bundle bool) error {
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
	changed := dropCaps(doc, key, missing)
	if bundle && missing["CAP_SYS_RESOURCE"] && clampOOM(doc, ownOOMScoreAdj()) {
		changed = true
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

// ownOOMScoreAdj is this process's oom_score_adj: without CAP_SYS_RESOURCE
// a child may have it or higher, never lower.
func ownOOMScoreAdj() int64 {
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// clampOOM raises doc's process.oomScoreAdj to floor when it is below it.
func clampOOM(doc map[string]any, floor int64) bool {
	proc, ok := doc["process"].(map[string]any)
	if !ok {
		return false
	}
	v, ok := proc["oomScoreAdj"].(json.Number)
	if !ok {
		return false
	}
	n, err := v.Int64()
	if err != nil || n >= floor {
		return false
	}
	proc["oomScoreAdj"] = json.Number(strconv.FormatInt(floor, 10))
	return true
}

// dropCaps removes the missing capabilities from every set under key in
// doc; it says whether it removed any.
func dropCaps(doc map[string]any, key []string, missing map[string]bool) bool {
	var caps any = doc
	for _, k := range key {
		m, ok := caps.(map[string]any)
		if !ok {
			return false
		}
		caps = m[k]
	}
	sets, ok := caps.(map[string]any)
	if !ok {
		return false
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
	return changed
}
