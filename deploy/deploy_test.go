// Package deploy_test checks the deployment files as far as a machine
// without a container engine or systemd as init can: the Kubernetes
// manifest parses and wires the sidecar as documented, the systemd unit
// passes systemd-analyze and its example config builds a workspace with
// the real binary, and the Dockerfile's build command makes a static
// binary. The mount propagation the sidecar relies on is tested with mount
// namespaces in integration/sidecar_test.go.
package deploy_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/vfsmount/vfsmount/internal/fusetest"
	"github.com/vfsmount/vfsmount/internal/testutil"
)

// buildVfsmount builds cmd/vfsmount into dir with the environment and flags
// given, and returns its path.
func buildVfsmount(t *testing.T, dir string, env []string, flags ...string) string {
	t.Helper()
	bin := filepath.Join(dir, "vfsmount")
	args := append(append([]string{"build"}, flags...), "-o", bin, "github.com/vfsmount/vfsmount/cmd/vfsmount")
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

type k8sProbe struct {
	Exec struct {
		Command []string `yaml:"command"`
	} `yaml:"exec"`
}

type k8sContainer struct {
	Name            string   `yaml:"name"`
	Image           string   `yaml:"image"`
	Command         []string `yaml:"command"`
	Args            []string `yaml:"args"`
	RestartPolicy   string   `yaml:"restartPolicy"`
	SecurityContext struct {
		Privileged   bool `yaml:"privileged"`
		Capabilities struct {
			Add  []string `yaml:"add"`
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name             string `yaml:"name"`
		MountPath        string `yaml:"mountPath"`
		MountPropagation string `yaml:"mountPropagation"`
	} `yaml:"volumeMounts"`
	Env []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom struct {
			SecretKeyRef struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	StartupProbe   *k8sProbe `yaml:"startupProbe"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	Lifecycle      struct {
		PreStop *k8sProbe `yaml:"preStop"`
	} `yaml:"lifecycle"`
}

type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	Spec       struct {
		Volumes []struct {
			Name     string    `yaml:"name"`
			EmptyDir *struct{} `yaml:"emptyDir"`
		} `yaml:"volumes"`
		InitContainers []k8sContainer `yaml:"initContainers"`
		Containers     []k8sContainer `yaml:"containers"`
	} `yaml:"spec"`
}

// propagation returns how c mounts volume, and where.
func propagation(c k8sContainer, volume string) (path, mode string, ok bool) {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath, m.MountPropagation, true
		}
	}
	return "", "", false
}

// sidecarManifest is what sidecar.yaml declares.
type sidecarManifest struct {
	pod, cm, secret *k8sObject
	sidecar         *k8sContainer
}

func readSidecarManifest(t *testing.T) sidecarManifest {
	t.Helper()
	f, err := os.Open("kubernetes/sidecar.yaml")
	require.NoError(t, err)
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var objs []k8sObject
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "sidecar.yaml parses")
		objs = append(objs, o)
	}
	var m sidecarManifest
	for i := range objs {
		switch objs[i].Kind {
		case "Pod":
			m.pod = &objs[i]
		case "ConfigMap":
			m.cm = &objs[i]
		case "Secret":
			m.secret = &objs[i]
		}
	}
	require.NotNil(t, m.pod, "a Pod")
	require.NotNil(t, m.cm, "a ConfigMap with the workspace config")
	for i, c := range m.pod.Spec.InitContainers {
		if c.Name == "vfsmount" {
			m.sidecar = &m.pod.Spec.InitContainers[i]
		}
	}
	require.NotNil(t, m.sidecar, "the vfsmount sidecar")
	return m
}

func TestKubernetesSidecar(t *testing.T) {
	m := readSidecarManifest(t)
	pod, cm, sidecar := m.pod, m.cm, m.sidecar

	var cfg struct {
		Mounts []map[string]any `yaml:"mounts"`
		Store  struct {
			URL      string `yaml:"url"`
			Name     string `yaml:"name"`
			Endpoint string `yaml:"endpoint"`
			Sync     string `yaml:"sync"`
			Resume   bool   `yaml:"resume"`
			Cache    string `yaml:"cache"`
		} `yaml:"store"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(cm.Data["vfsmount.yaml"]), &cfg))
	assert.NotEmpty(t, cfg.Mounts, "the config names mounts")

	require.Len(t, pod.Spec.Containers, 1)
	agent := pod.Spec.Containers[0]

	assert.Equal(t, "Always", sidecar.RestartPolicy, "a native sidecar")
	assert.True(t, sidecar.SecurityContext.Privileged, "Bidirectional propagation needs a privileged container")
	sidePath, sideMode, ok := propagation(*sidecar, "workspace")
	require.True(t, ok, "the sidecar mounts the workspace volume")
	assert.Equal(t, "Bidirectional", sideMode)
	agentPath, agentMode, ok := propagation(agent, "workspace")
	require.True(t, ok, "the agent mounts the workspace volume")
	assert.Equal(t, "HostToContainer", agentMode)
	assert.Equal(t, sidePath, agentPath, "both see the volume at the same path")
	assert.False(t, agent.SecurityContext.Privileged, "the agent is not privileged")

	// The sidecar mounts at a directory of the volume, the one its probes
	// and preStop name, and which the agent works in.
	require.NotEmpty(t, sidecar.Args)
	mountpoint := sidecar.Args[len(sidecar.Args)-1]
	assert.Contains(t, sidecar.Args, "mount")
	assert.True(t, strings.HasPrefix(mountpoint, sidePath+"/"), "mountpoint %s is in the volume", mountpoint)
	require.NotNil(t, sidecar.ReadinessProbe)
	assert.Equal(t, []string{"vfsmount", "status", mountpoint}, sidecar.ReadinessProbe.Exec.Command)
	require.NotNil(t, sidecar.StartupProbe)
	assert.Equal(t, []string{"vfsmount", "status", mountpoint}, sidecar.StartupProbe.Exec.Command)
	require.NotNil(t, sidecar.Lifecycle.PreStop)
	assert.Equal(t, []string{"vfsmount", "umount", "--lazy", mountpoint}, sidecar.Lifecycle.PreStop.Exec.Command)
	assert.Contains(t, sidecar.Args, "--allow-other", "the agent runs as another uid")

	var mkdir bool
	for _, c := range pod.Spec.InitContainers {
		if len(c.Command) == 3 && c.Command[0] == "mkdir" && c.Command[2] == mountpoint {
			mkdir = true
		}
	}
	assert.True(t, mkdir, "an init container creates the mountpoint")

	// The store: a session resumed by its name wherever the pod runs,
	// the chunk cache in the cache volume, the credentials from the
	// Secret through the standard AWS variables. (That the stanza is a
	// valid config, the binary says in TestKubernetesStoreMove.)
	assert.True(t, strings.HasPrefix(cfg.Store.URL, "s3://"), "store.url %q", cfg.Store.URL)
	assert.NotEmpty(t, cfg.Store.Name, "the session's name")
	assert.True(t, cfg.Store.Resume, "resume: true brings the session back at every start but the first")
	sync, err := time.ParseDuration(cfg.Store.Sync)
	require.NoError(t, err, "store.sync")
	assert.GreaterOrEqual(t, sync, time.Second)
	assert.True(t, strings.HasPrefix(cfg.Store.Endpoint, "http"), "store.endpoint %q", cfg.Store.Endpoint)
	cachePath, _, ok := propagation(*sidecar, "git-cache")
	require.True(t, ok)
	assert.True(t, strings.HasPrefix(cfg.Store.Cache, cachePath+"/"), "the chunk cache %s is in the cache volume %s", cfg.Store.Cache, cachePath)
	require.NotNil(t, m.secret, "a Secret with the store's credentials")
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		var found bool
		for _, e := range sidecar.Env {
			if e.Name == v {
				found = true
				assert.Equal(t, m.secret.Metadata.Name, e.ValueFrom.SecretKeyRef.Name, "%s from the Secret", v)
				assert.Equal(t, v, e.ValueFrom.SecretKeyRef.Key)
				assert.Contains(t, m.secret.StringData, v, "the Secret has %s", v)
			}
		}
		assert.True(t, found, "the sidecar has %s", v)
	}
	for _, e := range agent.Env {
		assert.NotContains(t, e.Name, "AWS_", "the agent has no store credentials")
	}
}

