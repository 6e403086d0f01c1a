package e2e

// marina image load on a cluster of the real node image: an image built in
// the VM's Docker reaches every node's containerd, and a pod runs it
// without pulling.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
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

// runOnEveryNode runs image on each node of cs (by nodeName, with pull
// policy pull) and waits for every pod to run.
func runOnEveryNode(t *testing.T, cs *kubernetes.Clientset, name, image string, pull corev1.PullPolicy) {
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
				Containers:  []corev1.Container{{Name: "app", Image: image, ImagePullPolicy: pull}},
			},
		}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	podsReady(t, cs, "default", "app="+name, len(nodes.Items), 2*time.Minute)
}

// saveImage writes ref from the VM's Docker to file, as docker save does.
func saveImage(t *testing.T, ref, file string) {
	t.Helper()
	c, err := client.New(client.WithHost("unix://" + socket()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	save, err := c.ImageSave(context.Background(), []string{ref})
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
		runOnEveryNode(t, contextClient(t, "dev"), "loaded", app, corev1.PullNever)
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
		saveImage(t, tag, file)
		if _, err := c.ImageRemove(ctx, tag, client.ImageRemoveOptions{}); err != nil {
			t.Fatal(err)
		}
		r := mustMarina(t, "image", "load", "--archive", file, "--all")
		if out := r.stdout + r.stderr; !strings.Contains(out, "2 loaded, 0 skipped") {
			t.Errorf("image load --archive:\n%s", out)
		}
		runOnEveryNode(t, contextClient(t, "dev"), "archived", tag, corev1.PullNever)
	})

	pushRegistry(t, app)

	t.Run("image load of an image the VM's Docker lacks names it and changes nothing", func(t *testing.T) {
		r := marina(t, "image", "load", "marina-e2e/none:dev", "--cluster", "dev")
		if r.code == 0 || !strings.Contains(r.stderr, "has no image marina-e2e/none:dev") {
			t.Errorf("exit %d:\n%s", r.code, r.stderr)
		}
	})
}

// pushRegistry is TestRealCluster's part for the push registry, on its
// two-node cluster dev: an image pushed from the VM's Docker (as docker
// push through docker-env does) runs on both nodes by its one name, and
// the cluster advertises the registry; a cluster that lacks it (made
// before marina had one) gets it from up.
func pushRegistry(t *testing.T, built string) {
	const pushed = "localhost:5001/marina-e2e/app:pushed"
	t.Run("push registry: docker push in the VM, a pod on each node pulls it by the same name", func(t *testing.T) {
		var rows []struct {
			Name, State, Host string
			Push              bool
		}
		if err := json.Unmarshal([]byte(mustMarina(t, "registry", "list", "-o", "json").stdout), &rows); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range rows {
			found = found || (r.Push && r.Name == "marina-registry" && r.State == "running" && r.Host == "localhost:5001")
		}
		if !found {
			t.Fatalf("registry list shows no running push registry at localhost:5001: %+v", rows)
		}
		if out, err := labCmd(t, "vm", "sh", "-c", "docker tag "+shellQuote(built)+" "+pushed+" && docker push -q "+pushed+" && docker rmi "+pushed); err != nil {
			t.Fatalf("docker push in the VM: %v\n%s", err, out)
		}
		cs := contextClient(t, "dev")
		runOnEveryNode(t, cs, "pushed", pushed, corev1.PullAlways)
	})

	t.Run("push registry: a Mac tool that is not Docker (go-containerregistry) pushes to localhost:5001, a pod pulls it", func(t *testing.T) {
		// The image built in the VM, with one more layer of its own, as
		// ko or crane would push it from the Mac.
		file := filepath.Join(t.TempDir(), "app.tar")
		saveImage(t, built, file)
		tag, err := name.NewTag(strings.TrimPrefix(built, "docker.io/"))
		if err != nil {
			t.Fatal(err)
		}
		base, err := tarball.ImageFromPath(file, &tag)
		if err != nil {
			t.Fatal(err)
		}
		extra, err := random.Layer(4096, types.DockerLayer)
		if err != nil {
			t.Fatal(err)
		}
		img, err := mutate.AppendLayers(base, extra)
		if err != nil {
			t.Fatal(err)
		}
		const fromMac = "localhost:5001/marina-e2e/mac:1"
		if err := crane.Push(img, fromMac); err != nil {
			t.Fatalf("push %s from the Mac: %v", fromMac, err)
		}
		runOnEveryNode(t, contextClient(t, "dev"), "from-mac", fromMac, corev1.PullAlways)
	})

	t.Run("push registry: dev advertises it (KEP-1755), and up gives it back to a cluster that lacks it", func(t *testing.T) {
		cs := contextClient(t, "dev")
		ctx := context.Background()
		want := "host: localhost:5001\nhostFromContainerRuntime: localhost:5001\nhostFromClusterNetwork: marina-registry:5000\n"
		check := func(when string) {
			cm, err := cs.CoreV1().ConfigMaps("kube-public").Get(ctx, "local-registry-hosting", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if v := cm.Data["localRegistryHosting.v1"]; !strings.HasPrefix(v, want) || !strings.Contains(v, "help: https://") {
				t.Errorf("%s: localRegistryHosting.v1 is %q", when, v)
			}
		}
		check("after create")
		// As a cluster made before marina had the push registry: no
		// ConfigMap, no hosts.toml, no mention in its record.
		if err := cs.CoreV1().ConfigMaps("kube-public").Delete(ctx, "local-registry-hosting", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if out, err := labCmd(t, "vm", "sh", "-c", "sed -i 's/ registry=localhost:5001//' /etc/marina/clusters/dev/addons && rm -r /etc/marina/clusters/dev/certs.d/localhost:5001"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		mustMarina(t, "up")
		check("after up")
		if out, err := labCmd(t, "vm", "grep", "-q", "registry=localhost:5001", "/etc/marina/clusters/dev/addons"); err != nil {
			t.Errorf("dev's record after up: %v\n%s", err, out)
		}
		// The nodes pull through it again: a new pod on each node.
		runOnEveryNode(t, cs, "repulled", pushed, corev1.PullAlways)
	})

	t.Run("push registry: clean-cache empties it only when it is named", func(t *testing.T) {
		repos := func() []string {
			var got []string
			waitFor(t, 30*time.Second, "the push registry to answer", func() bool {
				var err error
				got, err = crane.Catalog("localhost:5001")
				return err == nil
			})
			return got
		}
		if got := repos(); !slices.Contains(got, "marina-e2e/mac") {
			t.Fatalf("the push registry holds %q before clean-cache", got)
		}
		if r := marina(t, "registry", "clean-cache", "marina-registry"); r.code == 0 || !strings.Contains(r.stderr, "needs a confirmation") {
			t.Errorf("clean-cache marina-registry without a terminal or -y: exit %d\n%s", r.code, r.stderr)
		}
		if got := repos(); !slices.Contains(got, "marina-e2e/mac") {
			t.Fatalf("refused, yet the push registry holds %q", got)
		}
		mustMarina(t, "registry", "clean-cache", "marina-registry", "-y")
		if got := repos(); len(got) != 0 {
			t.Errorf("after clean-cache marina-registry -y, the push registry holds %q", got)
		}
	})
}
