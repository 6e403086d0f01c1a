package e2e

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeTimes are the start and stop times Docker keeps of cluster name's
// control plane, and the states of all its nodes.
func nodeTimes(t *testing.T, name string) (started, finished time.Time, states []string) {
	t.Helper()
	for _, in := range nodeContainers(t, name) {
		st := in.Container.State
		states = append(states, string(st.Status))
		if strings.HasSuffix(in.Container.Name, "-control-plane") {
			started, _ = time.Parse(time.RFC3339Nano, st.StartedAt)
			finished, _ = time.Parse(time.RFC3339Nano, st.FinishedAt)
		}
	}
	return started, finished, states
}

// webAnswers gets http://ip/clientip from the Mac and checks the echo
// server saw the Mac's own address.
func webAnswers(t *testing.T, ip string) {
	t.Helper()
	webAnswersWithin(t, ip, time.Minute)
}

// webAnswersWithin is webAnswers waiting up to within: after a Docker
// restart every pod starts again, and MetalLB's speakers announce again.
func webAnswersWithin(t *testing.T, ip string, within time.Duration) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	var body []byte
	waitFor(t, within, "web at "+ip+" answering from the Mac", func() bool {
		resp, err := c.Get("http://" + ip + "/clientip")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK
	})
	if host, _, _ := strings.Cut(string(body), ":"); host != macAddr {
		t.Errorf("web at %s saw the Mac as %q, want %s:PORT", ip, body, macAddr)
	}
}

// stopStart is TestRealCluster's part for cluster and fleet stop/start, on
// its two-node cluster dev, which serves web.shop at ip, and a second
// cluster, edge, that a fleet apply makes depend on dev. Each cluster
// restarts once: edge alone, then both with the fleet.
func stopStart(t *testing.T, agnhost, ip string) {
	const name = "web.shop.dev.demo.internal"
	t.Run("cluster stop: one of two stops and frees its memory while the other serves; start brings it back", func(t *testing.T) {
		file := writeManifest(t, `apiVersion: marina.dev/v1alpha1
kind: Fleet
metadata: {name: pair}
spec:
  clusters:
    - dev
    - name: edge
      dependsOn: [dev]
`)
		mustMarina(t, "fleet", "apply", "-f", file, "--adopt")

		r := mustMarina(t, "cluster", "stop", "edge")
		if !regexp.MustCompile(`Stopped edge, freeing [0-9.]+[KMG]iB of the VM's memory`).MatchString(r.stdout) {
			t.Errorf("stop says:\n%s%s", r.stdout, r.stderr)
		}
		if _, _, states := nodeTimes(t, "edge"); strings.Join(states, ",") != "exited" {
			t.Errorf("edge's node after stop: %v", states)
		}
		if _, _, states := nodeTimes(t, "dev"); strings.Join(states, ",") != "running,running" {
			t.Errorf("dev's nodes after edge's stop: %v", states)
		}
		webAnswers(t, ip)
		// Stopped, edge is still in its fleet: its labels were kept.
		if rows := listClusters(t, "-l", "marina.dev/fleet=pair"); len(rows) != 2 {
			t.Errorf("cluster list -l marina.dev/fleet=pair while edge is stopped: %+v", rows)
		}
		if out := marina(t, "status").stdout; !regexp.MustCompile(`edge\b[^\n]*stopped`).MatchString(out) {
			t.Errorf("status does not show edge stopped:\n%s", out)
		}
		r = mustMarina(t, "cluster", "start", "edge")
		if !strings.Contains(r.stdout, "Started edge: 1 nodes Ready, MetalLB and ExternalDNS running, pool ") {
			t.Errorf("start says:\n%s%s", r.stdout, r.stderr)
		}
		if _, err := contextClient(t, "edge").CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Errorf("edge does not answer after its start: %v", err)
		}
	})

	t.Run("fleet stop stops the dependent first and keeps dev's names; fleet start starts it last, with web at the same address", func(t *testing.T) {
		mustMarina(t, "fleet", "stop", "pair")
		_, devStopped, devStates := nodeTimes(t, "dev")
		_, edgeStopped, edgeStates := nodeTimes(t, "edge")
		if strings.Join(append(devStates, edgeStates...), ",") != "exited,exited,exited" {
			t.Errorf("after fleet stop: dev %v, edge %v", devStates, edgeStates)
		}
		if !edgeStopped.Before(devStopped) {
			t.Errorf("fleet stop: edge stopped at %s, dev at %s; want edge (which depends on dev) first", edgeStopped, devStopped)
		}
		if out := mustMarina(t, "dns", "list").stdout; !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` +` + regexp.QuoteMeta(ip) + ` +dev \(stopped\)`).MatchString(out) {
			t.Errorf("dns list does not show dev's name as stopped:\n%s", out)
		}
		r := mustMarina(t, "fleet", "start", "pair")
		devStarted, _, _ := nodeTimes(t, "dev")
		edgeStarted, _, _ := nodeTimes(t, "edge")
		if !devStarted.Before(edgeStarted) {
			t.Errorf("fleet start: dev started at %s, edge at %s; want dev first", devStarted, edgeStarted)
		}
		if !strings.Contains(r.stdout, "Started dev: 2 nodes Ready, MetalLB and ExternalDNS running, pool ") || !strings.Contains(r.stdout, "Started edge:") {
			t.Errorf("fleet start says:\n%s%s", r.stdout, r.stderr)
		}
		webServes(t, agnhost, ip, 30*time.Second, "start")
	})
}

// webServes checks, after what, that dev's web Service kept its address
// ip, that its name answers it from the Mac and web answers there, each
// within wait, and that cluster verify passes.
func webServes(t *testing.T, agnhost, ip string, wait time.Duration, after string) {
	t.Helper()
	svc, err := contextClient(t, "dev").CoreV1().Services("shop").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || len(svc.Status.LoadBalancer.Ingress) == 0 || svc.Status.LoadBalancer.Ingress[0].IP != ip {
		t.Errorf("web's address after %s: %+v, %v; want %s", after, svc.Status.LoadBalancer, err, ip)
	}
	waitAnswer(t, "web.shop.dev.demo.internal", ip, wait)
	webAnswersWithin(t, ip, wait)
	if r := mustMarina(t, "cluster", "verify", "dev", "--image", agnhost); !strings.Contains(r.stdout+r.stderr, "this machine's own address") {
		t.Errorf("verify after %s:\n%s%s", after, r.stdout, r.stderr)
	}
}
