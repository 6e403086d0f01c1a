package e2e

// marina image load on a cluster of the real node image: an image built in
// the VM's Docker reaches every node's containerd, and a pod runs it
// without pulling.

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// buildInVM builds tag in the VM's Docker from a few-line Dockerfile over
// base (an image the VM's Docker holds), as docker build through
// docker-env would.
func buildInVM(t *testing.T, base, tag string) {
	t.Helper()
	script := `set -e
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
printf 'built by the lab for marina image load\n' >"$d/marina.txt"
printf 'FROM %s\nCOPY marina.txt /etc/marina.txt\nLABEL dev.marina.test=image-load\n' ` + shellQuote(base) + ` >"$d/Dockerfile"
DOCKER_BUILDKIT=0 docker build -q -t ` + shellQuote(tag) + ` "$d"`
	if out, err := labCmd(t, "vm", "sh", "-c", script); err != nil {
		t.Fatalf("docker build in the VM: %v\n%s", err, out)
	}
}

// runOnEveryNode runs image on each node of cs (by nodeName, never
// pulling) and waits for every pod to run.
func runOnEveryNode(t *testing.T, cs *kubernetes.Clientset, name, image string) {
	t.Helper()
	ctx := context.Background()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-" + n.Name, Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{
				NodeName:    n.Name,
				Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers:  []corev1.Container{{Name: "app", Image: image, ImagePullPolicy: corev1.PullNever}},
			},
		}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	podsReady(t, cs, "default", "app="+name, len(nodes.Items), 2*time.Minute)
}

// imageLoad is TestRealCluster's part for marina image load, on its
// two-node cluster dev; base is an image the VM's Docker holds.
func imageLoad(t *testing.T, base string) {
	const app = "marina-e2e/app:dev"
	t.Run("image load: a build in the VM's Docker runs on both nodes without a pull; a second load skips both", func(t *testing.T) {
		buildInVM(t, base, app)
		r := mustMarina(t, "image", "load", app, "--cluster", "dev")
		out := r.stdout + r.stderr
		for _, want := range []string{"dev-control-plane: loaded marina-e2e/app:dev", "dev-worker: loaded marina-e2e/app:dev", "2 loaded, 0 skipped"} {
			if !strings.Contains(out, want) {
				t.Errorf("image load says no %q:\n%s", want, out)
			}
		}
		runOnEveryNode(t, contextClient(t, "dev"), "loaded", app)
		r = mustMarina(t, "image", "load", app, "--cluster", "dev")
		if out := r.stdout + r.stderr; !strings.Contains(out, "0 loaded, 2 skipped") || strings.Count(out, "skipped marina-e2e/app:dev") != 2 {
			t.Errorf("a second load did not skip both nodes:\n%s", out)
		}
	})

	t.Run("image load --archive: an archive on the Mac, into the VM's Docker and every node", func(t *testing.T) {
		const tag = "marina-e2e/app:archive"
		c, err := client.New(client.WithHost("unix://" + socket()))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()
		if _, err := c.ImageTag(ctx, client.ImageTagOptions{Source: app, Target: tag}); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "app.tar")
		save, err := c.ImageSave(ctx, []string{tag})
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(file)
		if err == nil {
			_, err = io.Copy(f, save)
			err = errors.Join(err, f.Close(), save.Close())
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ImageRemove(ctx, tag, client.ImageRemoveOptions{}); err != nil {
			t.Fatal(err)
		}
		r := mustMarina(t, "image", "load", "--archive", file, "--all")
		if out := r.stdout + r.stderr; !strings.Contains(out, "2 loaded, 0 skipped") {
			t.Errorf("image load --archive:\n%s", out)
		}
		runOnEveryNode(t, contextClient(t, "dev"), "archived", tag)
	})

	t.Run("image load of an image the VM's Docker lacks names it and changes nothing", func(t *testing.T) {
		r := marina(t, "image", "load", "marina-e2e/none:dev", "--cluster", "dev")
		if r.code == 0 || !strings.Contains(r.stderr, "has no image marina-e2e/none:dev") {
			t.Errorf("exit %d:\n%s", r.code, r.stderr)
		}
	})
}
