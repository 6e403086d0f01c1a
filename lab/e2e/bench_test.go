package e2e

import (
	"fmt"
	"testing"
)

// The benchmarks time whole marina runs against a running lab VM, as a user
// would see them, and report the guest round trips each one makes (on a
// real Mac every round trip costs tens of milliseconds more than here). The
// VM runs a registry mirror whose upstream answers, as it would on a Mac
// that is online.
//
//	go test ./lab/e2e -run '^$' -bench . -benchtime 20x

var benchReady bool

func benchVM(b *testing.B) {
	needLab(b)
	if benchReady {
		return
	}
	writeConfig(b, "registries:\n  mirrors: []\n")
	mustMarina(b, "up")
	startUpstream(b, "bench-password")
	writeConfig(b, fmt.Sprintf("registries:\n  image: %s\n  mirrors:\n    - name: registry-lab\n      port: 5060\n      remoteURL: https://%s\n      username: %s\n      password: bench-password\n", registryImage(), upstreamHost, labUser))
	mustMarina(b, "up")
	benchReady = true
}

func benchMarina(b *testing.B, args ...string) {
	benchVM(b)
	b.ResetTimer()
	var last result
	for i := 0; i < b.N; i++ {
		if args[0] == "status" {
			last = shownStatus(b, append(args, "--debug")...)
		} else {
			last = mustMarina(b, append(args, "--debug")...)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(tripCount(b, last.stderr)), "trips/op")
}

func BenchmarkStatus(b *testing.B) { benchMarina(b, "status") }

func BenchmarkUpNoop(b *testing.B) { benchMarina(b, "up") }