// TestKubernetesStoreMove runs the sidecar's own arguments and config
// (the git source, the store's endpoint and the node's paths moved to this
// machine's) against a real S3 server: a pod on node A mounts (a first
// start: the workspace starts afresh), the agent writes, the pod is deleted
// (preStop: vfsmount umount --lazy; the rest is pushed); a pod on node B,
// with an empty cache, mounts and has the session back, by its name.
func TestKubernetesStoreMove(t *testing.T) {
	fusetest.Need(t)
	m := readSidecarManifest(t)
	var cfg struct {
		Store struct {
			URL      string `yaml:"url"`
			Endpoint string `yaml:"endpoint"`
			Name     string `yaml:"name"`
		} `yaml:"store"`
	}
	raw := m.cm.Data["vfsmount.yaml"]
	require.NoError(t, yaml.Unmarshal([]byte(raw), &cfg))
	bucket, _, _ := strings.Cut(strings.TrimPrefix(cfg.Store.URL, "s3://"), "/")
	srv := testutil.StartS3(t, bucket)
	repo, _ := testutil.GitRepo(t, map[string]string{"README.md": "hello\n", "src/main.go": "package main\n"})
	bin := buildVfsmount(t, t.TempDir(), nil)
	mnt := filepath.Join(t.TempDir(), "ws")
	require.NoError(t, os.Mkdir(mnt, 0o755))

	// node returns the sidecar's command on a node whose cache volume is
	// a directory of its own, and its config file.
	var mountpoint string
	node := func() *exec.Cmd {
		dir := t.TempDir()
		cache := filepath.Join(dir, "cache")
		cfgText := strings.NewReplacer(
			"https://github.com/vfsmount/vfsmount.git", repo,
			cfg.Store.Endpoint, srv.Endpoint,
			"/var/cache/vfsmount", cache,
		).Replace(raw)
		require.NotContains(t, cfgText, "/var/cache", "every node path was moved")
		cfgPath := filepath.Join(dir, "vfsmount.yaml")
		require.NoError(t, os.WriteFile(cfgPath, []byte(cfgText), 0o644))
		var args []string
		for _, a := range m.sidecar.Args {
			a = strings.ReplaceAll(a, "/etc/vfsmount/vfsmount.yaml", cfgPath)
			a = strings.ReplaceAll(a, "/var/cache/vfsmount", cache)
			mountpoint = a
			args = append(args, a)
		}
		args[len(args)-1] = mnt
		return exec.Command(bin, args...)
	}
	probe := func(log *testutil.Buffer, done chan error) string {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			out, err := exec.Command(bin, m.sidecar.StartupProbe.Exec.Command[1:]...).Output()
			if err == nil {
				return string(out)
			}
			select {
			case err := <-done:
				t.Fatalf("the sidecar exited (%v): %s", err, log.String())
			default:
			}
			require.True(t, time.Now().Before(deadline), "not live: %s", log.String())
			time.Sleep(50 * time.Millisecond)
		}
	}
	start := func() (*testutil.Buffer, chan error) {
		cmd := node()
		log := &testutil.Buffer{}
		cmd.Stderr = log
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = exec.Command(bin, "umount", "--lazy", mnt).Run()
		})
		return log, done
	}
	preStop := func(log *testutil.Buffer, done chan error) {
		t.Helper()
		out, err := exec.Command(bin, m.sidecar.Lifecycle.PreStop.Exec.Command[1:]...).CombinedOutput()
		require.NoError(t, err, "preStop: %s", out)
		select {
		case err := <-done:
			require.NoError(t, err, "the sidecar exits 0 after the preStop unmount: %s", log.String())
		case <-time.After(60 * time.Second):
			t.Fatalf("the sidecar did not exit after the preStop unmount: %s", log.String())
		}
	}
	// The probes and preStop name the manifest's mountpoint: run them on
	// this one.
	m.sidecar.StartupProbe.Exec.Command = []string{"vfsmount", "status", mnt}
	m.sidecar.Lifecycle.PreStop.Exec.Command = []string{"vfsmount", "umount", "--lazy", mnt}

	// Node A: the first start.
	logA, doneA := start()
	require.Equal(t, "/workspace/ws", mountpoint)
	out := probe(logA, doneA)
	assert.Contains(t, out, "store: "+cfg.Store.URL+"/"+cfg.Store.Name+"\n")
	assert.Contains(t, logA.String(), "starts afresh", "a first start with resume: true")
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "memory/notes"), []byte("the agent's notes\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(mnt, "repo/README.md"), []byte("edited on A\n"), 0o644))
	preStop(logA, doneA)

	// Node B: another pod, an empty cache; the session comes back.
	logB, doneB := start()
	out = probe(logB, doneB)
	assert.Contains(t, logB.String(), "store: resuming")
	assert.Contains(t, out, "behind: no")
	got, err := os.ReadFile(filepath.Join(mnt, "memory/notes"))
	require.NoError(t, err)
	assert.Equal(t, "the agent's notes\n", string(got))
	got, err = os.ReadFile(filepath.Join(mnt, "repo/README.md"))
	require.NoError(t, err)
	assert.Equal(t, "edited on A\n", string(got))
	got, err = os.ReadFile(filepath.Join(mnt, "repo/src/main.go"))
	require.NoError(t, err)
	assert.Equal(t, "package main\n", string(got), "the rest from the git source")
	preStop(logB, doneB)
}

// unitKeys parses a systemd unit into section -> key -> values.
func unitKeys(t *testing.T, path string) map[string]map[string][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]map[string][]string{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
			out[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			require.True(t, ok, "%s: %q is not key=value", path, line)
			require.NotEmpty(t, section, "%s: %q before any section", path, line)
			out[section][k] = append(out[section][k], v)
		}
	}
	return out
}

func TestSystemdUnit(t *testing.T) {
	const unit = "systemd/vfsmount@.service"
	u := unitKeys(t, unit)
	svc := u["Service"]
	require.NotNil(t, svc)
	assert.Equal(t, []string{"/usr/local/bin/vfsmount --log-format json mount --config /etc/vfsmount/%i.yaml ${MOUNTPOINT}"}, svc["ExecStart"])
	assert.Equal(t, []string{"SIGTERM"}, svc["KillSignal"], "SIGTERM is vfsmount's clean unmount")
	assert.Equal(t, []string{"-/usr/local/bin/vfsmount umount --lazy ${MOUNTPOINT}"}, svc["ExecStopPost"])
	assert.Contains(t, strings.Join(svc["ExecStartPost"], " "), "vfsmount status", "active means live")
	// Each of these gives the service its own mount namespace, where
	// the mount would be invisible to everyone else.
	for _, k := range []string{"PrivateTmp", "ProtectSystem", "ProtectHome", "PrivateDevices", "ReadOnlyPaths", "TemporaryFileSystem", "PrivateMounts", "MountFlags"} {
		assert.NotContains(t, svc, k)
	}
	assert.Equal(t, []string{"multi-user.target"}, u["Install"]["WantedBy"])

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed: the unit was parsed but not verified")
		return
	}
	// Verify an instance, with the binary path pointing at one that
	// exists (verify checks executables).
	dir := t.TempDir()
	data, err := os.ReadFile(unit)
	require.NoError(t, err)
	bin, err := os.Executable()
	require.NoError(t, err)
	data = bytes.ReplaceAll(data, []byte("/usr/local/bin/vfsmount"), []byte(bin))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vfsmount@.service"), data, 0o644))
	require.NoError(t, os.Symlink("vfsmount@.service", filepath.Join(dir, "vfsmount@agent.service")))
	out, err := exec.Command(analyze, "verify", "--man=no", filepath.Join(dir, "vfsmount@agent.service")).CombinedOutput()
	assert.NoError(t, err, "%s", out)
	assert.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify has no complaint")
}

// TestSystemdExampleConfig builds the workspace the example config
// describes, with its host paths moved under a temporary directory.
func TestSystemdExampleConfig(t *testing.T) {
	data, err := os.ReadFile("systemd/example.yaml")
	require.NoError(t, err)
	dir := t.TempDir()
	repo := filepath.Join(dir, "app.git")
	work := filepath.Join(dir, "work")
	testutil.Git(t, dir, "init", "-q", "--bare", "-b", "main", repo)
	testutil.GitInit(t, work)
	testutil.GitCommit(t, work, map[string]string{"main.go": "package main\n"}, "init")
	testutil.Git(t, work, "push", "-q", repo, "main")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "datasets"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "log"), 0o755))

	cfg := strings.NewReplacer(
		"/srv/git/app.git", repo,
		"/srv/datasets", filepath.Join(dir, "datasets"),
		"/var/log/vfsmount", filepath.Join(dir, "log"),
	).Replace(string(data))
	require.NotContains(t, cfg, "/srv/", "every host path was moved")
	path := filepath.Join(dir, "agent.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))

	bin := buildVfsmount(t, t.TempDir(), nil)
	cmd := exec.Command(bin, "--log-format", "json", "tools", "--config", path, "--cache-dir", filepath.Join(dir, "cache"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "the example config builds a workspace: %s", stderr.String())
	assert.Regexp(t, regexp.MustCompile(`(?m)^write$`), string(out), "the memory mount is writable")
	assert.Contains(t, stderr.String(), `"msg":"git mount pinned"`)
}

// TestDockerfile reads the Dockerfile (no engine here to build it) and
// builds the binary as its build stage does, checking that it is static.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("../Dockerfile")
	require.NoError(t, err)
	df := string(data)
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)(?:\s+AS\s+(\S+))?`).FindAllStringSubmatch(df, -1)
	require.Len(t, froms, 2, "two stages: build and runtime")
	assert.Equal(t, "build", froms[0][2])
	assert.Equal(t, "debian:bookworm-slim", froms[1][1])
	assert.Contains(t, df, "COPY --from=build /out/vfsmount /usr/local/bin/vfsmount")
	assert.Regexp(t, `apt-get install -y --no-install-recommends[^\n]*\bfuse3\b[^\n]*\bbubblewrap\b`, df)
	assert.Contains(t, df, `ENTRYPOINT ["vfsmount"]`)
	build := regexp.MustCompile(`RUN CGO_ENABLED=0 go build (-trimpath -ldflags "[^"]*")`).FindStringSubmatch(df)
	require.NotNil(t, build, "the build stage builds with CGO_ENABLED=0")

	bin := buildVfsmount(t, t.TempDir(), []string{"CGO_ENABLED=0"}, "-trimpath", "-ldflags", "-s -w -X main.version=docker-test")
	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "a static binary has no interpreter")
	}
	out, err := exec.Command(bin, "version").Output()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(out), "vfsmount docker-test\n"), "%s", out)
}
